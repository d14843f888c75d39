import Recording

/// Appends JSON to a byte array: the hot path of every upload (a 2,000-point chunk is about
/// 700 kB of typed JSON), so no intermediate Strings except the short ones Double and Int64
/// descriptions fit in without allocating.
struct JSONBytes {
    var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    @inline(__always) mutating func raw(_ s: StaticString) {
        s.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    @inline(__always) mutating func number(_ i: Int64) {
        var s = String(i)
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// Shortest round-trip form (Swift's `description`), finite values only.
    @inline(__always) mutating func number(_ d: Double) {
        var s = d.description
        s.withUTF8 { bytes.append(contentsOf: $0) }
    }

    /// A JSON string literal with the escapes JSON requires.
    mutating func string(_ s: String) {
        bytes.append(0x22)
        var copy = s
        copy.withUTF8 { utf8 in
            var clean = true
            for b in utf8 where b < 0x20 || b == 0x22 || b == 0x5C {
                clean = false
                break
            }
            if clean {
                bytes.append(contentsOf: utf8)
                return
            }
            for b in utf8 {
                switch b {
                case 0x22: raw("\\\"")
                case 0x5C: raw("\\\\")
                case 0x0A: raw("\\n")
                case 0x0D: raw("\\r")
                case 0x09: raw("\\t")
                case 0..<0x20:
                    raw("\\u00")
                    let hex: [UInt8] = Array("0123456789abcdef".utf8)
                    bytes.append(hex[Int(b >> 4)])
                    bytes.append(hex[Int(b & 0xF)])
                default: bytes.append(b)
                }
            }
        }
        bytes.append(0x22)
    }

    /// Firestore's typed encoding of `value`.
    mutating func typed(_ value: FirestoreValue) {
        switch value {
        case .null: raw(#"{"nullValue":null}"#)
        case let .bool(b): b ? raw(#"{"booleanValue":true}"#) : raw(#"{"booleanValue":false}"#)
        case let .integer(i):
            raw(#"{"integerValue":""#)
            number(i)
            raw(#""}"#)
        case let .double(d):
            raw(#"{"doubleValue":"#)
            if d.isNaN { raw(#""NaN""#) } else if d == .infinity { raw(#""Infinity""#) } else if d == -.infinity {
                raw(#""-Infinity""#)
            } else { number(d) }
            raw("}")
        case let .string(s):
            raw(#"{"stringValue":"#)
            string(s)
            raw("}")
        case let .array(a):
            raw(#"{"arrayValue":{"values":["#)
            for (i, v) in a.enumerated() {
                if i > 0 { raw(",") }
                typed(v)
            }
            raw("]}}")
        case let .map(m):
            raw(#"{"mapValue":{"fields":"#)
            typedFields(m)
            raw("}}")
        }
    }

    /// `{"name": typed value, ...}`.
    mutating func typedFields(_ fields: [(String, FirestoreValue)]) {
        raw("{")
        for (i, (k, v)) in fields.enumerated() {
            if i > 0 { raw(",") }
            string(k)
            raw(":")
            typed(v)
        }
        raw("}")
    }

    /// Plain JSON, byte for byte what `FirestoreValue.jsonText` produces (integral doubles
    /// keep a ".0", non-finite doubles become null).
    mutating func plain(_ value: FirestoreValue) {
        switch value {
        case .null: raw("null")
        case let .bool(b): b ? raw("true") : raw("false")
        case let .integer(i): number(i)
        case let .double(d):
            if !d.isFinite {
                raw("null")
            } else if d == d.rounded(), abs(d) < 1e15 {
                number(Int64(d))
                raw(".0")
            } else {
                number(d)
            }
        case let .string(s): string(s)
        case let .array(a):
            raw("[")
            for (i, v) in a.enumerated() {
                if i > 0 { raw(",") }
                plain(v)
            }
            raw("]")
        case let .map(m):
            raw("{")
            for (i, (k, v)) in m.enumerated() {
                if i > 0 { raw(",") }
                string(k)
                raw(":")
                plain(v)
            }
            raw("}")
        }
    }
}

extension SinkDocument {
    /// Plain JSON of the fields as bytes (what the directory and PostgreSQL sinks store).
    public var jsonBytes: [UInt8] {
        var out = JSONBytes(capacity: 64 * 1024)
        out.plain(.map(fields))
        return out.bytes
    }
}

extension FirestoreValue {
    /// Plain JSON text via the byte writer (equal to `jsonText`, faster).
    var fastJSONText: String {
        var out = JSONBytes(capacity: 1024)
        out.plain(self)
        return String(decoding: out.bytes, as: UTF8.self)
    }
}
