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

/// A step of the system clock while the process runs (issue 21): times stay on the clock read
/// at the start, GNSS-corrected, and a clock synchronised by the step is the true one.
struct TimeBaseClockStepTests {
    private static let second: Int64 = 1_000_000_000

    /// A fix whose GNSS time is `utc` s, measured against a system clock reading `wall` s.
    private func fix(utc: Double, wall: Double) -> GNSSFix {
        GNSSFix(time: Date(timeIntervalSince1970: utc), timeOfDay: NMEATimeOfDay(microseconds: 0), mode: .threeD,
                latitude: 1, longitude: 2, systemClockOffset: utc - wall, arrival: Date(timeIntervalSince1970: wall))
    }

    @Test(arguments: [3.0 * 3600, -3.0 * 3600])
    func aStepOfAnUnsynchronisedClockKeepsGNSSTime(step: Double) {
        // The clock reads 100 s at monotonic 0; GNSS time is 1000 s then.
        var base = TimeBase(wallNanoseconds: 100 * Self.second, monotonicNanoseconds: 0, systemClockSynchronised: false)
        base.observe(fix(utc: 1001, wall: 101), at: Self.second)
        #expect(base.epochMilliseconds(monotonic: 2 * Self.second) == 1_002_000)
        let stepped = base.readWallClock(wallNanoseconds: Int64((103 + step) * 1e9), monotonicNanoseconds: 3 * Self.second)
        #expect(stepped)
        // More than 16 fixes: the offsets before the step have left the recent ones.
        for k in 4...24 { base.observe(fix(utc: 1000 + Double(k), wall: 100 + Double(k) + step), at: Int64(k) * Self.second) }
        #expect(base.epochMilliseconds(monotonic: 25 * Self.second) == 1_025_000, "after the step: GNSS time")
        #expect(base.epochMilliseconds(monotonic: 2 * Self.second) == 1_002_000, "before it: as it was")
        #expect(base.source == .gnssCorrected)
        #expect(base.epochMilliseconds(system: Date(timeIntervalSince1970: 125 + step)) == 1_025_000)
    }

    @Test(arguments: [3.0 * 3600, -3.0 * 3600])
    func aClockSynchronisedByAStepIsTheTrueOne(clockAhead: Double) {
        var base = TimeBase(wallNanoseconds: Int64((1000 + clockAhead) * 1e9), monotonicNanoseconds: 0, systemClockSynchronised: false)
        base.observe(fix(utc: 1001, wall: 1001 + clockAhead), at: Self.second)
        #expect(base.epochMilliseconds(monotonic: 2 * Self.second) == 1_002_000)
        base.readWallClock(wallNanoseconds: 1003 * Self.second, monotonicNanoseconds: 3 * Self.second)
        base.systemClockSynchronised = true
        #expect(base.source == .systemClockSynchronised)
        #expect(base.epochMilliseconds(monotonic: 5 * Self.second) == 1_005_000, "synchronised: the true time")
        #expect(base.monotonic(epochMilliseconds: 1_005_000) == 5 * Self.second)
        #expect(base.epochMilliseconds(system: Date(timeIntervalSince1970: 1005)) == 1_005_000)
    }

    @Test func slewBelowTheThresholdIsNoStep() {
        var base = TimeBase(wallNanoseconds: 0, monotonicNanoseconds: 0, systemClockSynchronised: false)
        let stepped = base.readWallClock(wallNanoseconds: 1_500_000_000 + 100 * Self.second, monotonicNanoseconds: 100 * Self.second)
        #expect(!stepped)
        #expect(base.wallStep == 0)
    }
}
