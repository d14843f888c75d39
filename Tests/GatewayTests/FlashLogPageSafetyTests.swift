import Basics
import Buffer
import Foundation
import MetaWear
import MetaWearBoardModel
@testable import Recording
import Testing

/// The board's flash log is cleared only of what is stored (issue 21: "clear what was safely
/// stored in SQLite, never before"): a board model logs its 100 Hz gyro while it streams into a
/// session on a real buffer (SQLite and segment journal), its stream stalls for 8 s, and its
/// log is read out page by page on the live board, each page confirmed (deleted) only when
/// the recorder says what it holds is durable. Faults mid-readout: the link drops, or the
/// gateway is killed (the recorder and store are dropped without a stop, and a new store
/// recovers the session).
@Suite("Flash log: a page is deleted only once it is stored")
struct FlashLogPageSafetyTests {
    /// Where the readout is interrupted.
    enum Fault {
        case none
        /// The link drops after this many confirmed pages; it is back 1 s later.
        case linkDrop(afterPages: Int)
        /// The gateway dies after this many pages were handed to the recorder.
        case kill(afterPages: Int)
        /// The store refuses every write while the page after this many is handed to the
        /// recorder, `times` readouts in a row (a full or failing disk); writes go through again
        /// after that.
        case refusedPage(afterPages: Int, times: Int)
    }

    struct Run {
        /// The session's points as stored (after recovery when killed), in order.
        var points: [RecordedPoint]
        /// Sample indices (the checkable signal's x) still in the board's flash.
        var onBoard: Set<Int>
        /// Index of every sample the board took while the session ran.
        var taken: ClosedRange<Int>
        var pagesConfirmed: Int
        var pagesRefused: Int
        /// Readouts (`0B 06`) started on the board.
        var readouts: Int
        /// The recorder's last store problem.
        var storeError: String?
        /// Entries the first readout after the stall had to read (`0B 85`).
        var entriesToRead: UInt32
        /// Simulated seconds from the stream's return to the gap's points committed.
        var secondsToClose: Double?
        /// Simulated seconds of each trim the recorder asked for.
        var trimsAt: [Double] = []
        /// Entries the board sent from the stall's start until the gap's points were committed.
        var entriesReadForTheGap = 0
        /// Most entries the board's log held before the stall.
        var logPeakBeforeStall = 0
        /// Readouts of the log's streamed part started.
        var streamedReads = 0
    }

    static func index(_ p: RecordedPoint) -> Int { Int(UInt16(bitPattern: Int16((Double(p.gyroscope.x) * 16.4).rounded()))) }

