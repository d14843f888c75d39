extension StringProtocol {
    /// The text without the blanks at either end: tabs and Unicode's space separators, the
    /// characters of Foundation's `CharacterSet.whitespaces` (line breaks stay). Without
    /// Foundation: `CharacterSet` reaches ICU's data through CoreFoundation.
    public var trimmingBlanks: String {
        let scalars = unicodeScalars
        func isBlank(_ scalar: Unicode.Scalar) -> Bool {
            scalar == "\t" || scalar.properties.generalCategory == .spaceSeparator
        }
        guard let first = scalars.firstIndex(where: { !isBlank($0) }),
              let last = scalars.lastIndex(where: { !isBlank($0) })
        else { return "" }
        var trimmed = String.UnicodeScalarView()
        trimmed.append(contentsOf: scalars[first...last])
        return String(trimmed)
    }
}
