import Foundation
import Testing
import Basics

@Suite("UTC timestamps")
struct UTCTimestampTests {
    @Test(arguments: [
        (0.0, "1970-01-01T00:00:00.000Z"),
        (1_282_379_843_000.4, "2010-08-21T08:37:23.000Z"),
        (951_782_400_999.6, "2000-02-29T00:00:01.000Z"),
        (-1.0, "1969-12-31T23:59:59.999Z"),
        (253_402_300_799_999, "9999-12-31T23:59:59.999Z"),
    ])
    func millisecondsAsText(_ milliseconds: Double, _ expected: String) {
        #expect(UTCTimestamp.string(epochMilliseconds: milliseconds) == expected)
    }

    /// From 1600 (Foundation's calendar is Julian before the 1582 reform; ours is proleptic
    /// Gregorian, as ISO 8601 asks) to 2370.
    @Test func agreesWithFoundationFrom1600To2370() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        for day in stride(from: -135_140, through: 146_097, by: 97) {
            let milliseconds = Double(day) * 86_400_000 + 45_296_789
            let expected = formatter.string(from: Date(timeIntervalSince1970: milliseconds / 1000))
            #expect(UTCTimestamp.string(epochMilliseconds: milliseconds) == expected, "day \(day)")
        }
    }

    @Test func civilDatesRoundTrip() {
        for days in stride(from: -800_000, through: 800_000, by: 37) {
            let date = CivilDate(daysSinceEpoch: days)
            #expect(date.daysSinceEpoch == days)
            #expect((1...12).contains(date.month) && (1...31).contains(date.day))
        }
        #expect(CivilDate(daysSinceEpoch: 11_016) == CivilDate(year: 2000, month: 2, day: 29))
    }
}
