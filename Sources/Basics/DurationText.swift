/// Lengths of time as the configuration and `mwctl` write them: "90 s", "30 min", "2 h",
/// "1 h 30 min", "45m", "10s" (units s, min or m, h; parts add up).
public enum DurationText {
    /// Seconds, or nil when `text` is not a length of time (or is zero).
    public static func parse(_ text: String) -> Double? {
        var total = 0.0
        var rest = Substring(text.lowercased())
        var parts = 0
        while true {
            rest = rest.drop { $0 == " " || $0 == "\t" }
            guard !rest.isEmpty else { break }
            let digits = rest.prefix { $0.isNumber || $0 == "." }
            guard let number = Double(digits), number >= 0 else { return nil }
            rest = rest.dropFirst(digits.count).drop { $0 == " " || $0 == "\t" }
            let unit = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(unit.count)
            let factors: [Substring: Double] = ["s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600]
            guard let factor = factors[unit] else { return nil }
            total += number * factor
            parts += 1
        }
        return parts > 0 && total > 0 && total.isFinite ? total : nil
    }

    /// `seconds` in the same units, whole ones, rounded down (a limit is never overstated):
    /// "1 h 23 min", "4 min 5 s" or "7 s".
    public static func string(_ seconds: Double) -> String {
        let total = Int(seconds.rounded(.down))
        let (h, m, s) = (total / 3600, total / 60 % 60, total % 60)
        if h > 0 { return "\(h) h \(m) min" }
        return m > 0 ? "\(m) min \(s) s" : "\(s) s"
    }
}
