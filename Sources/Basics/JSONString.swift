/// JSON string literals as RFC 8259 asks: quotes, backslash escapes, and `\u00XX` for the
/// other control characters; everything else as it is (UTF-8 passes through).
///
/// The one JSON string escaper of the project: gpsd's TPV reports, the recorded documents,
/// the sinks' JSON bytes, the buffer's small JSON columns, the upload tokens and the control
/// API's payloads.
public enum JSONString {
    /// Appends `text` as a JSON string literal to the UTF-8 bytes in `out`: the sinks' hot path,
    /// which copies text without anything to escape in one go.
    public static func append(_ text: String, to out: inout [UInt8]) {
        out.append(0x22)
        var copy = text
        copy.withUTF8 { utf8 in
            guard utf8.contains(where: needsEscape) else {
                out.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
                switch byte {
                case 0x22: out.append(contentsOf: [0x5C, 0x22])  // \"
                case 0x5C: out.append(contentsOf: [0x5C, 0x5C])  // \\
                case 0x0A: out.append(contentsOf: [0x5C, 0x6E])  // \n
                case 0x0D: out.append(contentsOf: [0x5C, 0x72])  // \r
                case 0x09: out.append(contentsOf: [0x5C, 0x74])  // \t
                case 0..<0x20: out.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]])
                default: out.append(byte)
                }
            }
        }
        out.append(0x22)
    }

    /// Appends `text` as a JSON string literal to `out`.
    public static func append(_ text: String, to out: inout String) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 2)
        append(text, to: &bytes)
        out += String(decoding: bytes, as: UTF8.self)
    }

    /// `text` as a JSON string literal.
    public static func literal(_ text: String) -> String {
        var out = ""
        append(text, to: &out)
        return out
    }

    /// Quotes, backslashes and control characters; every byte of a multi-byte UTF-8
    /// sequence is 0x80 or above, so the test is exact on bytes.
    @inline(__always) private static func needsEscape(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x22 || byte == 0x5C }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}
