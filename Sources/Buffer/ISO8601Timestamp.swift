import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// UTC timestamps in the ISO 8601 form `2026-11-21T10:52:26Z`, the text
/// `Date.formatted(.iso8601)` produces, for the buffer's `sync_state` values.
///
/// Formatted with the C library's `gmtime_r` rather than Foundation's `ISO8601FormatStyle`:
/// on Linux that style builds a Gregorian calendar in the *current* time zone, which makes
/// Foundation ask ICU for the canonical zone ID and load its time-zone tables, 2-3 MB of
/// resident memory in an always-on daemon for a string that is always UTC.
public enum ISO8601Timestamp {
    /// Whole seconds, rounded down, as `Date.formatted(.iso8601)` does.
    public static func string(from date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite, abs(seconds) < 2.5e11 else { return date.formatted(.iso8601) }
        var time = time_t(seconds)
        var fields = tm()
        guard gmtime_r(&time, &fields) != nil, fields.tm_year + 1900 >= 0, fields.tm_year + 1900 <= 9999 else {
            return date.formatted(.iso8601)
        }
        return pad(Int(fields.tm_year) + 1900, 4) + "-" + pad(Int(fields.tm_mon) + 1, 2) + "-" + pad(Int(fields.tm_mday), 2)
            + "T" + pad(Int(fields.tm_hour), 2) + ":" + pad(Int(fields.tm_min), 2) + ":" + pad(Int(fields.tm_sec), 2) + "Z"
    }

    /// Milliseconds since the epoch as `2026-11-21T10:52:26.123Z`, the text an
    /// `ISO8601DateFormatter` with `[.withInternetDateTime, .withFractionalSeconds]` in UTC
    /// writes (rounded to the nearest millisecond, as ICU does).
    public static func string(fromEpochMilliseconds milliseconds: Double) -> String {
        let total = milliseconds.rounded()
        let whole = (total / 1000).rounded(.down)
        guard whole.isFinite, abs(whole) < 2.5e11 else { return fallback(milliseconds) }
        var time = time_t(whole)
        var fields = tm()
        guard gmtime_r(&time, &fields) != nil, fields.tm_year + 1900 >= 0, fields.tm_year + 1900 <= 9999 else {
            return fallback(milliseconds)
        }
        let millis = min(999, max(0, Int(total - whole * 1000)))
        return pad(Int(fields.tm_year) + 1900, 4) + "-" + pad(Int(fields.tm_mon) + 1, 2) + "-" + pad(Int(fields.tm_mday), 2)
            + "T" + pad(Int(fields.tm_hour), 2) + ":" + pad(Int(fields.tm_min), 2) + ":" + pad(Int(fields.tm_sec), 2)
            + "." + pad(millis, 3) + "Z"
    }

    private static func fallback(_ milliseconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: milliseconds / 1000))
    }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
