@testable import Recording
import MetaWear
import Testing

/// The stream a restart gap's end is placed against is kept while the gap waits for the log
/// (issue 21).
@Suite("A restart gap keeps the stream after it")
struct RestartGapStreamKeptTests {
    /// The recorder keeps 2 minutes of the stream for matching. A restart gap read after that
    /// (a gateway down 10 minutes, its log read at the board's pace for 5) still needs the
    /// first samples streamed after it: the anchors its last logged samples are placed between.
    /// Before, they were forgotten, the gap's end was placed by extrapolation 7.7 ms late
    /// (mwbench backfill, restart rows, 600 s down) and its last sample, within half a period
    /// of the stream's first, was dropped.
    @Test func theStreamFromARestartGapsEndIsKeptWhileItWaits() {
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        let recorder = SessionController(store: MemoryStore(), timeBase: base)
        let tail = [RecordedPoint(gyroscope: GyroReading(x: 1, y: 2, z: 3, timestamp: 1_800_000_000_000), location: nil)]
        let until = 1_800_000_600_000.0
        recorder.expectRestartBackfill([RestartGap(sessionID: "s", board: "B", nextSeq: 1, tail: tail, until: until)])
        recorder.expectBackfill(board: "B", true)
        recorder.attach(board: "B", gyroRateHertz: 100)
        let from = base.monotonic(epochMilliseconds: until)
        // 5 minutes of stream from the gap's end, far past the 2 minutes kept.
        var window = StreamedWindow()
        window.keptFrom = recorder.streamKeptFrom(board: "B")
        for k in 0..<30_000 {
            window.append(BackfillPlanner.StreamedSample(time: from + Int64(k) * 10_000_000, raw: RawVector(x: Int16(truncatingIfNeeded: k), y: 0, z: 0)))
        }
        #expect(window.samples.first?.time == from, "the stream's first sample after the gap is kept")
        // Once the gap is no longer waited for, the window keeps its 2 minutes again.
        #expect(SessionController(store: MemoryStore(), timeBase: base).streamKeptFrom(board: "B") == nil)
    }
}
