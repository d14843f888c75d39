import Foundation
import GNSS
import Recording
import Testing

/// The GNSS correction of an unsynchronised clock as fixes come and go (issue 21: the soak's
/// bluetoothd restart gap was hidden, and its backfill placed outside it, when the best offset
/// fell back by 0.7 s and every later time moved back with it).
struct TimeBaseTests {
    private static let second: Int64 = 1_000_000_000

    private func fix(offset: Double) -> GNSSFix {
        GNSSFix(time: Date(timeIntervalSince1970: 1000), timeOfDay: NMEATimeOfDay(microseconds: 0), mode: .threeD,
                latitude: 1, longitude: 2, systemClockOffset: offset, arrival: Date(timeIntervalSince1970: 1000 - offset))
    }

    @Test func aFallOfTheBestOffsetIsFollowedSlowlyAndEarlierTimesStay() {
        var base = TimeBase(wallNanoseconds: 0, monotonicNanoseconds: 0, systemClockSynchronised: false)
        base.observe(fix(offset: 100.9), at: 0)  // one report with little delay
        for k in 1...40 { base.observe(fix(offset: 100.2), at: Int64(k) * Self.second) }
        // The 100.9 left the recent fixes at 16 s; by 40 s the correction fell by 25 ms at most.
        #expect(base.correction <= 100.9 && base.correction >= 100.9 - 0.0251)
        // A time of before the fall converts as it did then, forwards and back.
        #expect(base.epochMilliseconds(monotonic: 10 * Self.second) == 10_000 + 100_900)
        #expect(base.monotonic(epochMilliseconds: 10_000 + 100_900) == 10 * Self.second)
        // Consecutive times never go back: 10 ms apart stay at least 9 ms apart (1 ms a second).
        let times = (0..<4000).map { base.epochMilliseconds(monotonic: Int64($0) * 10_000_000) }
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 >= 9 - 1e-6 })
    }

    @Test func aBetterReportAndAWrongClockApplyAtOnce() {
        var base = TimeBase(wallNanoseconds: 0, monotonicNanoseconds: 0, systemClockSynchronised: false)
        base.observe(fix(offset: 100.2), at: 0)
        base.observe(fix(offset: 100.5), at: Self.second)  // less delayed: a better estimate
        #expect(base.correction == 100.5)
        for k in 2...20 { base.observe(fix(offset: -3600), at: Int64(k) * Self.second) }  // the clock was stepped
        #expect(base.correction == -3600)
        #expect(base.epochMilliseconds(monotonic: 30 * Self.second) == 30_000 - 3_600_000)
    }
}
