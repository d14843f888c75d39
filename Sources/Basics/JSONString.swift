/// JSON string literals as RFC 8259 asks: quotes, backslash escapes, and `\u00XX` for the
/// other control characters; everything else as it is (UTF-8 passes through).
///
/// One writer for every JSON the project produces: gpsd's TPV reports, the recorded
/// documents, the sinks' JSON and the control API's payloads.
public enum JSONString {
    /// Appends `text` as a JSON string literal to `out`.
    public static func append(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }

    /// `text` as a JSON string literal.
    public static func literal(_ text: String) -> String {
        var out = ""
        append(text, to: &out)
        return out
    }
}
