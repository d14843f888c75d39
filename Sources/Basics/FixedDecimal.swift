#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Numbers with a fixed count of decimals, as C's `printf("%.Nf")` writes them (the same text
/// as `String(format: "%.5f", x)`), without Foundation.
///
/// `String(format:)` runs through `NSString` and CoreFoundation's format engine: code a
/// long-running daemon would otherwise never touch, whose pages then stay resident.
public enum FixedDecimal {
    /// `value` with `places` decimals (0...17), rounded as the C library rounds.
    public static func string(_ value: Double, places: Int) -> String {
        let places = min(max(places, 0), 17)
        var buffer = [CChar](repeating: 0, count: 352)  // %f of the largest double: 309 digits + sign + point + 17
        let written = withVaList([value]) { vsnprintf(&buffer, buffer.count, "%.\(places)f", $0) }
        guard written > 0, Int(written) < buffer.count else { return String(value) }
        return String(decoding: buffer.prefix(Int(written)).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
