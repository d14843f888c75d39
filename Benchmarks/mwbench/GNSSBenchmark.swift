enum GNSSBenchmark {
    static func run(_ arguments: [String]) {
        print("GNSS: no benchmark yet")
    }
}
