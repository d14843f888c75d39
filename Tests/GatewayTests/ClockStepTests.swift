import Basics
import Buffer
import Foundation
import GNSS
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// The system clock stepped while mwgated records (issue 21): `date -s`, fake-hwclock, or
/// timesyncd's first NTP step on a board computer without a battery-backed clock that reaches a
/// network mid-session. The session's times must stay on GNSS (true) time across the step.
/// Before, an unsynchronised clock's step moved every time after it by the step (the next fix's
/// offset is against the stepped clock), and a clock synchronised by the step gave new times
/// labelled synchronised on the clock read at the start, off by the step.
@Suite("The system clock stepped while mwgated records")
struct ClockStepTests {
    static let utc = StartBeforeTheFixTests.utc
    static let threeHours = 3.0 * 3600
    /// The session's length, nanoseconds; the step comes at 3.05 s (between two fixes), and more
    /// than 16 fixes follow it (the best of the last 16 offsets held a forward step off for 16 s).
    static let end: Int64 = 25_000_000_000
    static let stepAt: Int64 = 3_050_000_000

    @Test("unsynchronised, GNSS-corrected before and after a step of ±3 h", arguments: [threeHours, -threeHours])
    func unsynchronisedStep(step: Double) throws {
        let run = try record(clockAhead: 116 * 86_400, step: step, synchronisedByTheStep: false)
        expectOnTrueTime(run, step: step)
    }

    @Test("a clock 3 h off synchronised by one step (timesyncd's first NTP step)", arguments: [threeHours, -threeHours])
    func synchronisedByTheStep(clockAhead: Double) throws {
        let run = try record(clockAhead: clockAhead, step: -clockAhead, synchronisedByTheStep: true)
        expectOnTrueTime(run, step: -clockAhead)
    }

    private func expectOnTrueTime(_ run: StartBeforeTheFixTests.Run, step: Double) {
        let (first, last) = ((Self.utc + 1.4) * 1000, (Self.utc + Double(Self.end) / 1e9 + 0.5) * 1000)
        let outside = run.stored.filter { $0 < first || $0 > last }
        print("clock step \(step) s: \(run.stored.count) points, \(outside.count) off true time (first \(outside.first.map { "\($0 - Self.utc * 1000) ms" } ?? "-")), "
              + "started \(run.startedAt - Self.utc * 1000) ms, ended \(run.endedAt.map { "\($0 - Self.utc * 1000)" } ?? "-") ms, source \(run.timeSource ?? "-")")
        #expect(outside.isEmpty, "\(outside.count) points off true time, the first \((outside.first ?? 0) / 1000 - Self.utc) s after the start")
        #expect(zip(run.stored, run.stored.dropFirst()).allSatisfy { $0 < $1 }, "no point out of order")
        // 100 Hz from 1.5 s to 25 s: 2350 samples, give or take the last report's.
        #expect(run.stored.count >= 2340, "nothing lost: \(run.stored.count) points")
        #expect(abs(run.startedAt - Self.utc * 1000) < 1000, "the start on true time: \(run.startedAt - Self.utc * 1000) ms")
        #expect(abs((run.endedAt ?? 0) - (Self.utc * 1000 + Double(Self.end) / 1e6)) < 1000,
                "the end on true time: \((run.endedAt ?? 0) - Self.utc * 1000) ms")
        #expect(run.timeSource == TimeSource.gnssCorrected.rawValue, "its label: \(run.timeSource ?? "-")")
    }

    /// The rig of ``StartBeforeTheFixTests`` (a MetaMotion R's 100 Hz gyro from 1.5 s, fixes from
    /// 100 ms one a second), the clock stepped by `step` at ``stepAt``, the session stopped at ``end``.
    func record(clockAhead: Double, step: Double, synchronisedByTheStep: Bool) throws -> StartBeforeTheFixTests.Run {
        try StartBeforeTheFixTests().record(killedBeforeTheStop: false, clockAhead: clockAhead, end: Self.end, step: step,
                                            stepAt: Self.stepAt, synchronisedByTheStep: synchronisedByTheStep)
    }
}
