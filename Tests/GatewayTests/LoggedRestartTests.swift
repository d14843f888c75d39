import Basics
import Buffer
import Foundation
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// A logged session (800 Hz gyro, beyond the link: the board logs to flash, nothing streams;
/// issue 21 items 3 and 5) survives the gateway going away: killed (kill -9, power loss) while
/// the session records or while its stop reads the log, shut down, or restarted while a board
/// is away at the stop. A board model logs into its flash while a recorder on a real buffer
/// (SQLite and segment journal) reads its log page by page, storing each page before the board
/// deletes it; the recorder and store are dropped without a stop (kill -9) or after one, a new
/// one recovers, and when the board is back its log is read: every sample it took for the
/// session is in the session once, in order, marked backfilled.
@Suite("Logged sessions across a gateway restart")
struct LoggedRestartTests {
    /// How the gateway goes.
    enum Departure {
        /// kill -9 once `pages` pages are stored, before the last one is deleted on the board.
        case killedAfterStoringPage(Int)
        /// kill -9 at `seconds`.
        case killedAt(Double)
        /// The stop begins at `stopAt` s (sensors and log stopped, the log read to the end) and the
        /// gateway is killed once `pages` more pages are stored, before the last is deleted.
        case killedReadingAtTheStop(stopAt: Double, pages: Int)
        /// The board goes away at `awayAt` s; the session stops at `stopAt` s without it and the
        /// gateway restarts before it is back.
        case restartedWhileAwayAtTheStop(awayAt: Double, stopAt: Double)
        /// Graceful shutdown at `seconds` while the session records (the logs not read to the end).
        case shutDownAt(Double)
        /// The board goes away at `awayAt` s; the session stops at `stopAt` s without it, its
        /// survey goes in at once, and the board is back 30 s later (no restart).
        case awayAtTheStopSurveyFirst(awayAt: Double, stopAt: Double)
    }

    static let gyro = GyroConfiguration(rate: .hz800, range: .dps2000)
    static let board = "B"

    @Test func killedMidSessionRightAfterStoringAPageThatIsStillOnTheBoard() throws {
        let run = try record(.killedAfterStoringPage(8), seed: 61)
        try check(run, endsAt: .boardBack)
    }

    @Test func killedMidSessionAtARandomMoment() throws {
        let run = try record(.killedAt(4.3), seed: 62)
        try check(run, endsAt: .boardBack)
    }

    @Test func killedWhileTheStopReadsTheLog() throws {
        let run = try record(.killedReadingAtTheStop(stopAt: 3, pages: 3), seed: 63)
        try check(run, endsAt: .boardBack)
    }

    @Test func restartedWhileABoardIsAwayAtTheStop() throws {
        let run = try record(.restartedWhileAwayAtTheStop(awayAt: 2.5, stopAt: 3.5), seed: 64)
        try check(run, endsAt: .theStop)
    }

    @Test func shutDownMidSession() throws {
        let run = try record(.shutDownAt(3.2), seed: 65)
        try check(run, endsAt: .theStop)
    }

    /// The rest of the log comes after the survey: it revises the session's records document.
    @Test func aBoardBackThirtySecondsAfterTheSurveyRevisesTheRecord() throws {
        let run = try record(.awayAtTheStopSurveyFirst(awayAt: 2.5, stopAt: 3.5), seed: 66)
        try check(run, endsAt: .theStop)
        let record = try #require(run.record)
        #expect(record.gscopeData == run.chunkNames, "the record names every chunk, in seal order")
        #expect(record.revision > 0 && record.pointCount == run.points.count, "revised: \(record.revision), \(record.pointCount) points")
    }

    struct Run {
        var points: [RecordedPoint]
        /// Entries the board wrote in all, and by the session's end (the stop, or the board's return).
        var written: Int
        var writtenByTheStop: Int
        var onBoard: Int
        var restsLeft: Int
        var restartGaps: Int
        /// The session's records document when its survey went in, as the store has it now.
        var record: RecordsDocument?
        var chunkNames: [String] = []
    }

    enum End { case boardBack, theStop }

