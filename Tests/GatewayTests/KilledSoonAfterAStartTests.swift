import Basics
import Buffer
import Foundation
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// A gateway killed (kill -9) a few seconds after a session began, right after another stopped
/// (issue 21; soak seed 2113, PostgreSQL). While a session records, the board's log is read but
/// for its newest 6 s (``SessionController/streamedLogLeftUnread``), so the log the restarted
/// gateway reads for the interrupted session's restart gap begins with the last second of the
/// session before it: samples logged before the gap's stored tail, none of them a twin of it.
/// The readout's first pages hold only those, and with nothing to anchor them they were placed
/// by the board clock read on the new link: off by that reading's latency, and on the restarted
/// gateway's clock. In the soak they were placed 1.25 s late (the two gateways' times of the
/// board's samples agree within 3 ms, so the clock reading was that far off: a loaded debug
/// gateway whose handshake took 1.8 s), among the interrupted session's first, burst-stamped
/// points: 35 were sealed into it as backfilled points, 32 of them twins of the stopped
/// session's last streamed second.
///
/// A board model logs and streams its 100 Hz gyro into a real buffer; its sensors are off
/// between the sessions, as mwgated's boards are; its log is read page by page when the
/// recorder asks.
@Suite("Flash log: a gateway killed soon after a session's start")
struct KilledSoonAfterAStartTests {
    /// The soak's case: the restarted gateway's reading of the board clock is taken in 1.25 s
    /// late, so the samples it alone places are put that much late, and the interrupted
    /// session's stream began with a burst (its first notifications held 300 ms, as a new
    /// stream's first connection events and the board layer's grouping do), so its stored first
    /// second has a step the gap's filling starts from. The same with the restarted gateway's
    /// time base 1.25 s ahead of the killed one's and the clock read in time.
    @Test("placed 1.25 s late by the board clock: no sample of the stopped session goes into the interrupted one")
    func placedLateAfterABurstAtTheStart() throws {
        try expectNoTwins(try run(seed: 2113, clockReadLatency: 1.25, burstAtTheStart: true))
        try expectNoTwins(try run(seed: 2113, restartedClockOffset: 1.25, burstAtTheStart: true))
    }

    /// The system clock stepped 6 s between the two gateways (NTP, or a GNSS correction that
    /// differs by that much): the stopped session's last samples land past the interrupted
    /// session's stored tail (4.8 s), in its restart gap, however the tail was stamped.
    @Test("the restarted clock 6 s ahead: the same")
    func restartedClockStepped() throws {
        try expectNoTwins(try run(seed: 2114, restartedClockOffset: 6, burstAtTheStart: false))
    }

    /// One clock, read in time: the interrupted session's own first samples, streamed in a
    /// burst far from where their ticks put them, are not put in again beside their twins (the
    /// same with the clock read 0.9 s late).
    @Test("the same clock: the restart gap filled, nothing twice")
    func sameClock() throws {
        try expectNoTwins(try run(seed: 2115, burstAtTheStart: true))
        try expectNoTwins(try run(seed: 2113, clockReadLatency: 0.9, burstAtTheStart: true))
    }

    struct Outcome {
        var stopped: [RecordedPoint]
        var interrupted: [RecordedPoint]
        var resumed: [RecordedPoint]
        /// The board's sample index when the gateway was killed and when it was back.
        var killedAt: Int
        var backAt: Int
        var chunks: Int
        var namedChunks: Int
    }

