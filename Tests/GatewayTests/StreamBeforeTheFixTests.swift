import Buffer
import Recording
import Testing

/// A board streaming through a GNSS cold start while the system clock is not synchronised
/// (issue 21): its points stored before the first fix were on the uncorrected system clock,
/// those after it on GNSS time, so the session's times jumped by the clock's error partway
/// through (116 days, or 2 s), its points out of time order, its duration and exports wrong,
/// and recovery after a kill -9 forced the points 1 ms apart across the jump. Now the first
/// fix converts the times stored before it (sealed chunks, the segment journal, the open
/// chunk, the samples still held) with its correction, as ``TimeBase`` converts the samples it
/// still holds.
@Suite("Points stored before the first fix")
struct StreamBeforeTheFixTests {
    /// The first fix comes 30 s into the session (a cold start); the board streams from 1.5 s.
    static let firstFix: Int64 = 30_000_000_000

    /// The epoch ms GNSS time gives the monotonic time `seconds`: the fixes are reported 80 ms
    /// after their epoch, so the correction is 80 ms short and every time 80 ms early.
    static func gnssTime(_ seconds: Double) -> Double { (StartBeforeTheFixTests.utc + seconds - 0.08) * 1000 }

    /// Checks that a run's points are one stream on GNSS time from 1.5 s to about `end`.
    static func expectOnGNSSTime(_ run: StartBeforeTheFixTests.Run, end seconds: Double, lastWithin: Double,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        let steps = zip(run.stored, run.stored.dropFirst()).map { $1 - $0 }
        print("  \(run.stored.count) points, first \(run.firstPoint) (GNSS \(gnssTime(1.5))), last \(run.lastPoint) "
              + "(GNSS \(gnssTime(seconds))), steps \(steps.min() ?? .nan)...\(steps.max() ?? .nan) ms, started \(run.startedAt), "
              + "ended \(run.endedAt ?? .nan), source \(run.timeSource ?? "-"), export \(run.exportedSeconds) s, "
              + "walking \(run.walkingMinutes) min, days \(run.days)")
        #expect(abs(run.firstPoint - gnssTime(1.5)) < 100, "the first point is at its GNSS time", sourceLocation: sourceLocation)
        #expect(abs(run.lastPoint - gnssTime(seconds)) < lastWithin, "so is the last", sourceLocation: sourceLocation)
        #expect(steps.allSatisfy { $0 > 0 && $0 < 50 }, "stored in time order without a jump", sourceLocation: sourceLocation)
        let spanned = run.lastPoint - run.firstPoint
        #expect(abs(spanned - Double(run.stored.count - 1) * 10) < 100, "100 Hz throughout: \(spanned) ms for \(run.stored.count)",
                sourceLocation: sourceLocation)
        #expect(run.startedAt <= run.firstPoint && run.firstPoint - run.startedAt < 2_000, "the start is before the first point",
                sourceLocation: sourceLocation)
        #expect((run.endedAt ?? .nan) >= run.lastPoint && (run.endedAt ?? .nan) - run.lastPoint < 2_000, "the end after the last",
                sourceLocation: sourceLocation)
        #expect(run.timeSource == TimeSource.gnssCorrected.rawValue, "the session is GNSS-corrected", sourceLocation: sourceLocation)
        #expect(abs(run.exportedSeconds * 1000 - spanned) < 1, "the export spans the stream", sourceLocation: sourceLocation)
        #expect(abs(run.walkingMinutes * 60_000 - ((run.endedAt ?? .nan) - run.startedAt)) < 1 && run.walkingMinutes < 1.1,
                "history's walking time is the session's", sourceLocation: sourceLocation)
        #expect(run.days == [run.firstPointDay], "history lists it on its day", sourceLocation: sourceLocation)
    }

    @Test("30 s on a clock 116 days ahead, then 30 s after the first fix: every point on GNSS time",
          arguments: [StartBeforeTheFixTests.clockAhead, 2.0])
    func streamedThroughTheColdStart(clockAhead: Double) throws {
        let run = try StartBeforeTheFixTests().record(killedBeforeTheStop: false, clockAhead: clockAhead, firstFix: Self.firstFix,
                                                      end: 60_000_000_000)
        Self.expectOnGNSSTime(run, end: 60, lastWithin: 200)
    }

    @Test("killed 15 s after the first fix: recovery seals the journal's points on GNSS time", arguments: [StartBeforeTheFixTests.clockAhead, 2.0])
    func killedAfterTheConversion(clockAhead: Double) throws {
        let run = try StartBeforeTheFixTests().record(killedBeforeTheStop: true, clockAhead: clockAhead, firstFix: Self.firstFix,
                                                      end: 45_000_000_000)
        Self.expectOnGNSSTime(run, end: 45, lastWithin: 2_500)
    }
}
