enum MetaWearBenchmark {
    static func run(_ arguments: [String]) {
        print("MetaWear: no benchmark yet")
    }
}
