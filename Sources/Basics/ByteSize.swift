/// Byte sizes with SI and IEC units, as the configuration writes them and its messages say
/// them back.
public enum ByteSize {
    /// Parses "1073741824", "1 GiB", "512MiB", "2 GB", "64 kB"; nil otherwise or when negative.
    public static func parse(_ text: String) -> Int64? {
        let trimmed = trimmingSpaces(Substring(text))
        let digits = trimmed.prefix { $0.isNumber || $0 == "." }
        let unit = trimmingSpaces(trimmed.dropFirst(digits.count)).lowercased()
        guard let number = Double(digits), number >= 0 else { return nil }
        let factors: [String: Double] = [
            "": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
            "k": 1024, "kib": 1024, "m": 1_048_576, "mib": 1_048_576, "g": 1_073_741_824, "gib": 1_073_741_824,
            "tib": 1_099_511_627_776,
        ]
        guard let factor = factors[unit] else { return nil }
        let value = (number * factor).rounded()
        guard value < 9e18 else { return nil }
        return Int64(value)
    }

    /// "1 GiB", "256 MiB", or bytes when not a whole unit.
    public static func format(_ bytes: Int64) -> String {
        for (unit, factor) in [("TiB", Int64(1) << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)]
        where bytes >= factor && bytes % factor == 0 {
            return "\(bytes / factor) \(unit)"
        }
        return "\(bytes) bytes"
    }

    /// `text` without leading and trailing tabs and space separators (Foundation's
    /// `.whitespaces`), so parsing needs no Foundation.
    private static func trimmingSpaces(_ text: Substring) -> Substring {
        func isSpace(_ character: Character) -> Bool {
            character.unicodeScalars.allSatisfy { $0 == "\t" || $0.properties.generalCategory == .spaceSeparator }
        }
        guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) }) else {
            return text[text.endIndex...]
        }
        return text[first...last]
    }
}
