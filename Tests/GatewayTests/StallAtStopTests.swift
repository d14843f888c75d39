import Basics
import Buffer
import Foundation
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// A board whose link is up but whose stream is silent (a stall: the board stops sending, or
/// bluetoothd holds its notifications) when the session stops (issue 21). The live stream only
/// notices a gap when the next sample comes, and none comes before the stop; the board's log
/// holds every sample of the stall, and is trimmed between sessions. The stop keeps the stall as
/// a gap from the board's newest point to the stop, filled from the log before anything trims
/// it (sealed into the stopped session as correction chunks). A board model logs and streams its
/// 100 Hz gyro into a real buffer; its log is read when the recorder asks, page by page; the
/// board keeps its sensors on after the stop (what it takes then is not the session's).
@Suite("Flash log: a stream stalled at the stop")
struct StallAtStopTests {
    @Test("stalled 2 s at the stop: every sample up to the stop, the stall backfilled, none marked missing")
    func stalledAtTheStop() throws {
        try run(seed: 71, killedAfterTheStop: false)
    }

    /// The gateway is killed after the stop, before the board's log is read: the stall's gap
    /// was kept with the session's end, and the restarted gateway fills it.
    @Test("the same, the gateway killed after the stop: the restarted one fills the stall")
    func stalledAtTheStopThenKilled() throws {
        try run(seed: 72, killedAfterTheStop: true)
    }

    /// A link drop's gap (1-1.5 s) still waits for the board's log when the stall begins: its
    /// readout hangs until after the stop (soak seed 2112 lost the 146 samples of such a stall).
    /// The held gap kept at the stop reaches the stop, and both are filled.
    @Test("a link drop's gap still held when the board stalls: both filled, up to the stop")
    func stalledWhileAGapIsHeld() throws {
        try run(seed: 74, killedAfterTheStop: false, heldGapBefore: true)
    }

    /// A stall shorter than the timestamper's lookahead (0.88 s) after a held gap, the stream on
    /// for 1 s after it, the stop within the timestamper's confirmation: the samples streamed
    /// after the stall are stamped as if none were missing, the stall's length early, right after
    /// the last point before it (soak seed 2112: the stall's 88 logged samples were lost, and 23
    /// streamed after it were stored twice, 880 ms late). The log's ticks put the stall's samples
    /// between those points, and the samples streamed after it are twins of logged ones.
    @Test("a short stall after a held gap, the stop soon after: its samples backfilled once, none twice")
    func shortStallAfterAHeldGap() throws {
        try run(seed: 2112, killedAfterTheStop: false, heldGapBefore: true, stallEnds: 5_880_000_000, stopAt: 6_960_000_000)
        try run(seed: 2113, killedAfterTheStop: false, heldGapBefore: true, stallEnds: 5_880_000_000, stopAt: 6_960_000_000)
    }

