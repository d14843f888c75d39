/// Numbers as the shortest decimal that reads back to exactly the value stored: a `Float` is
/// printed as a `Float` (17.1 stays `17.1`, never `17.100000381469727`), a `Double` as a
/// `Double`. The one number formatter of every output (documents, sinks, export, `mwctl`).
///
/// Swift's own `description` is already the shortest round-trip form and does not depend on
/// the locale; this names the rules every writer shares on top of it:
/// - ``json(_:)-(Double)``: JSON number text. Integral values keep a `.0` so a typed reader
///   sees a double, very large or small ones use an exponent (`1e-05`, `1e+16`).
/// - ``plain(_:)-(Double)``: the same digits without an exponent, for formats whose numbers
///   are decimals (GPX's `xsd:decimal`, CSV read by spreadsheets).
///
/// Non-finite values have no decimal form: callers decide (JSON writes `null`).
public enum ShortestDecimal {
    /// JSON number text of a finite `value`, nil for NaN and infinities.
    public static func json(_ value: Double) -> String? { value.isFinite ? value.description : nil }

    /// JSON number text of a finite `value` at its own (float32) precision, nil otherwise.
    public static func json(_ value: Float) -> String? { value.isFinite ? value.description : nil }

    /// Writes the JSON number text of a finite `value` (a `Double` or a `Float`, at its own
    /// precision) to `target` without building a String (the standard library formats into a
    /// stack buffer): the sinks' hot path.
    @inlinable public static func write<Value: BinaryFloatingPoint & TextOutputStreamable, Target: TextOutputStream>(
        _ value: Value, to target: inout Target
    ) {
        value.write(to: &target)
    }

    /// Positional decimal text of a finite `value` with the shortest round-trip digits and no
    /// exponent; integral values without a fraction (`17`, `0.00001`, `-3.5`). Nil for NaN and
    /// infinities.
    public static func plain(_ value: Double) -> String? { value.isFinite ? positional(value.description) : nil }

    /// Positional decimal text of a finite float32 `value` (see ``plain(_:)-(Double)``).
    public static func plain(_ value: Float) -> String? { value.isFinite ? positional(value.description) : nil }

    /// Rewrites Swift's shortest form (`d.ddde±x` or `ddd.ddd`) positionally.
    static func positional(_ text: String) -> String {
        var negative = false
        var digits = Substring(text)
        if digits.first == "-" {
            negative = true
            digits = digits.dropFirst()
        }
        var exponent = 0
        if let e = digits.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            exponent = Int(digits[digits.index(after: e)...]) ?? 0
            digits = digits[..<e]
        }
        // Split into the significant digits and the position of the decimal point in them.
        let point = digits.firstIndex(of: ".").map { digits.distance(from: digits.startIndex, to: $0) } ?? digits.count
        var significant = Array(digits.filter { $0 != "." })
        var pointAt = point + exponent
        // Drop leading zeros (keeping the point's place) and trailing zeros of the fraction.
        while significant.count > 1, significant.first == "0", pointAt > 1 {
            significant.removeFirst()
            pointAt -= 1
        }
        while significant.count > max(pointAt, 1), significant.last == "0" { significant.removeLast() }
        var out = negative ? "-" : ""
        if pointAt <= 0 {
            out += "0." + String(repeating: "0", count: -pointAt) + String(significant)
        } else if pointAt >= significant.count {
            out += String(significant) + String(repeating: "0", count: pointAt - significant.count)
        } else {
            out += String(significant[..<pointAt]) + "." + String(significant[pointAt...])
        }
        if out == "-0" { return "0" }
        return out
    }
}
