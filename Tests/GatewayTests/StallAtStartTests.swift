import Basics
import Buffer
import Foundation
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// A board linked but stalled (its stream silent: the board stops sending, or bluetoothd holds
/// its notifications) when a session starts (issue 21), its sensors on between sessions (`mode =
/// "always"` or `stream_between_sessions`). The stall began in the session before and outlasts
/// both its stop and the next start. The new session gives every board a new stream, whose
/// first point, after the stall, counted no gap: what the board took from the start until then
/// was lost, unmarked. A board model logs and streams its 100 Hz gyro into a real buffer; its
/// log is read when the recorder asks, page by page.
@Suite("Flash log: a stream stalled at a session's start")
struct StallAtStartTests {
    @Test("stalled across a stop and the next start: both sessions hold every sample, the stall backfilled")
    func stalledAcrossTheNextStart() throws {
        try withLinkedBoard(seed: 81) { store, controller, rig, trimmer in try stalledAcrossTheNextStart(store, controller, &rig, &trimmer) }
    }

    // swiftlint:disable:next function_body_length
    func stalledAcrossTheNextStart(_ store: BufferStore, _ controller: SessionController, _ rig: inout FlashLogReadoutRig,
                                   _ trimmer: inout BoardLogTrimmer) throws {
        var (rng, now, decoder) = (SeededRandom(seed: 81), Int64(0), FlashLogReadoutRig.bmi160Decoder)
        let first = try controller.start(trigger: .controlAPI, now: 0)
        // Stalled from 5 s to 11 s; the first session stops at 7 s, the second starts at 8 s.
        let stallAt: Int64 = 5_000_000_000, stopAt: Int64 = 7_000_000_000, startAt: Int64 = 8_000_000_000
        let stallEnds: Int64 = 11_000_000_000, end: Int64 = 40_000_000_000
        var second: String?
        var indexAtStop = 0, indexAtStart = 0, indexAtStallEnd: Int?
        while now < end {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            rig.board.faults.streamStalled = now >= stallAt && now < stallEnds
            if indexAtStallEnd == nil, now >= stallEnds { indexAtStallEnd = Int(rig.board.state(.gyro).nextSampleIndex) }
            if second == nil, now >= startAt {
                second = try controller.start(trigger: .controlAPI, now: now)
                indexAtStart = Int(rig.board.state(.gyro).nextSampleIndex)
            }
            rig.stream(to: now, linkUp: true, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
            if indexAtStop == 0, now >= stopAt {
                try controller.stop(trigger: .controlAPI, now: now)
                indexAtStop = Int(rig.board.state(.gyro).nextSampleIndex)
            }
        }
        try controller.stop(trigger: .controlAPI, now: now)
        #expect(!controller.hasPendingCorrections(sessionID: first), "the first session's stall is filled")
        func points(_ session: String) throws -> [RecordedPoint] {
            try store.dataset(sessionID: session).points.map(\.point).sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp }
        }
        let (before, after) = (try points(first), try points(second ?? ""))
        let secondIndices = after.map(BackfillEndToEndTests.index)
        let secondFirst = secondIndices.first ?? -1
        let backfilled = Set(after.filter(\.backfilled).map(BackfillEndToEndTests.index))
        let missed = after.reduce(0) { $0 + $1.missedBefore }
        let streamedFirst = after.first { !$0.backfilled }.map(BackfillEndToEndTests.index) ?? -1
        print("stall at the start: first session \(before.count) points, last \(before.last.map(BackfillEndToEndTests.index) ?? -1) "
              + "(stop at \(indexAtStop)); second \(after.count) points (\(backfilled.count) backfilled), first \(secondFirst) "
              + "(start at \(indexAtStart)), first streamed \(streamedFirst) (stall ends at \(indexAtStallEnd ?? -1)), "
              + "holes \(BackfillEndToEndTests.holes(after)), missed \(missed)")
        #expect(BackfillEndToEndTests.holes(before).isEmpty, "the first session holds every sample up to its stop")
        let all = (before + after).map(BackfillEndToEndTests.index)
        #expect(Set(all).count == all.count, "no sample twice")
        #expect(secondFirst <= indexAtStart + 4, "the second session begins at its start (within a simulated clock step): \(secondFirst) for \(indexAtStart)")
        #expect(secondFirst >= indexAtStop, "nothing the board took before the second start: \(secondFirst), stopped at \(indexAtStop)")
        #expect(BackfillEndToEndTests.holes(after).isEmpty, "the second session holds every sample from its start")
        #expect(zip(after, after.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp }, "time order")
        #expect(backfilled.isSuperset(of: secondFirst..<streamedFirst), "the stall's part of the second session is backfilled")
        #expect(streamedFirst >= (indexAtStallEnd ?? 0) - 4, "streamed again once the stall ended: \(streamedFirst)")
        #expect(missed == 0, "nothing marked missing: \(missed)")
    }

    /// A board streaming between sessions (heard though no session records) is not stalled at
    /// the next start, however long after the stop it comes: no gap, no readout.
    @Test("a stream healthy between sessions: no gap at the next start")
    func healthyBetweenSessionsKeepsNoGap() throws {
        try withLinkedBoard(seed: 82) { store, controller, rig, trimmer in try healthyBetweenSessions(store, controller, &rig, &trimmer) }
    }

    func healthyBetweenSessions(_ store: BufferStore, _ controller: SessionController, _ rig: inout FlashLogReadoutRig,
                                _ trimmer: inout BoardLogTrimmer) throws {
        var (rng, now, decoder) = (SeededRandom(seed: 82), Int64(0), FlashLogReadoutRig.bmi160Decoder)
        try controller.start(trigger: .controlAPI, now: 0)
        var second: String?
        var asked = 0
        while now < 12_000_000_000 {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            if second == nil, now >= 8_000_000_000 { second = try controller.start(trigger: .controlAPI, now: now) }
            if second != nil, controller.isWaitingForBackfill(board: "B") { asked += 1 }
            rig.stream(to: now, linkUp: true, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
            if case .recording = controller.state, second == nil, now >= 3_000_000_000 { try controller.stop(trigger: .controlAPI, now: now) }
        }
        try controller.stop(trigger: .controlAPI, now: now)
        let points = try store.dataset(sessionID: second ?? "").points.map(\.point)
        #expect(asked == 0, "no point of the second session waits for the log")
        #expect(!points.isEmpty && points.allSatisfy { !$0.backfilled && $0.missedBefore == 0 }, "streamed, no gap")
    }

    /// Runs `body` with a real buffer, a recorder on it and a board model linked into it as "B".
    func withLinkedBoard(seed: UInt64, _ body: (BufferStore, SessionController, inout FlashLogReadoutRig, inout BoardLogTrimmer) throws -> Void) throws {
        print("StallAtStartTests seed \(seed)")
        let buffer = try RestartableBuffer(label: "stall-at-start")
        defer { buffer.remove() }
        let store = try buffer.open()
        let controller = SessionController(store: store, timeBase: RestartableBuffer.timeBase)
        var trimmer = BoardLogTrimmer()
        var rig = FlashLogReadoutRig.linkedMetaMotionR(tickAtPowerOn: 444_444, into: controller, board: "B", trimmer: &trimmer)
        try body(store, controller, &rig, &trimmer)
    }
}
