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
}
