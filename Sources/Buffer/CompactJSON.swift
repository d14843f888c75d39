import Basics

/// The two small JSON shapes the buffer keeps in text columns: hazard counts (`{"name":1}`)
/// and board lists (`["E8:…"]`, as SQLite's `json_group_array` writes them).
///
/// Written by hand rather than with Foundation's `JSONSerialization`: on Linux that goes
/// through `NSDictionary`, `NSNumber` and CoreFoundation, code the daemon otherwise never runs,
/// and the history index calls it whenever a session starts or ends. Every page of it the
/// daemon touches once stays resident for the life of the process.
enum CompactJSON {
    /// `{"a":1,"b":2}`: keys in code-point order, no spaces, strings escaped as RFC 8259 asks
    /// (``JSONString``; rows written before it spell `/` as `\/`, which reads the same).
    static func encode(_ counts: [String: Int]) -> String {
        var out = "{"
        for (index, key) in counts.keys.sorted().enumerated() {
            if index > 0 { out += "," }
            JSONString.append(key, to: &out)
            out += ":"
            out += String(counts[key] ?? 0)
        }
        return out + "}"
    }

    /// A JSON object whose values are all integers; nil for anything else.
    static func decodeCounts(_ text: String) -> [String: Int]? {
        var parser = Parser(Array(text.utf8))
        guard let counts = parser.counts(), parser.atEnd() else { return nil }
        return counts
    }

    /// A JSON array of strings; nil for anything else.
    static func decodeStrings(_ text: String) -> [String]? {
        var parser = Parser(Array(text.utf8))
        guard let strings = parser.strings(), parser.atEnd() else { return nil }
        return strings
    }

    /// Recursive descent over UTF-8 bytes for exactly the two shapes above.
    private struct Parser {
        let bytes: [UInt8]
        var at = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        mutating func skipSpace() {
            while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) { at += 1 }
        }

        mutating func atEnd() -> Bool {
            skipSpace()
            return at == bytes.count
        }

        mutating func take(_ byte: UInt8) -> Bool {
            skipSpace()
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
            return true
        }

        mutating func counts() -> [String: Int]? {
            guard take(UInt8(ascii: "{")) else { return nil }
            var result: [String: Int] = [:]
            if take(UInt8(ascii: "}")) { return result }
            repeat {
                guard let key = string(), take(UInt8(ascii: ":")), let value = integer() else { return nil }
                result[key] = value
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "}")) ? result : nil
        }

        mutating func strings() -> [String]? {
            guard take(UInt8(ascii: "[")) else { return nil }
            var result: [String] = []
            if take(UInt8(ascii: "]")) { return result }
            repeat {
                guard let item = string() else { return nil }
                result.append(item)
            } while take(UInt8(ascii: ","))
            return take(UInt8(ascii: "]")) ? result : nil
        }

        mutating func integer() -> Int? {
            skipSpace()
            let start = at
            if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
            let digits = at
            while at < bytes.count, bytes[at] >= 0x30, bytes[at] <= 0x39 { at += 1 }
            guard at > digits else { return nil }
            // A fraction or exponent is not an integer count.
            if at < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[at]) { return nil }
            return Int(String(decoding: bytes[start..<at], as: UTF8.self))
        }

        mutating func string() -> String? {
            guard take(UInt8(ascii: "\"")) else { return nil }
            var scalars = String.UnicodeScalarView()
            var run = at  // start of the current run of unescaped bytes
            func flush(_ end: Int) { scalars.append(contentsOf: String(decoding: bytes[run..<end], as: UTF8.self).unicodeScalars) }
            while at < bytes.count {
                let byte = bytes[at]
                if byte == UInt8(ascii: "\"") {
                    flush(at)
                    at += 1
                    return String(scalars)
                }
                guard byte >= 0x20 else { return nil }
                guard byte == UInt8(ascii: "\\") else { at += 1; continue }
                flush(at)
                at += 1
                guard at < bytes.count else { return nil }
                let escape = bytes[at]
                at += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalars.append(Unicode.Scalar(escape))
                case UInt8(ascii: "b"): scalars.append("\u{08}")
                case UInt8(ascii: "f"): scalars.append("\u{0C}")
                case UInt8(ascii: "n"): scalars.append("\n")
                case UInt8(ascii: "r"): scalars.append("\r")
                case UInt8(ascii: "t"): scalars.append("\t")
                case UInt8(ascii: "u"):
                    guard var unit = hex4() else { return nil }
                    if (0xD800..<0xDC00).contains(unit) {
                        // A high surrogate must be followed by an escaped low one.
                        guard at + 1 < bytes.count, bytes[at] == UInt8(ascii: "\\"), bytes[at + 1] == UInt8(ascii: "u") else { return nil }
                        at += 2
                        guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                        unit = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                    }
                    guard let scalar = Unicode.Scalar(unit) else { return nil }
                    scalars.append(scalar)
                default: return nil
                }
                run = at
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard at + 4 <= bytes.count, let value = UInt32(String(decoding: bytes[at..<at + 4], as: UTF8.self), radix: 16) else { return nil }
            at += 4
            return value
        }
    }
}
