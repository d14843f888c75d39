/// One problem in a configuration file, named by file, line and dotted key:
/// `/etc/mwgate/mwgated.toml:12: boards.gyro_rate: 120 Hz is not a gyro rate; use one of …`.
public struct ConfigurationIssue: Sendable, Hashable, CustomStringConvertible {
    /// The file (or `<defaults>` / `<environment>`).
    public let file: String
    /// 1-based line; 0 when the problem has no line (a missing required key names its table's line).
    public let line: Int
    /// The dotted key, e.g. `boards.gyro_rate`; empty for file-level problems.
    public let key: String
    /// What is wrong and what would be right.
    public let message: String

    public init(file: String, line: Int, key: String, message: String) {
        self.file = file
        self.line = line
        self.key = key
        self.message = message
    }

    public var description: String {
        let location = line > 0 ? "\(file):\(line)" : file
        return key.isEmpty ? "\(location): \(message)" : "\(location): \(key): \(message)"
    }
}

/// Every problem found in a configuration (not just the first), sorted by line.
public struct ConfigurationErrors: Error, Sendable, Equatable, CustomStringConvertible {
    /// The problems, in file order.
    public let issues: [ConfigurationIssue]

    public init(_ issues: [ConfigurationIssue]) {
        self.issues = issues.sorted { ($0.line, $0.key) < ($1.line, $1.key) }
    }

    public var description: String { issues.map(\.description).joined(separator: "\n") }
}

/// "Did you mean" for unknown keys: the closest allowed key within a small edit distance.
enum Suggestion {
    static func closest(to word: String, in candidates: [String]) -> String? {
        let scored = candidates.map { ($0, distance(word.lowercased(), $0.lowercased())) }
        guard let best = scored.min(by: { $0.1 < $1.1 }) else { return nil }
        let limit = max(2, word.count / 3)
        // Also catch a known key embedded in a longer one ("gyro_rate_hz").
        if best.1 <= limit { return best.0 }
        return candidates.first { word.lowercased().contains($0.lowercased()) && $0.count >= 4 }
    }

    static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a), b = Array(b)
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        var current = [Int](repeating: 0, count: b.count + 1)
        for i in 1...a.count {
            current[0] = i
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            swap(&previous, &current)
        }
        return previous[b.count]
    }
}
