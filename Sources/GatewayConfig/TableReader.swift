import Basics
import Foundation

/// Reads one TOML table into typed values, recording issues instead of stopping, and
/// reporting every key that was never asked for as unknown (with a did-you-mean).
struct TableReader {
    let file: String
    let prefix: String
    let table: TOMLTable
    /// Line of the table's header (for "missing key" issues); 0 when implicit.
    let line: Int
    private(set) var issues: [ConfigurationIssue] = []
    private var allowed: [String] = []

    init(file: String, prefix: String, table: TOMLTable, line: Int) {
        self.file = file
        self.prefix = prefix
        self.table = table
        self.line = line
    }

    func path(_ key: String) -> String { prefix.isEmpty ? key : "\(prefix).\(key)" }

    mutating func issue(_ key: String, line: Int? = nil, _ message: String) {
        issues.append(ConfigurationIssue(file: file, line: line ?? table[key]?.keyPosition.line ?? self.line, key: path(key), message: message))
    }

    /// Declares `key` allowed and returns its node.
    mutating func node(_ key: String) -> TOMLNode? {
        allowed.append(key)
        return table[key]
    }

    private mutating func typeMismatch(_ key: String, _ node: TOMLNode, expected: String) {
        issue(key, "expected \(expected), got \(node.value.typeName)")
    }

    mutating func string(_ key: String) -> String? {
        guard let node = node(key) else { return nil }
        guard case .string(let text) = node.value else {
            typeMismatch(key, node, expected: "a string")
            return nil
        }
        return text
    }

    mutating func integer(_ key: String) -> Int64? {
        guard let node = node(key) else { return nil }
        guard case .integer(let value) = node.value else {
            typeMismatch(key, node, expected: "an integer")
            return nil
        }
        return value
    }

    /// An integer or a float (rates such as 12.5 Hz).
    mutating func number(_ key: String) -> Double? {
        guard let node = node(key) else { return nil }
        switch node.value {
        case .integer(let value): return Double(value)
        case .float(let value): return value
        default:
            typeMismatch(key, node, expected: "a number")
            return nil
        }
    }

    mutating func boolean(_ key: String) -> Bool? {
        guard let node = node(key) else { return nil }
        guard case .boolean(let value) = node.value else {
            typeMismatch(key, node, expected: "true or false")
            return nil
        }
        return value
    }

    mutating func strings(_ key: String) -> [String]? {
        guard let node = node(key) else { return nil }
        guard case .array(let items) = node.value else {
            typeMismatch(key, node, expected: "an array of strings")
            return nil
        }
        var out: [String] = []
        for item in items {
            guard case .string(let text) = item.value else {
                issue(key, line: item.position.line, "expected an array of strings, found \(item.value.typeName) in it")
                return nil
            }
            out.append(text)
        }
        return out
    }

    /// A byte size: an integer number of bytes, or a string such as "512 MiB", "2 GB".
    mutating func byteSize(_ key: String) -> Int64? {
        guard let node = node(key) else { return nil }
        switch node.value {
        case .integer(let value): return value
        case .string(let text):
            if let value = ByteSize.parse(text) { return value }
            issue(key, "'\(text)' is not a size; write bytes (1073741824) or a number with a unit (\"1 GiB\", \"500 MB\")")
            return nil
        default:
            typeMismatch(key, node, expected: "a size (bytes, or a string like \"1 GiB\")")
            return nil
        }
    }

    /// A sub-table, or nil (an issue when the key holds something else).
    mutating func table(_ key: String) -> (TOMLTable, Int)? {
        guard let node = node(key) else { return nil }
        guard case .table(let inner) = node.value else {
            typeMismatch(key, node, expected: "a table ([\(path(key))])")
            return nil
        }
        return (inner, node.keyPosition.line)
    }

    /// Reports keys nobody asked for.
    mutating func finish() -> [ConfigurationIssue] {
        for (key, node) in table.entries where !allowed.contains(key) {
            let hint = Suggestion.closest(to: key, in: allowed).map { "; did you mean '\($0)'?" } ?? ""
            let known = allowed.isEmpty ? "" : " (known keys: \(allowed.joined(separator: ", ")))"
            issues.append(ConfigurationIssue(
                file: file, line: node.keyPosition.line, key: path(key),
                message: "unknown key\(hint.isEmpty ? known : hint)"))
        }
        return issues
    }
}
