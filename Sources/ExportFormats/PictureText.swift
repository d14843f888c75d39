import Basics
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Text as the pictures write it: XML-escaped strings, coordinates with one decimal (a tenth
/// of a pixel is finer than any screen shows and keeps a long session's file small), and the
/// readable numbers, durations and times of the page.
public enum PictureText {
    /// `text` safe inside XML/HTML element content and attribute values.
    public static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default:
                // Control characters other than tab and newline are not allowed in XML 1.0.
                if c.value < 0x20, c != "\t", c != "\n" { out += "\u{FFFD}" } else { out.unicodeScalars.append(c) }
            }
        }
        return out
    }

    /// A pixel coordinate with at most one decimal ("12", "12.5").
    public static func coordinate(_ v: Double) -> String {
        let tenths = (v * 10).rounded()
        guard tenths.isFinite, abs(tenths) < 1e15 else { return "0" }
        let whole = Int64(tenths)
        let sign = whole < 0 ? "-" : ""
        let units = abs(whole) / 10, fraction = abs(whole) % 10
        return fraction == 0 ? sign + String(units) : sign + String(units) + "." + String(fraction)
    }

    /// A number with a fixed count of decimals, thousands grouped with a thin space.
    public static func number(_ v: Double, decimals: Int = 0) -> String {
        let text = FixedDecimal.string(v, places: decimals)
        let parts = text.split(separator: ".", maxSplits: 1)
        var digits = String(parts[0])
        let negative = digits.hasPrefix("-")
        if negative { digits.removeFirst() }
        var grouped = ""
        for (i, c) in digits.enumerated() {
            if i > 0, (digits.count - i) % 3 == 0 { grouped += "\u{2009}" }
            grouped.append(c)
        }
        return (negative ? "-" : "") + grouped + (parts.count > 1 ? "." + parts[1] : "")
    }

    /// Elapsed time as `m:ss` or `h:mm:ss`.
    public static func clock(seconds: Double) -> String {
        let total = Int(max(0, seconds).rounded())
        let h = total / 3600, m = total / 60 % 60, s = total % 60
        let ss = s < 10 ? "0\(s)" : "\(s)"
        if h > 0 { return "\(h):" + (m < 10 ? "0\(m)" : "\(m)") + ":" + ss }
        return "\(m):" + ss
    }

    /// A duration for a reader: "42 s", "12 min 5 s", "2 h 3 min".
    public static func duration(milliseconds: Double) -> String {
        let seconds = max(0, milliseconds) / 1000
        if seconds < 10 { return number(seconds, decimals: 1) + " s" }
        let total = Int(seconds.rounded())
        if total < 60 { return "\(total) s" }
        if total < 3600 { return "\(total / 60) min \(total % 60) s" }
        return "\(total / 3600) h \(total / 60 % 60) min"
    }

    /// UTC time of day of an epoch millisecond, `HH:MM:SS`.
    public static func timeOfDay(_ ms: Double) -> String {
        let iso = iso8601(ms)
        guard let t = iso.firstIndex(of: "T") else { return iso }
        return String(iso[iso.index(after: t)...].prefix(8))
    }

    /// UTC date and time of an epoch millisecond, `YYYY-MM-DD HH:MM:SS UTC`.
    public static func dateTime(_ ms: Double) -> String {
        let iso = iso8601(ms)
        return String(iso.prefix(10)) + " " + timeOfDay(ms) + " UTC"
    }

    /// `YYYY-MM-DDThh:mm:ss.sssZ`; question marks for a time no calendar reaches (not finite,
    /// or beyond the year 9999), which the arithmetic behind it cannot take.
    private static func iso8601(_ ms: Double) -> String {
        guard ms.isFinite, abs(ms) < 253_402_300_800_000 else { return "????-??-??T??:??:??.???Z" }
        return UTCTimestamp.string(epochMilliseconds: ms)
    }

    /// A distance for a reader: "850 m", "2.35 km".
    public static func distance(metres: Double) -> String {
        metres < 1000 ? number(metres) + " m" : number(metres / 1000, decimals: 2) + " km"
    }

    /// A "nice" step (1, 2 or 5 times a power of ten) not smaller than `rough`.
    public static func niceStep(_ rough: Double) -> Double {
        guard rough > 0, rough.isFinite else { return 1 }
        let power = pow(10, floor(log10(rough)))
        for m in [1.0, 2, 5, 10] where m * power >= rough * (1 - 1e-9) { return m * power }
        return 10 * power
    }
}
