import Foundation
import Testing
@testable import GatewayConfig

/// `mwgated.toml`, read by GatewayConfig's own TOML reader and validator.
@Suite("Fuzz: configuration file", .timeLimit(.minutes(20)))
struct ConfigFuzzTests {
    static let file = "/etc/mwgate/mwgated.toml"
    static let paths = ServicePaths(stateDirectory: "/var/lib/mwgate", runtimeDirectory: "/run/mwgate", configurationDirectory: "/etc/mwgate")
    static let packaged: String = {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("packaging/mwgated.toml").path
        return (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
    }()

    /// Parses `text`; nil when accepted, the issues when refused.
    static func issues(_ text: String) -> [ConfigurationIssue]? {
        do {
            _ = try ConfigurationLoader.parse(text, file: file, paths: paths, fileExists: { _ in false })
            return nil
        } catch {
            return error.issues
        }
    }

    /// Keys with values that are wrong in type or range: each must be refused under its name.
    static let wrongValues: [(table: String, key: String, values: [String])] = [
        ("boards", "gyro_rate", ["120", "0", "-5", "1e9", "\"fast\"", "true", "[]", "25.5"]),
        ("boards", "gyro_range", ["3000", "\"2000\"", "-2000", "{}"]),
        ("boards", "accelerometer", ["5", "\"yes\"", "[true]"]),
        ("boards", "accelerometer_rate", ["7", "\"x\"", "-100"]),
        ("boards", "accelerometer_range", ["3", "32", "\"g16\""]),
        ("boards", "sample_mode", ["\"double\"", "3", "\"\""]),
        ("boards", "addresses", ["[\"zz\"]", "5", "[\"AA:BB\"]", "[\"AA:BB:CC:DD:EE:GG\"]", "[1]"]),
        ("boards", "allow", ["[\"not an address\"]", "\"AA:BB:CC:DD:EE:FF\""]),
        ("gnss", "source", ["\"bogus:x\"", "5", "\"serial:\"", "\"tcp:host\"", "\"gpsd:host:99999\"", "[]"]),
        ("gnss", "accept_dead_reckoning", ["\"yes\"", "1"]),
        ("session", "mode", ["\"sometimes\"", "1", "\"\""]),
        ("session", "button_toggles", ["\"maybe\"", "2"]),
        ("hazards", "names", ["[1, 2]", "\"pothole\"", "[\"\"]"]),
        ("hazards", "intensity_scale", ["0", "-1", "\"five\"", "1.5"]),
        ("buffer", "budget", ["\"1 GiBB\"", "\"lots\"", "true", "\"-1 GiB\""]),
        ("buffer", "free_space_floor", ["\"x\"", "[]"]),
        ("buffer", "retention_days", ["-3", "\"month\"", "3651", "1e6"]),
        ("log", "level", ["\"loud\"", "3"]),
        ("sink", "type", ["\"ftp\"", "1"]),
        ("sink", "max_requests_per_second", ["-1", "\"x\"", "0"]),
        ("sink", "max_documents_per_request", ["0", "-4", "\"many\""]),
    ]

    static let tables = ["boards", "gnss", "session", "hazards", "buffer", "log", "sink"]
    static let tomlAlphabet = Array("[]{}=\"'#.,_- \n\tabcdefgsrt0123456789\\ué")

    /// Every issue is located (line within the file, or 0 for file-level) and says something.
    static func checkLocated(_ issues: [ConfigurationIssue], lines: Int, _ c: inout FuzzCase) {
        c.expect(!issues.isEmpty, "refused with no issue")
        for issue in issues {
            c.expect(issue.line >= 0 && issue.line <= lines + 1, "issue on line \(issue.line) of a \(lines)-line file: \(issue)")
            c.expect(!issue.message.isEmpty && issue.description.hasPrefix(file), "issue without a message or file: '\(issue)'")
        }
    }

    @Test("random text, TOML-alphabet text and mutated packaged files are refused with located issues")
    func unstructured() async throws {
        try #require(!Self.packaged.isEmpty, "packaging/mwgated.toml not found")
        let tally = await Fuzz.run("config", count: Fuzz.count(6_000)) { c in
            var text: String
            switch c.int(0...2) {
            case 0:
                c.kind = "random bytes"
                text = String(decoding: c.bytes(c.int(0...300)), as: UTF8.self)
            case 1:
                c.kind = "TOML alphabet"
                text = c.text(c.int(0...300), from: Self.tomlAlphabet)
            default:
                c.kind = "mutated packaged file"
                var lines = Self.packaged.components(separatedBy: "\n")
                for _ in 0..<c.int(1...4) {
                    let at = c.int(0...lines.count - 1)
                    switch c.int(0...5) {
                    case 0: lines.remove(at: at)
                    case 1: lines.insert(lines[c.int(0...lines.count - 1)], at: at)
                    case 2 where !lines[at].isEmpty:
                        var chars = Array(lines[at])
                        chars.remove(at: c.int(0...chars.count - 1))
                        lines[at] = String(chars)
                    case 3:
                        var chars = Array(lines[at])
                        chars.insert(c.pick(Array("[]{}=\"'#.,\\ \t\u{0}")), at: c.int(0...chars.count))
                        lines[at] = String(chars)
                    case 4: lines[at] = lines[at].replacingOccurrences(of: "# ", with: "")  // uncomment
                    default: lines.swapAt(at, c.int(0...lines.count - 1))
                    }
                }
                text = lines.joined(separator: "\n")
            }
            let lineCount = text.split(separator: "\n", omittingEmptySubsequences: false).count
            if let issues = Self.issues(text) { Self.checkLocated(issues, lines: lineCount, &c) }
        }
        #expect(tally.failures == 0)
    }

    @Test("a wrong value or an unknown key is refused with an issue naming the dotted key and its line")
    func structured() async {
        let tally = await Fuzz.run("config keys", count: Fuzz.count(4_000)) { c in
            let table: String
            let assignment: String
            let key: String
            if c.chance(70) {
                c.kind = "wrong value"
                let entry = c.pick(Self.wrongValues)
                table = entry.table
                key = entry.key
                assignment = "\(key) = \(c.pick(entry.values))"
            } else {
                c.kind = "unknown key"
                table = c.pick(Self.tables)
                key = c.text(c.int(3...12), from: Array("abcdefghijklmnopqrstuvwxyz_")) + "_x"
                assignment = "\(key) = \(c.pick(["1", "\"a\"", "true", "[]", "{}"]))"
            }
            // Noise around it: blank lines, comments and one other valid table.
            var lines: [String] = []
            for _ in 0..<c.int(0...4) { lines.append(c.pick(["", "# comment", "   ", "\t# x = 1"])) }
            if c.bool() {
                lines.append(table == "log" ? "[session]\nmode = \"manual\"" : "[log]\nlevel = \"debug\"")
            }
            lines.append("[\(table)]")
            for _ in 0..<c.int(0...2) { lines.append(c.pick(["", "# comment"])) }
            lines.append(assignment)
            let text = lines.joined(separator: "\n")
            let all = text.components(separatedBy: "\n")
            let line = (all.lastIndex { $0.hasPrefix("\(key) =") } ?? -1) + 1
            guard let issues = Self.issues(text) else {
                c.expect(false, "accepted \(table).\(all.last ?? "")")
                return
            }
            c.expect(issues.contains { $0.key == "\(table).\(key)" && $0.line == line },
                     "no issue names \(table).\(key) on line \(line): \(issues.map(\.description))")
        }
        #expect(tally.failures == 0)
    }
}
