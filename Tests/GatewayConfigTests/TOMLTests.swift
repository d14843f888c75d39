import Testing
@testable import GatewayConfig

@Suite struct TOMLTests {
    @Test func parsesTheSubsetWithPositions() throws {
        let text = """
            # comment
            title = "mw\\tgate \\u00e9" # trailing
            literal = 'C:\\path'
            count = 1_000
            negative = -7
            ratio = 12.5
            exp = 1e3
            on = true
            list = [1, 2,
              3, # comment in array
            ]
            inline = { a = 1, b = "x" }

            [server]
            "quoted key" = 1
            a.b = 2

            [[item]]
            name = "one"
            [[item]]
            name = "two"
            """
        let root = try TOMLParser.parse(text)
        #expect(root["title"]?.value == .string("mw\tgate é"))
        #expect(root["title"]?.keyPosition == TOMLPosition(line: 2, column: 1))
        #expect(root["title"]?.position == TOMLPosition(line: 2, column: 9))
        #expect(root["literal"]?.value == .string("C:\\path"))
        #expect(root["count"]?.value == .integer(1000))
        #expect(root["negative"]?.value == .integer(-7))
        #expect(root["ratio"]?.value == .float(12.5))
        #expect(root["exp"]?.value == .float(1000))
        #expect(root["on"]?.value == .boolean(true))
        guard case .array(let list)? = root["list"]?.value else { Issue.record("list"); return }
        #expect(list.map(\.value) == [.integer(1), .integer(2), .integer(3)])
        #expect(list[2].position.line == 10)
        guard case .table(let inline)? = root["inline"]?.value else { Issue.record("inline"); return }
        #expect(inline["b"]?.value == .string("x"))
        guard case .table(let server)? = root["server"]?.value else { Issue.record("server"); return }
        #expect(server.keyPosition("quoted key") == 15)
        guard case .table(let a)? = server["a"]?.value else { Issue.record("a"); return }
        #expect(a["b"]?.value == .integer(2))
        guard case .array(let items)? = root["item"]?.value else { Issue.record("item"); return }
        #expect(items.count == 2)
        guard case .table(let second)? = items.last?.value else { Issue.record("second"); return }
        #expect(second["name"]?.value == .string("two"))
        #expect(second["name"]?.keyPosition.line == 21)
    }

    @Test(arguments: [
        ("a = 1\na = 2", 2, "duplicate key 'a' (first defined on line 1)"),
        ("[t]\n[t]", 2, "table [t] is already defined on line 1"),
        ("a = \"open", 1, "unterminated string"),
        ("a = bare", 1, "expected a value, found 'bare'"),
        ("a = 1 2", 1, "expected the end of the line"),
        ("a = 007", 1, "leading zeros"),
        ("a = 1979-05-27", 1, "dates and times are not supported"),
        ("a = \"\"\"x\"\"\"", 1, "multi-line strings"),
        ("a = [1, 2", 1, "unterminated array"),
        ("a = 99999999999999999999", 1, "does not fit in 64 bits"),
        ("a = \"\\q\"", 1, "unknown escape"),
        ("= 1", 1, "expected a key"),
        ("a", 1, "expected '=' after key 'a'"),
        ("a = 1_", 1, "'_' in a number"),
        ("x = 1\n[x]", 2, "already defined by a key on line 1"),
    ] as [(String, Int, String)])
    func rejectsWithLineAndMessage(text: String, line: Int, message: String) {
        do {
            _ = try TOMLParser.parse(text)
            Issue.record("accepted: \(text)")
        } catch {
            #expect(error.errors.first?.position.line == line)
            #expect(error.errors.first?.message.contains(message) == true, "\(error)")
        }
    }

    @Test func reportsEveryBrokenLine() {
        do {
            _ = try TOMLParser.parse("a = \nb = 1\nc = oops\nd = 2\ne = [\n")
            Issue.record("accepted")
        } catch {
            #expect(error.errors.map(\.position.line) == [1, 3, 5])
        }
    }
}

extension TOMLTable {
    func keyPosition(_ key: String) -> Int? { self[key]?.keyPosition.line }
}