    func check(_ run: Run, endsAt end: End) throws {
        let indices = run.points.map { UInt64(UInt16(bitPattern: Int16((Double($0.gyroscope.x) * 16.4).rounded()))) }
        let steps = zip(run.points, run.points.dropFirst()).map { $1.gyroscope.timestamp - $0.gyroscope.timestamp }
        let wrong = zip(run.points, indices).filter { point, index in
            let raw = RawVector(x: Int16((Double(point.gyroscope.x) * 16.4).rounded()), y: Int16((Double(point.gyroscope.y) * 16.4).rounded()),
                                z: Int16((Double(point.gyroscope.z) * 16.4).rounded()))
            let signal = SimulatedBoard.signal(.gyro, seed: 7, index: index)
            return raw != RawVector(x: signal.x, y: signal.y, z: signal.z)
        }.count
        print("LoggedRestartTests: \(run.points.count) points, \(run.written) entries written (\(run.writtenByTheStop) by the end), "
              + "steps \(steps.min() ?? 0)...\(steps.max() ?? 0) ms, \(run.onBoard) left on the board")
        #expect(!run.points.isEmpty)
        #expect(indices.first == 0, "from the board's first sample")
        #expect(zip(indices, indices.dropFirst()).allSatisfy { $1 == $0 + 1 }, "every sample once, in order")
        #expect(wrong == 0, "every value is the board's signal")
        #expect(steps.allSatisfy { $0 > 0 && $0 < 1.25 + 2 * BoardTicks.millisecondsPerTick }, "time order, no gap")
        #expect(run.points.allSatisfy { $0.backfilled }, "marked as from the board's log")
        switch end {
        case .boardBack:
            // The board logged until the restarted gateway stopped its sensors: all of it is the session's.
            #expect(run.points.count * 2 == run.written, "\(run.points.count) points, \(run.written) entries written")
        case .theStop:
            // What it took up to the stop: a sample within a tick (1.46 ms) of the stop may be
            // placed on the other side of it.
            #expect((-1...2).contains(run.writtenByTheStop / 2 - run.points.count),
                    "\(run.points.count) points, \(run.writtenByTheStop) entries written by the stop")
        }
        #expect(run.onBoard == 0, "the log is cleared once stored")
        #expect(run.restsLeft == 0, "the session waits for nothing more")
        #expect(run.restartGaps == 0, "a logged board gets no restart gap (its log is the session)")
    }

    // swiftlint:disable:next function_body_length cyclomatic_complexity
    func record(_ departure: Departure, seed: UInt64) throws -> Run {
        print("LoggedRestartTests seed \(seed)")
        let buffer = try RestartableBuffer(label: "logged-restart")
        defer { buffer.remove() }
        var store = try buffer.open()
        let base = RestartableBuffer.timeBase
        var configuration = SessionController.Configuration()
        configuration.recordsLogged = true
        var controller = SessionController(store: store, timeBase: base, configuration: configuration)
        var board = SimulatedBoard(profile: .metaMotionR, seed: 7)
        board.tickAtPowerOn = 333_333
        board.flashLog.pageEntries = 128
        var rig = FlashLogReadoutRig.loggingGyro(of: board)
        rig.loggedGyroScale = Self.gyro.range.scale
        let sessionID = try controller.start(trigger: .controlAPI, now: 0)
        controller.attach(board: Self.board, gyroRateHertz: 800)
        var rng = SeededRandom(seed: seed)
        var now: Int64 = 20_000_000
        // The board's link: its clock read, its gyro logged (not streamed) from 20 ms on.
        rig.handshake(logging: Self.gyro, now: UInt64(now))

        var alive = true, linkUp = true, stopping = false, stopped = false, back = false
        var goneAt: Int64?, backAt: Int64?, readoutBegunAt: Int64?
        var writtenByTheStop = 0
        var lastReadoutEnd: Int64 = 0
        var end: Int64 = 40_000_000_000
        if case .awayAtTheStopSurveyFirst = departure { end = 300_000_000_000 }

        func restart() throws {
            // A new process: recovery, what the store kept, the board's next link.
            store = try buffer.open()
            _ = try store.recoverInterruptedSessions()
            controller = SessionController(store: store, timeBase: base, configuration: configuration)
            try controller.adoptAwaitingSurveyFromStore()
            controller.expectRestartBackfill(try store.restartGaps())
            controller.expectLoggedRests(try store.loggedRests())
            alive = true
        }
        func kill() {
            // kill -9: nothing more is written or sent, the link is gone; the board logs on.
            alive = false
            linkUp = false
            rig.linkLost()
            writtenByTheStop = rig.board.flashLog.written
            goneAt = now
        }

        while now < end {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            for n in rig.board.advance(to: UInt64(now)) where n.bytes.first == 0x0B && alive && linkUp {
                rig.receive(n.bytes, into: controller, board: Self.board, now: now)
            }
            if alive {
                controller.tick(now: now)
                if case .recording = controller.state, linkUp, rig.downloader == nil,
                   now - lastReadoutEnd >= 500_000_000 || stopping {
                    rig.beginReadout(into: controller, board: Self.board, now: now)
                }
                if rig.downloader == nil, rig.readoutEnded { lastReadoutEnd = now; rig.readoutEnded = false }
            }
            switch departure {
            case .killedAfterStoringPage(let pages):
                if alive, goneAt == nil, rig.holdConfirmAfter == nil { rig.holdConfirmAfter = pages }
                if alive, goneAt == nil, rig.confirmHeld { kill() }
            case .killedAt(let seconds):
                if alive, goneAt == nil, now >= Int64(seconds * 1e9) { kill() }
            case .killedReadingAtTheStop(let stopAt, let pages):
                if !stopping, now >= Int64(stopAt * 1e9) {
                    // The stop finishes the download: sensors and log stop, the log is read to the end.
                    stopping = true
                    rig.stopLogging()
                    rig.holdConfirmAfter = rig.pagesStored + pages
                }
                if alive, goneAt == nil, rig.confirmHeld { kill() }
            case .restartedWhileAwayAtTheStop(let awayAt, let stopAt), .awayAtTheStopSurveyFirst(let awayAt, let stopAt):
                if linkUp, !stopped, now >= Int64(awayAt * 1e9) {
                    // Out of range: the recorder detaches it, it logs on.
                    linkUp = false
                    controller.detach(board: Self.board, now: now)
                    rig.linkLost()
                }
                if !stopped, now >= Int64(stopAt * 1e9) {
                    stopped = true
                    controller.keepLoggedRests(boards: controller.detachedBoards, now: now)
                    try controller.stop(trigger: .controlAPI, now: now)
                    writtenByTheStop = rig.board.flashLog.written
                    if case .awayAtTheStopSurveyFirst = departure {
                        try controller.submitSurvey(.noHazard, sessionID: sessionID, submittedAt: Date(timeIntervalSince1970: 1_800_000_010))
                        // Back (below) 3 s after this: 30 s after the survey, with no restart.
                        goneAt = now + 27_000_000_000
                    }
                }
                if case .restartedWhileAwayAtTheStop = departure, stopped, goneAt == nil, now >= Int64((stopAt + 0.5) * 1e9) {
                    alive = false
                    goneAt = now
                }
            case .shutDownAt(let seconds):
                if alive, goneAt == nil, now >= Int64(seconds * 1e9) {
                    // What the pipeline's shutdown does at a logged rate: the logs are not read to the end.
                    controller.keepLoggedRests(boards: [Self.board], now: now)
                    try controller.stop(trigger: .shutdown, now: now)
                    controller.detach(board: Self.board, now: now)
                    kill()
                    writtenByTheStop = rig.board.flashLog.written
                }
            }
            if let gone = goneAt, !alive, now >= gone + 2_000_000_000 {
                try restart()
                linkUp = false
            }
            if alive, let gone = goneAt, !back, now >= gone + 3_000_000_000 {
                // The board is back, idle (no session records): its link stops its sensors and its
                // log; the gateway sees it once that handshake is done and reads the log out.
                back = true
                linkUp = true
                rig.handshakeIdle(now: UInt64(now))
                if case .boardBack = departure.end { writtenByTheStop = rig.board.flashLog.written }
                backAt = now
            }
            if let at = backAt, readoutBegunAt == nil, now >= at + 50_000_000 {
                readoutBegunAt = now
                #expect(controller.hasLoggedRest(board: Self.board), "the restarted gateway knows the session waits for the board's log")
                controller.loggedReadoutBegins(board: Self.board, now: now)
                rig.beginReadout(into: controller, board: Self.board, now: now)
            }
            if readoutBegunAt != nil, rig.downloader == nil, rig.board.flashLog.storedCount == 0 { break }
        }
        let dataset = try store.dataset(sessionID: sessionID)
        let points = dataset.points.filter { $0.board == Self.board }.map(\.point)
        if case .boardBack = departure.end { #expect(writtenByTheStop == rig.board.flashLog.written, "nothing logged after the return") }
        return Run(points: points, written: rig.board.flashLog.written, writtenByTheStop: writtenByTheStop,
                   onBoard: rig.board.flashLog.storedCount, restsLeft: try store.loggedRests().count,
                   restartGaps: try store.restartGaps().count, record: try store.recordsDocument(sessionID: sessionID),
                   chunkNames: dataset.chunkNames)
    }
}