    // swiftlint:disable:next function_body_length
    /// An 8 s stall at `stallAt` s; the readout starts as soon as the points after it wait
    /// (as the pipeline asks for it); the session ends 35 s after the stall. With `trims`,
    /// the recorder's flash log marks and trims (``SessionController/flashLogTrims(now:)``)
    /// are applied to the board as `BoardSession` does.
    /// With `trimPauses`, a trim's start reaches the board a step after its stop and drop
    /// (``BoardLogTrimmer/pausesOverAStep``). With `streamedReads`, the recorder's readouts of
    /// the log's streamed part (``SessionController/streamedLogReads(now:)``) run on the board
    /// as `BoardSession.readStreamedFlashLog(leaving:)` does, their pages waiting while the
    /// recorder says so (the pipeline's pages waiting), and a readout the recorder asks for
    /// while one of them runs starts after it.
    func record(fault: Fault, seed: UInt64, stallAt: Double = 10, trims: Bool = false, trimPauses: Bool = false,
                streamedReads: Bool = false, endsAfterStall: Double = 43) throws -> Run {
        print("FlashLogPageSafetyTests seed \(seed)")
        let dir = NSTemporaryDirectory() + "mwgate-flash-pages-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = BufferStore.path(inStateDirectory: dir)
        let storeConfiguration = BufferStore.Configuration(userID: "00000000-0000-4000-8000-000000000001")
        var store: BufferStore? = try BufferStore(path: path, configuration: storeConfiguration)
        let refusing = RefusingStore(store!)
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        var controller: SessionController? = SessionController(store: refusing, timeBase: base)
        var board = SimulatedBoard(profile: .metaMotionR, seed: 5)
        board.tickAtPowerOn = 123_456
        board.flashLog.pageEntries = 128
        let ids = LoggingCommands.triggers(.gyro, chip: .bmi160).flatMap { board.write($0.bytes).notifications }.compactMap { reply -> UInt8? in
            guard case .success(.triggerAllocated(let id))? = LogNotificationDecoder.decode(reply) else { return nil }
            return id
        }
        for p in LoggingCommands.start(overwriteWhenFull: true) + Commands.startGyro(GyroConfiguration(rate: .hz100, range: .dps2000), mode: .single, chip: .bmi160) {
            _ = board.write(p.bytes)
        }
        controller!.expectBackfill(board: "B", true)
        controller!.attach(board: "B", gyroRateHertz: 100)
        let sessionID = try controller!.start(trigger: .controlAPI, now: 0)
        let decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps2000, accelerometerRange: .g4)
        var rng = SeededRandom(seed: seed)
        var now: Int64 = 0
        var firstTaken: Int?
        var lastTaken = 0
        var downloader: LogDownloader?
        var page: [LoggedSample] = []
        var origins: [UInt8: Int64] = [:]
        var pagesHanded = 0, pagesConfirmed = 0, pagesRefused = 0
        var readoutsRefused = 0
        var linkDownUntil: Int64?
        var killed = false
        var trimmer = BoardLogTrimmer()
        trimmer.pausesOverAStep = trimPauses
        var entriesToRead: UInt32 = 0
        var closedAt: Int64?
        var trimsAt: [Double] = []
        // Of a readout of the streamed part: its entries were logged before this; nil for a full one.
        var loggedBefore: Int64?
        var waitingPage: (samples: [LoggedSample], finished: Bool)?
        var downloadWanted = false
        var entriesReadForTheGap = 0
        var logPeak = 0
        var streamedReadCount = 0
        let loggers: [MotionSensor: LoggerIDs] = [.gyro: LoggerIDs(xy: ids[0], z: ids[1])]

        func readClock() {
            guard let reply = board.write([0x0B, 0x84]).notifications.first, reply.count == 7 else { return }
            let tick = UInt32(reply[2]) | UInt32(reply[3]) << 8 | UInt32(reply[4]) << 16 | UInt32(reply[5]) << 24
            origins[reply[6] & 7] = Int64(board.nanoseconds) - Int64(BoardTicks.milliseconds(UInt64(tick)) * 1e6)
        }
        func send(_ packets: [Packet]) {
            for packet in packets {
                for reply in board.write(packet.bytes).notifications { feed(reply) }
            }
        }
        func pageWaits() -> Bool {
            guard let before = loggedBefore, let c = controller else { return false }
            return c.pageWaitsForTheStream(board: "B", loggedBefore: before)
        }
        func feed(_ bytes: [UInt8]) {
            guard var d = downloader else { return }
            let step = d.receive(bytes, at: Int64(board.nanoseconds))
            downloader = d
            if closedAt == nil, Double(now) / 1e9 >= stallAt, case .success(.entries(let entries))? = LogNotificationDecoder.decode(bytes) {
                entriesReadForTheGap += entries.count
            }
            page += step.samples.filter { $0.sensor == .gyro }.map(\.sample)
            send(step.writes)
            let finished = d.state == .finished
            guard step.pageReady || finished else { return }
            let samples = page
            page = []
            if pageWaits() {
                waitingPage = (samples, finished)
                return
            }
            hand(samples, finished: finished)
        }
        func hand(_ samples: [LoggedSample], finished: Bool) {
            guard var d = downloader, let c = controller else { return }
            if case .refusedPage(let after, let times) = fault, pagesHanded >= after, readoutsRefused < times {
                refusing.refuses = true
            }
            let outcome = c.backfill(board: "B", logged: samples, bootOrigins: origins, complete: finished, now: now)
            refusing.refuses = false
            pagesHanded += 1
            if case .kill(let after) = fault, pagesHanded >= after, !finished {
                killed = true
                return
            }
            if outcome.durable {
                let confirm = d.confirmPage()
                if !confirm.isEmpty { pagesConfirmed += 1 }
                downloader = d
                send(confirm)
            } else {
                // Declined (`BoardSession.declineFlashLogPage()`): the readout ends without the
                // page's confirm, so the board keeps it; the next readout starts with it.
                pagesRefused += 1
                readoutsRefused += 1
                downloader = nil
                return
            }
            if finished { downloader = nil }
            if case .linkDrop(let after) = fault, pagesConfirmed == after, linkDownUntil == nil {
                board.linkLost()
                downloader = nil
                page = []
                waitingPage = nil
                c.detach(board: "B", now: now)
                linkDownUntil = now + 1_000_000_000
            }
        }

