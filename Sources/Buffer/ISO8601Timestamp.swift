import Foundation
import Basics

/// UTC timestamps in the ISO 8601 form `2026-11-21T10:52:26Z`, the text
/// `Date.formatted(.iso8601)` produces, for the buffer's `sync_state` values.
///
/// Formatted by the shared civil-date arithmetic (``UTCTimestamp``, the form gpsd's `time`
/// fields use) rather than Foundation's `ISO8601FormatStyle`: on Linux
/// that style builds a Gregorian calendar in the *current* time zone, which makes Foundation
/// ask ICU for the canonical zone ID and load its time-zone tables, 2-3 MB of resident memory
/// in an always-on daemon for a string that is always UTC.
public enum ISO8601Timestamp {
    /// Whole seconds, rounded down, as `Date.formatted(.iso8601)` does.
    public static func string(from date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard fourDigitYears.contains(seconds) else { return date.formatted(.iso8601) }
        // The millisecond form of a whole second, without its ".000".
        return String(UTCTimestamp.string(epochMilliseconds: seconds * 1000).dropLast(5)) + "Z"
    }

    /// Milliseconds since the epoch as `2026-11-21T10:52:26.123Z`, the text an
    /// `ISO8601DateFormatter` with `[.withInternetDateTime, .withFractionalSeconds]` in UTC
    /// writes (rounded to the nearest millisecond, as ICU does).
    public static func string(fromEpochMilliseconds milliseconds: Double) -> String {
        guard fourDigitYears.contains((milliseconds.rounded() / 1000).rounded(.down)) else { return fallback(milliseconds) }
        return UTCTimestamp.string(epochMilliseconds: milliseconds)
    }

    /// Seconds since the epoch from 0000-01-01T00:00:00Z to 9999-12-31T23:59:59Z: outside
    /// them (and for NaN) Foundation's formatters have the last word.
    private static let fourDigitYears: ClosedRange<Double> = -62_167_219_200...253_402_300_799

    private static func fallback(_ milliseconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: Date(timeIntervalSince1970: milliseconds / 1000))
    }
}
