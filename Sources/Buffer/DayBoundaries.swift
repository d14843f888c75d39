#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Where the history index draws the line between one calendar day and the next.
///
/// The gateway asks the C library (`localtime_r`, which follows `TZ` and `/etc/localtime`)
/// rather than Foundation's `Calendar`: on Linux `Calendar` and `TimeZone.current` load ICU
/// and its time-zone tables, a few megabytes of resident memory in an always-on daemon that
/// only ever needs "which local day is this".
public enum DayBoundaries: Sendable, Equatable {
    /// The system's local time, as the C library resolves it once per process (`TZ`, else
    /// `/etc/localtime`). A time-zone change takes effect at the next daemon start.
    case systemLocalTime
    /// A fixed offset east of UTC, in seconds. `.utc` is the zero offset.
    case fixedOffset(seconds: Int)

    /// Days in UTC.
    public static let utc = DayBoundaries.fixedOffset(seconds: 0)

    /// The day (`YYYY-MM-DD`) that contains an epoch-millisecond time.
    public func day(ofEpochMilliseconds milliseconds: Double) -> String {
        guard milliseconds.isFinite, abs(milliseconds) < 1e17 else { return "0000-00-00" }
        var seconds = time_t((milliseconds / 1000).rounded(.down))
        var fields = tm()
        switch self {
        case .systemLocalTime:
            guard localtime_r(&seconds, &fields) != nil else { return "0000-00-00" }
        case .fixedOffset(let offset):
            seconds += time_t(offset)
            guard gmtime_r(&seconds, &fields) != nil else { return "0000-00-00" }
        }
        // "%Y-%m-%d" is 10 bytes for years 0-9999, the range the guard above allows.
        var text = [CChar](repeating: 0, count: 16)
        guard strftime(&text, text.count, "%Y-%m-%d", &fields) > 0 else { return "0000-00-00" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
