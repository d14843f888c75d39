import Basics
import Buffer
import Foundation
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// A board out of range across a session's stop and the next one's start (issue 21: the soak's
/// out-of-range fault lost 411 samples at seed 11): it keeps measuring and logging while no
/// link carries its stream. What it took before the stop belongs to the stopped session (a
/// correction its records document names), what it took after the next start to the new one;
/// both come from its flash log once it is back. A board model logs and streams its 100 Hz gyro
/// into sessions on a real buffer; its log is read when the recorder asks, page by page.
@Suite("Flash log: a board away across sessions")
struct AwayAcrossSessionsTests {
    @Test func whatTheBoardTookAwayIsFilledIntoBothSessions() throws {
        try run(seed: 51, killedAfterTheStop: false)
    }

    /// The gateway is killed after the stop, before the board is back: the stopped session's
    /// gap was kept in the store, and the restarted gateway fills it (it does not know the board
    /// was away, so the second session begins where the board returns).
    @Test func aGapKeptAtTheStopSurvivesARestart() throws {
        try run(seed: 52, killedAfterTheStop: true)
    }

    /// The second session stops 2.5 s after the board is back, while the readout of its log
    /// (both stretches) still runs: the second session's gap is kept like the first's, though
    /// the first's still waits, and both are filled when the log arrives (soak seed 11: 395
    /// samples of the second session lost).
    @Test func aSecondStopWhileTheFirstGapIsStillReadKeepsItsOwnGap() throws {
        try run(seed: 54, killedAfterTheStop: false, secondStopAfterBack: 2_500_000_000)
    }

    // swiftlint:disable:next function_body_length
    func run(seed: UInt64, killedAfterTheStop: Bool, secondStopAfterBack: Int64? = nil) throws {
        print("AwayAcrossSessionsTests seed \(seed)")
        let dir = NSTemporaryDirectory() + "mwgate-away-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = BufferStore.path(inStateDirectory: dir)
        let storeConfiguration = BufferStore.Configuration(userID: "00000000-0000-4000-8000-000000000001")
        var store = try BufferStore(path: path, configuration: storeConfiguration)
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        var controller = SessionController(store: store, timeBase: base)
        var board = SimulatedBoard(profile: .metaMotionR, seed: 9)
        board.tickAtPowerOn = 222_222
        board.flashLog.pageEntries = 128
        let ids = LoggingCommands.triggers(.gyro, chip: .bmi160).flatMap { board.write($0.bytes).notifications }.compactMap { reply -> UInt8? in
            guard case .success(.triggerAllocated(let id))? = LogNotificationDecoder.decode(reply) else { return nil }
            return id
        }
        var rig = FlashLogReadoutRig(board: board, loggers: [.gyro: LoggerIDs(xy: ids[0], z: ids[1])], revision: 2)
        let gyro = GyroConfiguration(rate: .hz100, range: .dps2000)
        rig.handshake(gyro: gyro, chip: .bmi160)
        controller.expectBackfill(board: "B", true)
        controller.attach(board: "B", gyroRateHertz: 100)
        let first = try controller.start(trigger: .controlAPI, now: 0)
        let decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps2000, accelerometerRange: .g4)
        var rng = SeededRandom(seed: seed)
        var now: Int64 = 0
        var trimmer = BoardLogTrimmer()
        var second: String?
        // Away from 5 s to 11 s; the first session stops at 7 s, the second starts at 8 s.
        let goneAt: Int64 = 5_000_000_000, stopAt: Int64 = 7_000_000_000, startAt: Int64 = 8_000_000_000
        let backAt: Int64 = 11_000_000_000, end: Int64 = 30_000_000_000
        var away = false, back = false, killed = false
        var indexAtStop = 0, indexAtStart = 0, indexAtSecondStop: Int?

        while now < end {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            if !away, now >= goneAt {
                away = true
                rig.goesAway(from: controller, board: "B", now: now)
            }
            if second == nil, now >= stopAt, case .recording = controller.state {
                try controller.stop(trigger: .controlAPI, now: now)
                indexAtStop = Int(rig.board.state(.gyro).nextSampleIndex)
            }
            if killedAfterTheStop, !killed, now >= stopAt + 500_000_000 {
                // kill -9 and a new process: what the stop kept is in the store.
                killed = true
                store = try BufferStore(path: path, configuration: storeConfiguration)
                controller = SessionController(store: store, timeBase: base)
                try controller.adoptAwaitingSurveyFromStore()
                controller.expectRestartBackfill(try store.restartGaps())
                controller.expectBackfill(board: "B", true)
            }
            if second == nil, now >= startAt {
                second = try controller.start(trigger: .controlAPI, now: now)
                indexAtStart = Int(rig.board.state(.gyro).nextSampleIndex)
            }
            if away, !back, now >= backAt {
                back = true
                rig.links(gyro: gyro, into: controller, board: "B", trimmer: &trimmer)
            }
            if let after = secondStopAfterBack, back, indexAtSecondStop == nil, now >= backAt + after {
                #expect(rig.downloader != nil, "the readout still runs at the second stop")
                try controller.stop(trigger: .controlAPI, now: now)
                indexAtSecondStop = Int(rig.board.state(.gyro).nextSampleIndex)
            }
            rig.stream(to: now, linkUp: !away || back, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
        }
        #expect(!controller.isWaitingForRestartBackfill(board: "B"), "the sessions' gaps are filled")
        if indexAtSecondStop == nil { try controller.stop(trigger: .controlAPI, now: now) }
        let firstRecord = try controller.submitSurvey(.noHazard, sessionID: first, submittedAt: Date(timeIntervalSince1970: 1_800_000_100))
        let firstPoints = try store.dataset(sessionID: first).points.map(\.point).sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp }
        // A session's corrections come after its chunks: in time order.
        let secondPoints = try store.dataset(sessionID: second ?? "").points.map(\.point)
            .sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp }
        let firstLast = firstPoints.last.map(BackfillEndToEndTests.index) ?? 0
        let secondFirst = secondPoints.first.map(BackfillEndToEndTests.index) ?? 0
        print("away across sessions: first \(firstPoints.count) points (\(firstPoints.filter(\.backfilled).count) backfilled), "
              + "last \(firstLast) (stop at \(indexAtStop)), holes \(BackfillEndToEndTests.holes(firstPoints)); second \(secondPoints.count) "
              + "(\(secondPoints.filter(\.backfilled).count) backfilled), first \(secondFirst) (start at \(indexAtStart)), "
              + "holes \(BackfillEndToEndTests.holes(secondPoints))")
        #expect(BackfillEndToEndTests.holes(firstPoints).isEmpty, "the first session holds every sample up to its stop")
        #expect(firstLast >= indexAtStop - 2, "the first session reaches its stop: \(firstLast) of \(indexAtStop)")
        #expect(Set(try store.dataset(sessionID: first).chunkNames) == Set(firstRecord.gscopeData), "its record names the correction")
        let all = (firstPoints + secondPoints).map(BackfillEndToEndTests.index)
        #expect(Set(all).count == all.count, "no sample twice")
        guard !killedAfterTheStop else { return }
        #expect(BackfillEndToEndTests.holes(secondPoints).isEmpty, "the second session holds every sample from its start")
        #expect(secondFirst <= indexAtStart + 4, "the second session begins at its start (within a simulated clock step): \(secondFirst) for \(indexAtStart)")
        if let indexAtSecondStop, let secondLast = secondPoints.last.map(BackfillEndToEndTests.index) {
            #expect(secondLast >= indexAtSecondStop - 2, "the second session reaches its stop: \(secondLast) of \(indexAtSecondStop)")
        }
    }
}