    func expectNoTwins(_ run: Outcome, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let index = BackfillEndToEndTests.index
        let stopped = Set(run.stopped.map(index))
        let interrupted = run.interrupted.map(index)
        let twins = interrupted.filter { stopped.contains($0) }
        let backfilled = run.interrupted.filter(\.backfilled).map(index)
        let first = run.interrupted.first { !$0.backfilled }.map(index) ?? -1
        let early = backfilled.filter { $0 < first }
        let all = run.stopped.map(index) + interrupted + run.resumed.map(index)
        let gap = run.killedAt..<run.backAt
        let stored = Set(all)
        let lost = gap.filter { !stored.contains($0) }
        print("killed soon after a start: stopped session \(run.stopped.count) points (last \(run.stopped.last.map(index) ?? -1)), "
              + "interrupted \(run.interrupted.count) (\(backfilled.count) backfilled, first streamed \(first)), "
              + "resumed \(run.resumed.count); twins of the stopped session \(twins.count) \(twins.prefix(8)), "
              + "backfilled before the interrupted session's first point \(early.count), kill gap \(gap) (\(lost.count) lost), "
              + "holes \(BackfillEndToEndTests.holes(run.interrupted).prefix(6))")
        #expect(twins.count == 0, "no sample of the stopped session in the interrupted one: \(twins.count)", sourceLocation: sourceLocation)
        #expect(early.count == 0, "nothing backfilled before the interrupted session's first point: \(early.count)",
                sourceLocation: sourceLocation)
        #expect(Set(all).count == all.count, "no sample twice", sourceLocation: sourceLocation)
        #expect(BackfillEndToEndTests.holes(run.interrupted).isEmpty, "the interrupted session holds every sample from its first on, in order",
                sourceLocation: sourceLocation)
        #expect(lost.isEmpty, "every sample of the kill's gap is stored: \(lost.count) lost", sourceLocation: sourceLocation)
        #expect(Set(backfilled).isSuperset(of: gap.dropFirst(2)), "the kill's gap is backfilled", sourceLocation: sourceLocation)
        #expect(run.namedChunks == run.chunks, "the records document names the correction chunks", sourceLocation: sourceLocation)
    }

    // swiftlint:disable:next function_body_length
    /// Session one from 0 to 16.5 s, session two from 16.7 s; the gateway is killed at 21.5 s
    /// and back at 23 s, when it starts session three (its board's link handshake restarts the
    /// gyro); the log is read for the restart gap while session three records, until 60 s. The
    /// restarted gateway's time base runs `restartedClockOffset` s ahead of the killed one's,
    /// and its reading of the board's clock is taken in `clockReadLatency` s late.
    func run(seed: UInt64, restartedClockOffset: Double = 0, clockReadLatency: Double = 0, burstAtTheStart: Bool) throws -> Outcome {
        print("KilledSoonAfterAStartTests seed \(seed)")
        let buffer = try RestartableBuffer(label: "killed-after-start")
        defer { buffer.remove() }
        var store = try buffer.open()
        var controller = SessionController(store: store, timeBase: RestartableBuffer.timeBase)
        var (rng, now, trimmer) = (SeededRandom(seed: seed), Int64(0), BoardLogTrimmer())
        var rig = FlashLogReadoutRig.linkedMetaMotionR(tickAtPowerOn: 222_222, into: controller, board: "B", trimmer: &trimmer)
        rig.readsStreamedPartAt = 100
        let (gyro, decoder) = (FlashLogReadoutRig.gyro100, FlashLogReadoutRig.bmi160Decoder)
        let stopAt: Int64 = 16_500_000_000, startAt: Int64 = 16_700_000_000, burstEnds: Int64 = 17_000_000_000
        let killAt: Int64 = 21_500_000_000, backAt: Int64 = 23_000_000_000, end: Int64 = 60_000_000_000
        let stopped = try controller.start(trigger: .controlAPI, now: 0)
        var interrupted: String?
        var resumed: String?
        var (killed, back) = (false, false)
        var (indexAtKill, indexBack) = (0, 0)
        while now < end {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            if interrupted == nil, now >= stopAt, case .recording = controller.state {
                // The stop turns the board's sensors off until the next session.
                try controller.stop(trigger: .controlAPI, now: now)
                for p in Commands.stop(.gyro, mode: .single, chip: .bmi160) { _ = rig.board.write(p.bytes) }
            }
            if interrupted == nil, now >= startAt {
                interrupted = try controller.start(trigger: .controlAPI, now: now)
                for p in Commands.startGyro(gyro, mode: .single, chip: .bmi160) { _ = rig.board.write(p.bytes) }
            }
            if !killed, now >= killAt {
                // kill -9: nothing more reaches the store; the board logs on.
                killed = true
                rig.linkLost()
                _ = rig.board.advance(to: UInt64(now))
                indexAtKill = Int(rig.board.state(.gyro).nextSampleIndex)
            }
            if killed, !back {
                guard now >= backAt else {
                    _ = rig.board.advance(to: UInt64(now))
                    continue
                }
                // A new process, its time base on another GNSS correction: recovery, the restart
                // gaps, a session, the board's link (its handshake reads the clock, starts the gyro).
                back = true
                _ = rig.board.advance(to: UInt64(now))
                indexBack = Int(rig.board.state(.gyro).nextSampleIndex)
                store = try buffer.open()
                #expect(try store.recoverInterruptedSessions() == [interrupted].compactMap { $0 })
                let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000 + Int64(restartedClockOffset * 1e9), monotonicNanoseconds: 0,
                                    systemClockSynchronised: true)
                controller = SessionController(store: store, timeBase: base)
                try controller.adoptAwaitingSurveyFromStore()
                controller.expectRestartBackfill(try store.restartGaps())
                controller.expectBackfill(board: "B", true)
                resumed = try controller.start(trigger: .controlAPI, now: now)
                rig.clockReadLatency = Int64(clockReadLatency * 1e9)
                rig.links(gyro: gyro, into: controller, board: "B", trimmer: &trimmer)
            }
            let lag: Int64 = burstAtTheStart && !killed && now >= startAt && now < burstEnds ? 300_000_000 : 0
            rig.stream(to: now, lag: lag, linkUp: true, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
        }
        #expect(!controller.hasPendingCorrections(sessionID: interrupted ?? ""), "the restart gap is filled")
        try controller.stop(trigger: .controlAPI, now: now)
        func points(_ id: String?) throws -> [RecordedPoint] {
            guard let id else { return [] }
            return try store.dataset(sessionID: id).points.map(\.point).sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp }
        }
        let record = try controller.submitSurvey(.noHazard, sessionID: interrupted ?? "", submittedAt: Date(timeIntervalSince1970: 1_800_000_100))
        return Outcome(stopped: try points(stopped), interrupted: try points(interrupted), resumed: try points(resumed),
                       killedAt: indexAtKill, backAt: indexBack, chunks: try store.dataset(sessionID: interrupted ?? "").chunkNames.count,
                       namedChunks: record.gscopeData.count)
    }
}
