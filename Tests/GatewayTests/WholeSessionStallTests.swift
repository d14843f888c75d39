import Basics
import Buffer
import Foundation
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// A board linked but stalled through a whole session (issue 21): its stream (and the readout of
/// its log, which comes through the same notifications) is silent from the first session's last
/// seconds until after the second one stopped, so the second session gets no point of it. Its
/// log holds every sample it took in that session; before, the stop kept no gap for a board with
/// no point, and the session had nothing of it. A board model logs and streams its 100 Hz gyro
/// into a real buffer; its log is read when the recorder asks, page by page.
@Suite("Flash log: a board stalled through a whole session")
struct WholeSessionStallTests {
    /// Whether the board streams between sessions (`stream_between_sessions`, `mode = "always"`)
    /// or has its sensors off then (the default: the stop turns them off, the start on).
    enum BetweenSessions { case streaming, sensorsOff }

    /// How the gateway that recorded the second session ends before the board's log is read.
    enum Restart { case none, killed, shutDown }

    @Test("streaming between sessions: the second session holds every sample, all backfilled, none missing")
    func streamingBetweenSessions() throws {
        try run(seed: 91, between: .streaming)
    }

    @Test("sensors off between sessions: the second session holds every sample from its sensors' start")
    func sensorsOffBetweenSessions() throws {
        try run(seed: 92, between: .sensorsOff)
    }

    /// The stream watchdog drops a silent board's link (no data 1 s after a stream restart): at
    /// the stop the stalled board is between links, away rather than linked.
    @Test("sensors off, the board's link dropped at the stop: the same")
    func linkDroppedAtTheStop() throws {
        try run(seed: 93, between: .sensorsOff, linkDownAtTheStop: true)
    }

    /// The gateway is killed (kill -9) after the second stop, before the board's log is read: the
    /// gap was kept with the session's end, with where it begins and that it opens the session,
    /// and the restarted gateway fills it when the board streams in its next session.
    @Test("the gateway killed after the stop: the restarted one fills the session, none marked missing")
    func killedAfterTheStop() throws {
        try run(seed: 94, between: .streaming, restart: .killed)
        try run(seed: 95, between: .sensorsOff, restart: .killed)
    }

    /// The second session is stopped by a shutdown (SIGTERM: the boards are stopped first, the
    /// session sealed once they have), and the next gateway reads the log.
    @Test("the second session stopped by a shutdown: the next gateway fills it, none marked missing")
    func shutDownAtTheStop() throws {
        try run(seed: 96, between: .sensorsOff, restart: .shutDown)
        try run(seed: 97, between: .streaming, restart: .shutDown)
    }

    /// With the sensors off between sessions a stall that begins between them cannot be seen
    /// then (nothing is sampled, so nothing is lost), and no gap of the board waits for its log
    /// at the next start: the start turns its sensors on, and it measures and logs from then
    /// while its notifications are withheld. Its stream's first point counted no gap, so what
    /// it took until then was lost, unmarked; with no point by the stop, all of it.
    @Test("sensors off, the stall begun between sessions: the next session holds every sample from its sensors' start")
    func stallBegunBetweenSessionsWithTheSensorsOff() throws {
        try run(seed: 98, between: .sensorsOff, stallAt: 7_500_000_000)
        try run(seed: 99, between: .sensorsOff, stallAt: 7_500_000_000, stallEnds: 10_000_000_000)
    }

    /// A stall across the start (sensors off between sessions) that ends during the session,
    /// its log's readout held up until after the stop: the stop commits the points held for the
    /// log and keeps the gap, which opens the session; the gateway is killed before the log is
    /// read. The sensors start 100 ms after the session (30-130 ms on real boards): counted
    /// from the start, a restarted gateway marked that as 9 samples missing.
    @Test("sensors off, the stall ending in the session, killed before the log is read: no start-up marked missing")
    func heldOpeningGapAcrossARestart() throws {
        try run(seed: 101, between: .sensorsOff, restart: .killed, stallEnds: 10_000_000_000, readoutStallEnds: 14_000_000_000)
        try run(seed: 102, between: .sensorsOff, restart: .killed, stallAt: 7_500_000_000, stallEnds: 10_000_000_000,
                readoutStallEnds: 14_000_000_000)
    }