        readClock()
        var downloadStarted = false
        let stallEnd = Int64((stallAt + 8) * 1e9)
        while now < Int64((stallAt + endsAfterStall) * 1e9), !killed {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            let t = Double(now) / 1e9
            let stalled = t >= stallAt && t < stallAt + 8
            if let until = linkDownUntil, now >= until {
                linkDownUntil = .max
                controller!.attach(board: "B", gyroRateHertz: 100)
                readClock()
                loggedBefore = nil
                downloader = LogDownloader(revision: 2, loggers: loggers, confirmsPagesItself: false)
                send(downloader!.begin())
            }
            let linkUp = linkDownUntil == nil || linkDownUntil == .max
            for n in board.advance(to: UInt64(now)) {
                if n.bytes.first == 0x0B {
                    if linkUp { feed(n.bytes) }
                    continue
                }
                let event = decoder.decode(n.bytes)
                if case .gyro(let s) = event {
                    let index = Int(UInt16(bitPattern: s.raw(0).x))
                    firstTaken = firstTaken ?? index
                    lastTaken = index
                }
                if linkUp, !stalled, !killed { controller?.ingest(board: "B", event: event, receivedAt: now) }
                if killed { break }
            }
            guard !killed, let c = controller else { break }
            trimmer.resume(on: &board)
            if t < stallAt { logPeak = max(logPeak, board.flashLog.storedCount) }
            if let w = waitingPage, !pageWaits() {
                waitingPage = nil
                hand(w.samples, finished: w.finished)
            }
            c.tick(now: now)
            for trim in trims ? c.flashLogTrims(now: now) : [] where downloader == nil && linkUp {
                if case .trim = trim { trimsAt.append(t) }
                trimmer.apply(trim, to: &board)
            }
            if !downloadStarted, c.isWaitingForBackfill(board: "B"), downloader == nil || loggedBefore != nil {
                downloadStarted = true
                trimmer.forgetMark()
                if downloader == nil {
                    loggedBefore = nil
                    downloader = LogDownloader(revision: 2, loggers: loggers, confirmsPagesItself: false)
                    send(downloader!.begin())
                    entriesToRead = downloader!.progress.total
                } else {
                    downloadWanted = true
                }
            }
            // The recorder asks for the log again (the pipeline's `.download`): a readout
            // starts on this link unless one runs, which the request does not touch; one asked
            // for while the streamed part is read starts after it.
            if c.takeBackfillRequests().contains("B"), downloadStarted, linkUp {
                if downloader == nil { downloadWanted = true } else if loggedBefore != nil { downloadWanted = true }
            }
            if downloadWanted, downloader == nil, linkUp {
                downloadWanted = false
                loggedBefore = nil
                downloader = LogDownloader(revision: 2, loggers: loggers, confirmsPagesItself: false)
                send(downloader!.begin())
                if entriesToRead == 0 { entriesToRead = downloader!.progress.total }
            }
            for _ in streamedReads ? c.streamedLogReads(now: now) : [] where downloader == nil && linkUp && !downloadWanted {
                streamedReadCount += 1
                let leaving = SessionController.streamedLogLeftUnread
                // As `BoardSession.entriesLogged(in:)`: 100 Hz gyro, two entries a sample, a quarter over.
                let left = UInt32((2 * 100 * Double(leaving.components.seconds) * 1.25).rounded(.up))
                loggedBefore = now - Int64(leaving.components.seconds) * 1_000_000_000
                downloader = LogDownloader(revision: 2, loggers: loggers, confirmsPagesItself: false, leavingNewest: left)
                send(downloader!.begin())
            }
            if downloadStarted, closedAt == nil, !c.isWaitingForBackfill(board: "B") { closedAt = now }
        }
        if killed {
            // kill -9: nothing more is written; a new process recovers the session.
            controller = nil
            store = nil
            store = try BufferStore(path: path, configuration: storeConfiguration)
            #expect(try store!.recoverInterruptedSessions() == [sessionID])
        } else {
            // A readout of the streamed part may run at the end; the gap's has finished.
            #expect(downloader == nil || loggedBefore != nil, "the readout finished")
            try controller!.stop(trigger: .controlAPI, now: now)
        }
        let points = try store!.dataset(sessionID: sessionID).points.filter { $0.board == "B" }.map(\.point)
        var onBoard: Set<Int> = []
        for entry in board.flashLog.entries where entry.loggerID == ids[0] { onBoard.insert(Int(entry.data & 0xFFFF)) }
        #expect(downloadStarted, "the points after the stall waited for the log")
        return Run(points: points, onBoard: onBoard, taken: (firstTaken ?? 0)...lastTaken, pagesConfirmed: pagesConfirmed,
                   pagesRefused: pagesRefused, readouts: board.commandLog.filter { $0.starts(with: [0x0B, 0x06]) }.count,
                   storeError: controller?.lastStoreError, entriesToRead: entriesToRead,
                   secondsToClose: closedAt.map { Double($0 - stallEnd) / 1e9 }, trimsAt: trimsAt,
                   entriesReadForTheGap: entriesReadForTheGap, logPeakBeforeStall: logPeak, streamedReads: streamedReadCount)
    }

    /// Every sample the board took from the session's first stored point to its last is stored
    /// (once, in time order) or still in the board's flash.
    func expectNothingLost(_ run: Run, sourceLocation: SourceLocation = #_sourceLocation) {
        let stored = run.points.map(Self.index)
        #expect(Set(stored).count == stored.count, "no sample twice", sourceLocation: sourceLocation)
        #expect(zip(run.points, run.points.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp },
                "time order", sourceLocation: sourceLocation)
        for (a, b) in zip(run.points, run.points.dropFirst()) where a.gyroscope.timestamp >= b.gyroscope.timestamp {
            print("out of order: \(Self.index(a))\(a.backfilled ? "b" : "") at \(a.gyroscope.timestamp), then \(Self.index(b))\(b.backfilled ? "b" : "") at \(b.gyroscope.timestamp)")
        }
        let first = stored.first ?? 0, last = stored.max() ?? 0
        let lost = (first...last).filter { !stored.contains($0) && !run.onBoard.contains($0) }
        #expect(lost.isEmpty, "\(lost.count) samples neither stored nor on the board: \(lost.prefix(10))...", sourceLocation: sourceLocation)
        print("stored \(stored.count) (\(run.points.filter(\.backfilled).count) backfilled), on board \(run.onBoard.count), "
              + "pages confirmed \(run.pagesConfirmed), refused \(run.pagesRefused), lost \(lost.count)")
    }

    @Test func aReadoutWithoutFaultsFillsTheGapAndClearsOnlyWhatIsStored() throws {
        let run = try record(fault: .none, seed: 31)
        expectNothingLost(run)
        #expect(run.points.filter(\.backfilled).count >= 790, "the 8 s stall is filled")
        #expect(run.points.reduce(0) { $0 + $1.missedBefore } == 0, "no gap left")
        #expect(run.pagesConfirmed > 10 && run.pagesRefused == 0)
    }

    /// No trim pauses the board's logging while the session records, so where the log's
    /// streamed part is not read while the stream is healthy (as before the streamed reads), the
    /// readout after an 8 s stall after 2 minutes reads the whole 2 minutes before it reaches
    /// the stall (at the model's 400 entries/s longer than the 60 s wait): the held points wait
    /// while its pages come, and the gap is filled, nothing lost. (With the trims every 5 s it
    /// read 1,600-6,000 entries and closed within 30 s.)
    @Test func aGapAfterTwoMinutesIsFilledByAReadoutOfAllOfThem() throws {
        let run = try record(fault: .none, seed: 34, stallAt: 120, trims: true, endsAfterStall: 110)
        expectNothingLost(run)
        #expect(run.points.filter(\.backfilled).count >= 790, "the 8 s stall is filled")
        #expect(run.points.reduce(0) { $0 + $1.missedBefore } == 0, "no gap left")
        #expect(run.entriesToRead > 24_000, "entries read: \(run.entriesToRead)")
        #expect(run.trimsAt.isEmpty, "no trim while recording: \(run.trimsAt)")
        print("2 min, untrimmed: \(run.entriesToRead) entries read, gap closed \(run.secondsToClose ?? -1) s after the stream came back")
        #expect(run.secondsToClose != nil, "the gap's points were committed once its log was read")
    }

    /// While the stream is healthy the recorder has the log's streamed part read every 10 s
    /// (the newest 6 s left unread), and each page is confirmed once the stream is checked past
    /// it, so an 8 s stall's readout reads about the stall, the interval and the part left
    /// unread, whatever ran before it: after 1 minute as after 3 (without the streamed reads
    /// 13,600 and 37,600 entries, 200 more a second of session), the log never longer than
    /// about 20 s of entries, and nothing lost, twice or out of order.
    @Test func aGapsReadoutDoesNotGrowWithTheHealthyStretchBeforeIt() throws {
        var read: [Int] = []
        for (stallAt, seed) in [(60.0, UInt64(34)), (180.0, UInt64(36))] {
            let run = try record(fault: .none, seed: seed, stallAt: stallAt, trims: true, streamedReads: true, endsAfterStall: 60)
            expectNothingLost(run)
            print("stall after \(stallAt) s: \(run.streamedReads) reads of the streamed part, log at most \(run.logPeakBeforeStall) entries "
                  + "before the stall, \(run.entriesReadForTheGap) entries read for the gap, closed \(run.secondsToClose ?? -1) s after")
            #expect(run.points.filter(\.backfilled).count >= 790 && run.points.filter(\.backfilled).count <= 810,
                    "the 8 s stall is filled, nothing else: \(run.points.filter(\.backfilled).count) backfilled")
            #expect(run.points.reduce(0) { $0 + $1.missedBefore } == 0, "no gap left")
            #expect(run.trimsAt.isEmpty, "no trim while recording: \(run.trimsAt)")
            #expect(run.secondsToClose != nil, "the gap's points were committed once its log was read")
            #expect(run.streamedReads >= Int(stallAt / 10) - 2, "the streamed part was read every 10 s: \(run.streamedReads)")
            #expect(run.logPeakBeforeStall <= Self.healthyLogBound, "log before the stall: \(run.logPeakBeforeStall) entries")
            read.append(run.entriesReadForTheGap)
        }
        #expect(read.allSatisfy { $0 <= Self.gapReadoutBound }, "entries read for the gap: \(read)")
        #expect(abs(read[1] - read[0]) <= 1000, "the same after 1 and 3 minutes: \(read)")
    }

    /// Most entries a 100 Hz gyro board's log holds while the stream is healthy (200 a
    /// second): the 1,500 a read of the streamed part leaves (6 s, a quarter over), the 2,000
    /// of the 10 s between reads (a read of them takes 5 s at the model's 400 entries a second),
    /// and 2 s of entries for the tick a read starts on and its first page.
    static let healthyLogBound = 1500 + 2000 + 400
    /// Most entries the readouts from an 8 s stall's start to its points committed take: the
    /// healthy log, the stall's 1,600, and 10 s more (the hold's points join it for a second
    /// before pages are placed, the stream reaches the recorder 2 s late, and a read of the
    /// streamed part under way when the stall began ends short of it and the log is read again).
    static let gapReadoutBound = healthyLogBound + 1600 + 2000

    /// A readout longer than the two minutes of stream the recorder keeps to match the log
    /// against (5 minutes of healthy stream before the stall: ~60,000 entries at the model's
    /// 400 a second, 2.5 minutes): the points streamed after the gap while it ran must keep
    /// their logged twins out, also once they are older than that window.
    @Test func aReadoutLongerThanTheStreamKeptForMatchingAddsNoSampleTwice() throws {
        let run = try record(fault: .none, seed: 35, stallAt: 300, trims: true, endsAfterStall: 260)
        expectNothingLost(run)
        #expect(run.points.filter(\.backfilled).count >= 790 && run.points.filter(\.backfilled).count <= 810,
                "the 8 s stall is filled, nothing else: \(run.points.filter(\.backfilled).count) backfilled")
        #expect(run.secondsToClose != nil, "the gap's points were committed once its log was read")
    }

    /// The board falls silent (its stream stalls for 8 s) 100-300 ms before the recorder's
    /// trim at 10 s, which is still sent: the board was heard within the last half second. A
    /// trim drops entries only while logging is stopped (P15), and its start reaches the board a
    /// connection event after its stop, so what the board sampled between the two was in no
    /// log, and the silent stream never delivered it: 1-3 samples lost for good. Logging is
    /// never paused while a session samples now (the log is emptied by the readouts' page
    /// confirms, which need no stop), so every sample of the silence is in the log.
    @Test(arguments: [0.1, 0.2, 0.3])
    func aBoardSilentRightAtATrimLosesNothing(silentBeforeTrim: Double) throws {
        let run = try record(fault: .none, seed: 37, stallAt: 10 - silentBeforeTrim, trims: true, trimPauses: true)
        print("silent \(silentBeforeTrim) s before the trim due at 10 s: trims at \(run.trimsAt)")
        expectNothingLost(run)
        #expect(run.points.reduce(0) { $0 + $1.missedBefore } == 0, "no gap left")
    }

    @Test func theLinkDropsMidReadoutAndTheNextReadoutFinishesTheGap() throws {
        let run = try record(fault: .linkDrop(afterPages: 8), seed: 32)
        expectNothingLost(run)
        #expect(run.points.filter(\.backfilled).count >= 790, "the 8 s stall is filled after the reconnect")
    }

    @Test(arguments: [12, 20, 30])
    func theGatewayIsKilledMidReadoutAndNothingTheBoardDeletedIsLost(afterPages: Int) throws {
        let run = try record(fault: .kill(afterPages: afterPages), seed: 33)
        expectNothingLost(run)
    }

    /// The store refuses the held record of the gap's fourth page once (a nearly full SD card):
    /// the page is declined and its readout ends there, and the log is read again at once on
    /// the same link, whose readout starts with that page. Before, nothing asked for that
    /// readout: the gap waited for its wait (60 s, past this run's end) and the stop
    /// committed it marked as 800 missing, the board still holding every sample of it.
    @Test func aHeldGapsDeclinedPageIsReadAgainAtOnce() throws {
        let run = try record(fault: .refusedPage(afterPages: 3, times: 1), seed: 35)
        expectNothingLost(run)
        print("declined page of a held gap: \(run.readouts) readouts, gap closed \(run.secondsToClose ?? -1) s after the stream came back")
        #expect(run.pagesRefused == 1 && run.readouts == 2, "the declined page read again by a second readout: \(run.readouts)")
        #expect(run.points.filter(\.backfilled).count >= 790, "the 8 s stall is filled")
        #expect(run.points.reduce(0) { $0 + $1.missedBefore } == 0, "no gap left")
        let closed = run.secondsToClose ?? .infinity
        #expect(closed < BackfillHold.defaultWait / 1000, "closed \(closed) s after the stream came back, before the wait ended")
    }

    /// The store takes the readout's pages up to the 20th, some of them the gap's (confirmed:
    /// the board deleted them), then refuses every page: after three readouts more the gap
    /// waits out its wait (60 s from the last page the store took, at 30.6 s) and is committed.
    /// The samples of the pages the board deleted go in with it; only what the board still
    /// holds is marked missing.
    @Test func aGapGivenUpAtTheEndOfItsWaitKeepsWhatTheBoardDeleted() throws {
        let run = try record(fault: .refusedPage(afterPages: 20, times: .max), seed: 36, endsAfterStall: 90)
        expectNothingLost(run)
        #expect(run.points.contains { $0.backfilled }, "the confirmed pages' samples of the gap are in the session")
    }

    /// The store refuses the page every time: the log is read again three times, then no more
    /// (it would spin, reading the log again and again); the status says why, and the board
    /// keeps every page the store did not take.
    @Test func aPageRefusedAgainAndAgainIsReadAgainThreeTimes() throws {
        let run = try record(fault: .refusedPage(afterPages: 3, times: .max), seed: 35)
        expectNothingLost(run)
        #expect(run.readouts == 1 + BackfillHold.declinedReadoutsReadAgain && run.pagesRefused == run.readouts,
                "readouts \(run.readouts), pages refused \(run.pagesRefused)")
        #expect(run.storeError?.contains("refused a page 4 times") == true, "\(run.storeError ?? "no store error")")
    }
}

