import Testing
@testable import Buffer

/// The history index files each session under its local day; a wrong boundary puts a walk
/// that started at 00:30 under yesterday.
@Suite struct DayBoundariesTests {
    @Test(arguments: [
        (DayBoundaries.utc, 0.0, "1970-01-01"),
        (.utc, 1_699_999_999_999, "2023-11-14"),
        (.utc, -1, "1969-12-31"),
        (.fixedOffset(seconds: 2 * 3600), 1_700_001_000_000, "2023-11-15"),   // 22:30Z -> 00:30 local
        (.fixedOffset(seconds: -5 * 3600), 1_709_262_000_000, "2024-02-29"),  // 03:00Z on 1 March -> 22:00 on the leap day
        (.fixedOffset(seconds: 14 * 3600), 1_735_689_599_000, "2025-01-01"),  // 23:59:59Z on 31 Dec, Kiribati
    ])
    func dayOfTime(boundaries: DayBoundaries, milliseconds: Double, expected: String) {
        #expect(boundaries.day(ofEpochMilliseconds: milliseconds) == expected)
    }

    @Test func unusableTimesNameNoRealDay() {
        #expect(DayBoundaries.utc.day(ofEpochMilliseconds: .nan) == "0000-00-00")
        #expect(DayBoundaries.utc.day(ofEpochMilliseconds: .infinity) == "0000-00-00")
    }

    @Test func systemLocalTimeGivesADayNearTheUTCOne() {
        // The machine's zone is unknown to the test; any zone is within 14 hours of UTC.
        let noon = 1_700_049_600_000.0  // 2023-11-15T12:00Z
        #expect(["2023-11-14", "2023-11-15", "2023-11-16"].contains(DayBoundaries.systemLocalTime.day(ofEpochMilliseconds: noon)))
    }
}