extension LoggedRestartTests.Departure {
    var end: LoggedRestartTests.End {
        switch self {
        case .killedAfterStoringPage, .killedAt, .killedReadingAtTheStop: .boardBack
        case .restartedWhileAwayAtTheStop, .shutDownAt, .awayAtTheStopSurveyFirst: .theStop
        }
    }
}

extension FlashLogReadoutRig {
    /// A link of a logged session: the clock read, logging started, the gyro logged, not streamed.
    mutating func handshake(logging gyro: GyroConfiguration, now: UInt64) {
        _ = board.advance(to: now)
        readClock()
        let subscribe = Commands.subscribe(.gyro, mode: .single, chip: .bmi160)
        for p in LoggingCommands.start(overwriteWhenFull: true) + Commands.startGyro(gyro, mode: .single, chip: .bmi160) where p != subscribe {
            _ = board.write(p.bytes)
        }
    }

    /// A link while no session records: the clock read, the sensors and the log stopped.
    mutating func handshakeIdle(now: UInt64) {
        _ = board.advance(to: now)
        readClock()
        stopLogging()
    }

    /// The sensors and the log stop (a stop's finish, or a link with no session).
    mutating func stopLogging() {
        for p in Commands.stop(.gyro, mode: .single, chip: .bmi160) + [LoggingCommands.stop] { _ = board.write(p.bytes) }
    }
}