/// The buffer, refusing every segment write while `refuses` is set, as a full disk does.
final class RefusingStore: RecordingStore {
    let store: BufferStore
    var refuses = false
    struct DiskFull: Error, CustomStringConvertible {
        var description: String { "database or disk is full" }
    }

    init(_ store: BufferStore) { self.store = store }

    func beginSession(_ start: SessionStart) throws { try store.beginSession(start) }
    func append(_ segments: [OpenSegment]) throws {
        if refuses { throw DiskFull() }
        try store.append(segments)
    }
    func seal(_ chunk: ChunkToSeal) throws -> String { try store.seal(chunk) }
    func endSession(_ end: SessionEnd) throws { try store.endSession(end) }
    func submitSurvey(sessionID: String, survey: HazardSurvey, submittedAt: Date) throws -> RecordsDocument {
        try store.submitSurvey(sessionID: sessionID, survey: survey, submittedAt: submittedAt)
    }
    func sessionsAwaitingSurvey() throws -> [String] { try store.sessionsAwaitingSurvey() }
    func restartGapBounded(sessionID: String, board: String, until: Double) throws {
        try store.restartGapBounded(sessionID: sessionID, board: board, until: until)
    }
    func restartGapKept(_ gap: StopGapBound) throws { try store.restartGapKept(gap) }
    func restartGapClosed(sessionID: String, board: String) throws { try store.restartGapClosed(sessionID: sessionID, board: board) }
    func keepLoggedRest(_ rest: KeptLoggedRest) throws { try store.keepLoggedRest(rest) }
    func loggedRestClosed(sessionID: String, board: String) throws { try store.loggedRestClosed(sessionID: sessionID, board: board) }
}
