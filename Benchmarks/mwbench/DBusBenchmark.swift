enum DBusBenchmark {
    static func run(_ arguments: [String]) async {
        print("DBus: no benchmark yet")
    }
}
