/// One journal entry in journald's native datagram format (systemd's
/// JOURNAL_NATIVE_PROTOCOL): `KEY=value\n` for values without a newline, and
/// `KEY\n` + 64-bit little-endian length + raw value + `\n` for values that contain one.
/// Pure: values in, bytes out.
public struct JournalEntry: Sendable, Equatable {
    /// Fields in the order they are sent. Names must already be valid (see `JournalFieldName`).
    public var fields: [(name: String, value: [UInt8])]

    /// An entry with the given fields.
    public init(fields: [(name: String, value: [UInt8])] = []) { self.fields = fields }

    /// Appends a text field.
    public mutating func append(_ name: String, _ value: String) { fields.append((name, Array(value.utf8))) }

    /// The datagram payload.
    public var encoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(fields.reduce(0) { $0 + $1.name.utf8.count + $1.value.count + 10 })
        for (name, value) in fields {
            out.append(contentsOf: name.utf8)
            if value.contains(UInt8(ascii: "\n")) {
                out.append(UInt8(ascii: "\n"))
                var length = UInt64(value.count).littleEndian
                withUnsafeBytes(of: &length) { out.append(contentsOf: $0) }
                out.append(contentsOf: value)
            } else {
                out.append(UInt8(ascii: "="))
                out.append(contentsOf: value)
            }
            out.append(UInt8(ascii: "\n"))
        }
        return out
    }

    /// Parses a native-protocol payload (both forms); nil when it is malformed. Used by tests
    /// and tools that stand in for journald.
    public init?(decoding bytes: [UInt8]) {
        var fields: [(name: String, value: [UInt8])] = []
        var index = 0
        while index < bytes.count {
            guard let end = bytes[index...].firstIndex(where: { $0 == UInt8(ascii: "=") || $0 == UInt8(ascii: "\n") })
            else { return nil }
            let name = String(decoding: bytes[index..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                let valueEnd = bytes[(end + 1)...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
                fields.append((name, Array(bytes[(end + 1)..<valueEnd])))
                index = valueEnd + 1
            } else {
                let lengthStart = end + 1
                guard lengthStart + 8 <= bytes.count else { return nil }
                var length: UInt64 = 0
                for offset in 0..<8 { length |= UInt64(bytes[lengthStart + offset]) << (8 * UInt64(offset)) }
                let valueStart = lengthStart + 8
                guard length <= UInt64(bytes.count - valueStart), valueStart + Int(length) < bytes.count,
                    bytes[valueStart + Int(length)] == UInt8(ascii: "\n")
                else { return nil }
                fields.append((name, Array(bytes[valueStart..<(valueStart + Int(length))])))
                index = valueStart + Int(length) + 1
            }
        }
        self.fields = fields
    }

    /// The first value of a field as text.
    public subscript(name: String) -> String? {
        fields.first { $0.name == name }.map { String(decoding: $0.value, as: UTF8.self) }
    }

    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}

/// journald's field-name rules: `[A-Z0-9_]`, 1 to 64 characters, no leading `_` (reserved
/// for trusted fields journald adds) and no leading digit. journald silently drops entries'
/// invalid fields, so swift-log metadata keys are mapped, never passed through.
public enum JournalFieldName {
    /// Longest name journald accepts.
    public static let maximumLength = 64

    /// Whether journald would accept `name` as is.
    public static func isValid(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...maximumLength).contains(bytes.count), let first = bytes.first else { return false }
        guard first != UInt8(ascii: "_"), !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { return false }
        return bytes.allSatisfy { isAllowed($0) }
    }

    /// Maps a metadata key to a valid field name: `gpsMode` and `gps.mode` become `GPS_MODE`,
    /// leading underscores are dropped, a leading digit gets an `X_` prefix, and the result is
    /// cut to 64 characters. Returns nil only for keys with nothing usable in them.
    public static func sanitize(_ key: String) -> String? {
        var out: [UInt8] = []
        var previous: UInt8 = 0
        for byte in key.utf8 {
            let isLower = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            let isUpper = (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            let previousIsLowerOrDigit = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(previous)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(previous)
            if isUpper && previousIsLowerOrDigit { out.append(UInt8(ascii: "_")) }
            let mapped = isLower ? byte - 32 : byte
            if isAllowed(mapped) {
                out.append(mapped)
            } else if out.last != UInt8(ascii: "_") {
                out.append(UInt8(ascii: "_"))
            }
            previous = byte
        }
        while out.first == UInt8(ascii: "_") { out.removeFirst() }
        while out.last == UInt8(ascii: "_") { out.removeLast() }
        guard let first = out.first else { return nil }
        if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) { out.insert(contentsOf: Array("X_".utf8), at: 0) }
        return String(decoding: out.prefix(maximumLength), as: UTF8.self)
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || byte == UInt8(ascii: "_")
    }
}