    /// A healthy stream at the stop keeps no gap, though its newest notifications are still on
    /// their way: the stop does not ask for a readout and the survey waits for nothing.
    @Test("a healthy stream at the stop keeps no gap")
    func healthyStreamAtTheStopKeepsNoGap() throws {
        let buffer = try RestartableBuffer(label: "healthy-stop")
        defer { buffer.remove() }
        let controller = SessionController(store: try buffer.open(), timeBase: RestartableBuffer.timeBase)
        var (rng, now, trimmer) = (SeededRandom(seed: 73), Int64(0), BoardLogTrimmer())
        print("StallAtStopTests seed 73")
        var rig = FlashLogReadoutRig.linkedMetaMotionR(tickAtPowerOn: 444_444, into: controller, board: "B", trimmer: &trimmer)
        let session = try controller.start(trigger: .controlAPI, now: 0)
        let decoder = FlashLogReadoutRig.bmi160Decoder
        while now < 5_000_000_000 {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            rig.stream(to: now, linkUp: true, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
        }
        // The stop comes while a group of notifications is still on its way: the board sessions
        // hand them on every 250 ms, the link in connection events up to 30 ms apart.
        try controller.stop(trigger: .controlAPI, now: now + 280_000_000)
        #expect(!controller.hasPendingCorrections(sessionID: session), "no gap kept for a healthy stream")
        #expect(controller.takeBackfillRequests().isEmpty, "no readout asked for")
    }

    // swiftlint:disable:next function_body_length
    func run(seed: UInt64, killedAfterTheStop: Bool, heldGapBefore: Bool = false, stallEnds: Int64 = 9_000_000_000,
             stopAt: Int64 = 7_000_000_000) throws {
        print("StallAtStopTests seed \(seed)")
        let buffer = try RestartableBuffer(label: "stall-at-stop")
        defer { buffer.remove() }
        var store = try buffer.open()
        var controller = SessionController(store: store, timeBase: RestartableBuffer.timeBase)
        var (rng, now, trimmer) = (SeededRandom(seed: seed), Int64(0), BoardLogTrimmer())
        var rig = FlashLogReadoutRig.linkedMetaMotionR(tickAtPowerOn: 444_444, into: controller, board: "B", trimmer: &trimmer)
        let (gyro, decoder) = (FlashLogReadoutRig.gyro100, FlashLogReadoutRig.bmi160Decoder)
        let session = try controller.start(trigger: .controlAPI, now: 0)
        // Stalled from 5 s (by default to 9 s); the session stops (by default at 7 s); the gateway
        // (killed) is back at 7.5 s.
        let stallAt: Int64 = 5_000_000_000, killAt: Int64 = 7_500_000_000, end: Int64 = 40_000_000_000
        // The restarted gateway's board streams in its next session (its log is read then).
        let nextAt: Int64 = 10_000_000_000
        var stopped = false, killed = false
        // The first sample the stall withholds, and the first the board takes after the stop.
        var indexAtStall: Int?
        var indexAfterStall: Int?
        var indexAtStop = 0
        var next: String?
        var trimsBeforeTheFill = 0
        // With `heldGapBefore`: the link drops at 1 s and is back at 1.5 s; the readout for its
        // gap hangs (the board sends nothing of it) until 7.5 s.
        let dropAt: Int64 = 1_000_000_000, backAt: Int64 = 1_500_000_000, readoutOnAt: Int64 = 7_500_000_000
        var dropped: Range<Int>?
        var heldAtTheStop = false

        while now < end {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            if heldGapBefore, dropped == nil, now >= dropAt {
                let first = Int(rig.board.state(.gyro).nextSampleIndex)
                dropped = first..<first
                rig.goesAway(from: controller, board: "B", now: now)
                rig.board.faults.readoutStalled = true
            }
            if let gap = dropped, gap.isEmpty, now >= backAt {
                dropped = gap.lowerBound..<Int(rig.board.state(.gyro).nextSampleIndex)
                rig.links(gyro: gyro, into: controller, board: "B", trimmer: &trimmer)
            }
            if heldGapBefore, now >= readoutOnAt { rig.board.faults.readoutStalled = false }
            rig.board.faults.streamStalled = now >= stallAt && now < stallEnds
            if indexAtStall == nil, now >= stallAt { indexAtStall = Int(rig.board.state(.gyro).nextSampleIndex) }
            if indexAfterStall == nil, now >= stallEnds { indexAfterStall = Int(rig.board.state(.gyro).nextSampleIndex) }
            if killedAfterTheStop, !killed, now >= killAt {
                // kill -9 and a new process: what the stop kept is in the store.
                killed = true
                store = try buffer.open()
                controller = SessionController(store: store, timeBase: RestartableBuffer.timeBase)
                try controller.adoptAwaitingSurveyFromStore()
                controller.expectRestartBackfill(try store.restartGaps())
                controller.expectBackfill(board: "B", true)
                rig.linkLost()
                rig.links(gyro: gyro, into: controller, board: "B", trimmer: &trimmer)
            }
            if killedAfterTheStop, next == nil, now >= nextAt { next = try controller.start(trigger: .controlAPI, now: now) }
            let waiting = controller.hasPendingCorrections(sessionID: session)
            let (entries, reading) = (rig.board.flashLog.storedCount, rig.downloader != nil)
            rig.readoutEnded = false
            rig.stream(to: now, linkUp: dropped.map { !$0.isEmpty } ?? true, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
            // Entries dropped with no readout confirming pages: a trim, which before the gap is
            // filled loses the stall.
            if stopped, waiting, rig.board.flashLog.storedCount < entries, !reading, rig.downloader == nil, !rig.readoutEnded {
                trimsBeforeTheFill += 1
            }
            if !stopped, now >= stopAt {
                // After the board is at `now`: what it took up to the stop is before this index.
                stopped = true
                heldAtTheStop = controller.isWaitingForBackfill(board: "B")
                try controller.stop(trigger: .controlAPI, now: now)
                indexAtStop = Int(rig.board.state(.gyro).nextSampleIndex)
            }
        }
        #expect(!controller.hasPendingCorrections(sessionID: session), "the stall's gap is filled")
        let record = try controller.submitSurvey(.noHazard, sessionID: session, submittedAt: Date(timeIntervalSince1970: 1_800_000_100))
        let dataset = try store.dataset(sessionID: session)
        let points = dataset.points.map(\.point).sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp }
        let indices = points.map(BackfillEndToEndTests.index)
        let backfilled = points.filter(\.backfilled)
        let missed = points.reduce(0) { $0 + $1.missedBefore }
        let stall = (indexAtStall ?? 0)...min(indexAtStop, (indexAfterStall ?? .max) - 1)
        print("stall at the stop: \(points.count) points (\(backfilled.count) backfilled), last \(indices.last ?? -1) "
              + "(stop at \(indexAtStop)), holes \(BackfillEndToEndTests.holes(points)), missed \(missed), "
              + "trims before the fill \(trimsBeforeTheFill)")
        #expect(BackfillEndToEndTests.holes(points).isEmpty, "every sample once, in time order")
        #expect(Set(indices).count == indices.count, "no sample twice")
        #expect((indices.last ?? 0) >= indexAtStop - 2, "up to the stop: \(indices.last ?? 0) of \(indexAtStop)")
        #expect((indices.last ?? 0) <= indexAtStop, "nothing the board took after the stop: \(indices.last ?? 0) of \(indexAtStop)")
        // The stall's samples (but those the stream brought in its last notifications).
        let filled = Set(backfilled.map(BackfillEndToEndTests.index))
        let gap = dropped ?? 0..<0
        #expect(filled.allSatisfy { stall.contains($0) || gap.contains($0) },
                "only the stall's (and the drop's) samples are backfilled: \(filled.filter { !stall.contains($0) && !gap.contains($0) }.sorted())")
        #expect(filled.isSuperset(of: gap), "the drop's \(gap.count) samples backfilled")
        #expect(heldAtTheStop == heldGapBefore, "the drop's gap still held at the stop: \(heldAtTheStop)")
        #expect(filled.subtracting(gap).count >= stall.count - 4, "the stall's \(stall.count) samples backfilled: \(filled.count)")
        #expect(missed == 0, "nothing marked missing: \(missed)")
        #expect(trimsBeforeTheFill == 0, "the log is not trimmed before the stall's gap is filled")
        #expect(Set(record.gscopeData) == Set(dataset.chunkNames), "the record names the correction chunks")
    }
}