    // swiftlint:disable:next function_body_length cyclomatic_complexity
    func run(seed: UInt64, between: BetweenSessions, restart: Restart = .none, linkDownAtTheStop: Bool = false,
             stallAt: Int64 = 5_000_000_000, stallEnds: Int64 = 15_000_000_000, readoutStallEnds: Int64? = nil) throws {
        print("WholeSessionStallTests seed \(seed), \(between), restart \(restart), link down at the stop \(linkDownAtTheStop), "
              + "stalled \(stallAt / 1_000_000)-\(stallEnds / 1_000_000) ms")
        let buffer = try RestartableBuffer(label: "whole-session-stall")
        defer { buffer.remove() }
        var (store, controller) = try buffer.openRecorder(backfilling: "B")
        var (rng, now, trimmer) = (SeededRandom(seed: seed), Int64(0), BoardLogTrimmer())
        var rig = FlashLogReadoutRig.linkedMetaMotionR(tickAtPowerOn: 444_444, into: controller, board: "B", trimmer: &trimmer)
        let decoder = FlashLogReadoutRig.bmi160Decoder
        let first = try controller.start(trigger: .controlAPI, now: 0)
        // Stalled (by default) from 5 s to 15 s; the first session stops at 7 s, the second records
        // from 8 s to 12 s; a restarted gateway is back at 12.5 s and records a third session from
        // 20 s to 30 s.
        let stopAt: Int64 = 7_000_000_000, startAt: Int64 = 8_000_000_000, secondStopAt: Int64 = 12_000_000_000
        let restartAt: Int64 = 12_500_000_000, thirdAt: Int64 = 20_000_000_000, thirdStopAt: Int64 = 30_000_000_000
        let end: Int64 = 40_000_000_000
        // With `linkDownAtTheStop`: the watchdog drops the link at 11 s; it is back after the stop.
        let dropAt: Int64 = 11_000_000_000, backAt: Int64 = 13_000_000_000
        var second: String?, third: String?
        var stopped = false, secondStopped = false, restarted = false, thirdStopped = false, linkUp = true, sensorsStarted = false
        var indexAtStop = 0, indexAtStart = 0, indexAtSecondStop = 0

        while now < end {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            rig.board.faults.streamStalled = now >= stallAt && now < stallEnds
            rig.board.faults.readoutStalled = now >= stallAt && now < readoutStallEnds ?? stallEnds
            if !stopped, now >= stopAt {
                stopped = true
                rig.stream(to: now, linkUp: linkUp, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
                try controller.stop(trigger: .controlAPI, now: now)
                indexAtStop = Int(rig.board.state(.gyro).nextSampleIndex)
                if between == .sensorsOff { Self.sensorsOff(&rig, detaching: controller, now: now) }
            }
            if second == nil, now >= startAt {
                // The board is at the start: what it takes from now on is the session's.
                rig.stream(to: now, linkUp: linkUp, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
                second = try controller.start(trigger: .controlAPI, now: now)
                indexAtStart = Int(rig.board.state(.gyro).nextSampleIndex)
            }
            if between == .sensorsOff, !sensorsStarted, now >= startAt + Self.sensorStartUp {
                // Its sensors start a while after the session (the start's writes, their start-up).
                sensorsStarted = true
                rig.stream(to: now, linkUp: linkUp, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
                Self.sensorsOn(&rig, attaching: controller, now: now)
                indexAtStart = Int(rig.board.state(.gyro).nextSampleIndex)
            }
            if linkDownAtTheStop, linkUp, now >= dropAt, now < backAt {
                linkUp = false
                rig.goesAway(from: controller, board: "B", now: now)
            }
            if !secondStopped, now >= secondStopAt {
                secondStopped = true
                rig.stream(to: now, linkUp: linkUp, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
                // A shutdown asked the boards to stop 300 ms before the seal.
                let shutdown = restart == .shutDown
                try controller.stop(trigger: shutdown ? .shutdown : .controlAPI, now: now,
                                    boardsStoppedAt: shutdown ? now - 300_000_000 : nil)
                if shutdown { controller.sealWhatTheGapsReadoutsBrought() }
                indexAtSecondStop = Int(rig.board.state(.gyro).nextSampleIndex)
                // A board between links gets no stop: its next link's handshake stops its sensors.
                if linkUp, between == .sensorsOff || shutdown { Self.sensorsOff(&rig, detaching: controller, now: now) }
            }
            if restart != .none, !restarted, now >= restartAt {
                // A new process: what the stops kept is in the store.
                restarted = true
                (store, controller) = try buffer.openRecorder(backfilling: "B")
                if linkUp {
                    rig.linkLost()
                    Self.relink(&rig, between: between, into: controller, trimmer: &trimmer)
                }
            }
            if !linkUp, now >= backAt {
                linkUp = true
                Self.relink(&rig, between: between, into: controller, trimmer: &trimmer)
            }
            if restart != .none, third == nil, now >= thirdAt {
                third = try controller.start(trigger: .controlAPI, now: now)
                if between == .sensorsOff { Self.sensorsOn(&rig, attaching: controller, now: now) }
            }
            if third != nil, !thirdStopped, now >= thirdStopAt {
                thirdStopped = true
                try controller.stop(trigger: .controlAPI, now: now)
                if between == .sensorsOff { Self.sensorsOff(&rig, detaching: controller, now: now) }
            }
            rig.stream(to: now, linkUp: linkUp, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
        }
        let secondID = second ?? ""
        #expect(!controller.hasPendingCorrections(sessionID: first), "the first session's stall is filled")
        #expect(!controller.hasPendingCorrections(sessionID: secondID), "the second session's gap is filled")
        func points(_ session: String?) throws -> [RecordedPoint] {
            guard let session else { return [] }
            return try store.dataset(sessionID: session).points.map(\.point).sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp }
        }
        let (before, during, after) = (try points(first), try points(second), try points(third))
        let indices = during.map(BackfillEndToEndTests.index)
        let missed = during.reduce(0) { $0 + $1.missedBefore }
        print("whole-session stall: first session \(before.count) points, last \(before.last.map(BackfillEndToEndTests.index) ?? -1) "
              + "(stop at \(indexAtStop)); second \(during.count) points (\(during.filter(\.backfilled).count) backfilled), "
              + "\(indices.first ?? -1)...\(indices.last ?? -1) (start at \(indexAtStart), stop at \(indexAtSecondStop)), "
              + "holes \(BackfillEndToEndTests.holes(during)), missed \(missed); third \(after.count) points, "
              + "holes \(BackfillEndToEndTests.holes(after)), missed \(after.reduce(0) { $0 + $1.missedBefore })")
        #expect(BackfillEndToEndTests.holes(before).isEmpty, "the first session holds every sample up to its stop")
        #expect((before.last.map(BackfillEndToEndTests.index) ?? 0) >= indexAtStop - 2, "the first session reaches its stop")
        let all = (before + during + after).map(BackfillEndToEndTests.index)
        #expect(Set(all).count == all.count, "no sample twice")
        let wholeSession = stallEnds > secondStopAt
        let firstStreamed = during.first { !$0.backfilled }.map(BackfillEndToEndTests.index) ?? Int.max
        #expect(!during.isEmpty && during.allSatisfy { $0.backfilled == (BackfillEndToEndTests.index($0) < firstStreamed) },
                "the stall's part of the second session is the board's log: \(during.filter(\.backfilled).count) of \(during.count)")
        #expect(wholeSession == (firstStreamed == Int.max), "streamed again only once the stall ended: \(firstStreamed)")
        #expect(BackfillEndToEndTests.holes(during).isEmpty, "every sample of the second session once, in time order")
        #expect((indexAtStart - 1...indexAtStart + 2).contains(indices.first ?? -1),
                "from the start: \(indices.first ?? -1), the board at \(indexAtStart)")
        #expect((indexAtSecondStop - 3...indexAtSecondStop).contains(indices.last ?? -1),
                "to the stop: \(indices.last ?? -1), the board at \(indexAtSecondStop)")
        #expect(missed == 0, "nothing marked missing: \(missed)")
        #expect(zip(during, during.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp }, "time order")
        if third != nil {
            #expect(!after.isEmpty && BackfillEndToEndTests.holes(after).isEmpty, "the third session holds every sample")
            #expect(after.allSatisfy { $0.missedBefore == 0 }, "nothing marked missing in the third session")
        }
        let record = try controller.submitSurvey(.noHazard, sessionID: secondID, submittedAt: Date(timeIntervalSince1970: 1_800_000_100))
        #expect(Set(record.gscopeData) == Set(try store.dataset(sessionID: secondID).chunkNames), "the record names the correction chunks")
    }

    /// How long after the start a board with its sensors off between sessions starts them.
    static let sensorStartUp: Int64 = 100_000_000

    /// The stop turns the board's sensors off (its log stays on) and the recorder lets it go.
    static func sensorsOff(_ rig: inout FlashLogReadoutRig, detaching controller: SessionController, now: Int64) {
        for packet in Commands.stop(.gyro, mode: .single, chip: .bmi160) { _ = rig.board.write(packet.bytes) }
        controller.detach(board: "B", now: now)
    }

    /// The start turns the board's sensors on and the recorder takes its new stream.
    static func sensorsOn(_ rig: inout FlashLogReadoutRig, attaching controller: SessionController, now: Int64) {
        for packet in Commands.startGyro(FlashLogReadoutRig.gyro100, mode: .single, chip: .bmi160) { _ = rig.board.write(packet.bytes) }
        controller.attach(board: "B", gyroRateHertz: 100, now: now)
    }

    /// The board links again between sessions: streaming, as at any link; with its sensors off,
    /// its clock read, its logging on and its sensors stopped, not attached to the recorder.
    static func relink(_ rig: inout FlashLogReadoutRig, between: BetweenSessions, into controller: SessionController,
                       trimmer: inout BoardLogTrimmer) {
        guard between == .sensorsOff else {
            return rig.links(gyro: FlashLogReadoutRig.gyro100, into: controller, board: "B", trimmer: &trimmer)
        }
        rig.readClock()
        let stop = Commands.stop(.gyro, mode: .single, chip: .bmi160)
        for packet in LoggingCommands.start(overwriteWhenFull: true) + stop { _ = rig.board.write(packet.bytes) }
        trimmer.forgetMark()
    }
}
