import Basics
import Buffer
import Foundation
import GNSS
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// The gap a gateway restart leaves (kill -9, power loss) is filled from the board's flash log
/// (issue 21): a board model logs and streams its 100 Hz gyro into a session on a real buffer
/// (SQLite and segment journal); the gateway is killed (recorder and store dropped without a
/// stop) while the board goes on logging; a new process recovers the session, the board links
/// again and streams into an always-mode session, its log is read in the background (its flash
/// log trimmed as `BoardSession` does) and every sample the board took is stored once, in
/// order, the gap's marked backfilled in the interrupted session.
@Suite("Flash log: the restart gap")
struct RestartGapTests {
    static func index(_ p: RecordedPoint) -> Int { Int(UInt16(bitPattern: Int16((Double(p.gyroscope.x) * 16.4).rounded()))) }

    struct Run {
        /// The points of the documents the interrupted sessions' records documents name (the
        /// recovered chunks and the corrections), in their order, session after session; then
        /// the new session's.
        var interrupted: [RecordedPoint]
        var resumed: [RecordedPoint]
        /// Chunks the records documents name, and chunks the interrupted sessions have.
        var namedChunks: Int
        var chunks: Int
        /// Entries still on the board.
        var onBoard: Int
        /// Interrupted sessions whose stored end is not their last point.
        var endsNotAtTheLastPoint: Int
        /// Interrupted sessions whose records document was revised (their survey went in before
        /// the board's log was read).
        var revisedRecords = 0
        /// What the recorder counted still missing in the gaps it closed.
        var stillMissing = 0
        /// Samples the interrupted sessions' documents mark missing (their points' `missed_before`),
        /// and history's count of them (the LOST column), every session, kept as it goes and
        /// counted from scratch.
        var missedInDocuments = 0
        var missedInHistory = 0
        var missedInHistoryFromScratch = 0
    }

    // swiftlint:disable:next function_body_length
    /// The gateway dies `killAt` s into the session and is back `down` s later (and again at
    /// `secondKill`, for its `down` s); the board's
    /// log is read when the recorder asks, or `downloadAfter` s after the restart at the
    /// earliest (the log's trims go on meanwhile).
    /// With `accelerometer` the board streams and logs its accelerometer too (100 Hz, ±4 g).
    /// With `linkDrop` the board's link goes at `at` s for `down` s before the kill (the points
    /// after that gap wait for the log until the download, `downloadAfter`). With
    /// `restartedClockOffset` (seconds) the restarted gateway's epoch times run that much ahead
    /// of the killed one's (its GNSS correction estimated otherwise). With `surveyAtRestart` the
    /// interrupted session's survey goes in as soon as the gateway is back (before the download).
    /// With `idleDuringReadout` the board leaves the recorder as the readout begins (its session
    /// stopped, its sensors off: mwgated detaches an idle board) and the readout goes on.
    /// With `readoutCountedEarly` (seconds), the first readout after the restart holds only what
    /// the board had logged that long before the gateway was back (a readout under way when the
    /// stream came back, which counted the log then); a second one, if asked for, reads the rest.
    /// With `boardResetAt` (seconds, while the gateway is down) the board resets itself there:
    /// its tick counter starts again at 0 under the next reset UID, its sensors and logging
    /// stop until the next link's handshake starts them, and the log keeps the old boot's entries.
    /// With `sensorPauseInDrop` (seconds) the board's gyro stops halfway through `linkDrop` and
    /// starts again that much later, as a stream restart of mwgated's watchdog pauses it during
    /// a stall: the board takes no sample meanwhile, and its log holds none.
    /// With `gnss` each process takes a GNSS fix every whole second of its clock while it runs
    /// (none while the gateway is down): a walk north at about 1.1 m/s, ``walkLatitude(at:)``.
    /// With `clockReadLatency` (seconds) each link's reading of the board's clock comes that much
    /// late, so the board's ticks put its samples that much later than they were taken (a link's
    /// latency; the planner's anchors correct it).
    func record(profile: BoardProfile, seed: UInt64, killAt: Double = 10, down: Double, downloadAfter: Double = 0,
                accelerometer: Bool = false, secondKill: (at: Double, down: Double)? = nil,
                linkDrop: (at: Double, down: Double)? = nil, restartedClockOffset: Double = 0,
                surveyAtRestart: Bool = false, idleDuringReadout: Bool = false, readoutCountedEarly: Double? = nil,
                boardResetAt: Double? = nil, gnss: Bool = false, sensorPauseInDrop: Double? = nil,
                clockReadLatency: Double = 0) throws -> Run {
        print("RestartGapTests seed \(seed)")
        let dir = NSTemporaryDirectory() + "mwgate-restart-gap-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = BufferStore.path(inStateDirectory: dir)
        let storeConfiguration = BufferStore.Configuration(userID: "00000000-0000-4000-8000-000000000001")
        var store = try BufferStore(path: path, configuration: storeConfiguration)
        // CLOCK_MONOTONIC and the wall clock go on through a process restart: one time base.
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        var controller = SessionController(store: store, timeBase: base)
        let chip: IMUChip = profile.chip == .bmi160 ? .bmi160 : .bmi270
        var board = SimulatedBoard(profile: profile, seed: 7)
        board.tickAtPowerOn = 654_321
        board.flashLog.pageEntries = 128
        let revision: UInt8 = profile.chip == .bmi160 ? 2 : 3
        let sensors: [MotionSensor] = accelerometer ? [.gyro, .accelerometer] : [.gyro]
        let ids = sensors.flatMap { LoggingCommands.triggers($0, chip: chip) }.flatMap { board.write($0.bytes).notifications }.compactMap { reply -> UInt8? in
            guard case .success(.triggerAllocated(let id))? = LogNotificationDecoder.decode(reply) else { return nil }
            return id
        }
        var loggers: [MotionSensor: LoggerIDs] = [.gyro: LoggerIDs(xy: ids[0], z: ids[1])]
        if accelerometer { loggers[.accelerometer] = LoggerIDs(xy: ids[2], z: ids[3]) }
        let accelerometerRate: Double? = accelerometer ? 100 : nil
        let accelerometerStart = accelerometer
            ? Commands.startAccelerometer(AccelerometerConfiguration(rate: .hz100, range: .g4), mode: .single, chip: chip) : []
        let gyro = GyroConfiguration(rate: .hz100, range: .dps2000)
        // A link's handshake: the clock read, logging (re)started, the gyro started (a new run).
        var origins: [UInt8: Int64] = [:]
        func handshake() {
            if let reply = board.write([0x0B, 0x84]).notifications.first, reply.count == 7 {
                let tick = UInt32(reply[2]) | UInt32(reply[3]) << 8 | UInt32(reply[4]) << 16 | UInt32(reply[5]) << 24
                origins[reply[6] & 7] = Int64(board.nanoseconds) + Int64(clockReadLatency * 1e9)
                    - Int64(BoardTicks.milliseconds(UInt64(tick)) * 1e6)
            }
            for p in LoggingCommands.start(overwriteWhenFull: true) + Commands.startGyro(gyro, mode: .single, chip: chip) + accelerometerStart {
                _ = board.write(p.bytes)
            }
        }
        handshake()
        controller.expectBackfill(board: "B", true)
        controller.attach(board: "B", gyroRateHertz: 100, accelerometerRateHertz: accelerometerRate)
        let sessionID = try controller.start(trigger: .controlAPI, now: 0)
        let decoder = NotificationDecoder(chip: chip, gyroRange: .dps2000, accelerometerRange: .g4)
        var rng = SeededRandom(seed: seed)
        var now: Int64 = 0
        var downloader: LogDownloader?
        // As the gateway does (BoardSession.openPageFillTime): a MetaMotion S's readout while it
        // logs starts once the page open at the request has filled (its open page is read by
        // no readout until then, and a flush would pause logging), at the rates it logs plus a
        // quarter; a MetaMotion R's readout starts at once.
        let openPageFill: Int64 = revision == 3
            ? Int64(Double(board.flashLog.pageEntries) / (2 * (100 + (accelerometerRate ?? 0))) * 1.25 * 1e9) : 0
        var readoutStartsAt: Int64?
        var page: [LoggedSample] = []
        var accelerometerPage: [LoggedSample] = []
        var trimmer = BoardLogTrimmer()
        let kills = [(at: killAt, down: down)] + (secondKill.map { [$0] } ?? [])
        var restarts = 0
        var killedSessions: [String] = []
        var lastRestart: Int64 = 0
        var linkDown = false
        let linkDropAt = linkDrop.map { Int64($0.at * 1e9) } ?? .max
        let linkBackAt = linkDrop.map { Int64(($0.at + $0.down) * 1e9) } ?? .max
        // The board as it was when the early readout counted its log, until that readout is read.
        var earlyReadout: SimulatedBoard?
        var earlyReadoutDone = readoutCountedEarly == nil
        var boardReset = false
        var stillMissing = 0
        var nextFixAt: Int64 = 0
        var sensorPaused = false
        func killTime() -> Int64 { restarts < kills.count ? Int64(kills[restarts].at * 1e9) : .max }
        func restartTime() -> Int64 { restarts < kills.count ? Int64((kills[restarts].at + kills[restarts].down) * 1e9) : .max }
        // 30 s after the last restart, and on while a readout is under way or the restart gap
        // waits for one: the readout holds the whole log, at the model's 400 entries/s (a 20 s
        // gap read 12 s late: 8,406 entries, 21.6 s, past the 30 s). A stalled one fails at `limit`.
        let end = Int64((kills.last!.at + kills.last!.down + 30) * 1e9)
        let limit = end + 120_000_000_000

        func send(_ packets: [Packet]) {
            for packet in packets {
                for reply in board.write(packet.bytes).notifications { feed(reply) }
            }
        }
        func feed(_ bytes: [UInt8]) {
            guard var d = downloader else { return }
            let step = d.receive(bytes, at: Int64(board.nanoseconds))
            downloader = d
            page += step.samples.filter { $0.sensor == .gyro }.map(\.sample)
            accelerometerPage += step.samples.filter { $0.sensor == .accelerometer }.map(\.sample)
            send(step.writes)
            let finished = d.state == .finished
            guard step.pageReady || finished else { return }
            let outcome = controller.backfill(board: "B", logged: page, accelerometer: accelerometerPage, bootOrigins: origins,
                                              complete: finished, now: now)
            page = []
            accelerometerPage = []
            stillMissing += outcome.stillMissing
            if outcome.durable {
                let confirm = d.confirmPage()
                downloader = d
                send(confirm)
            }
            if finished { downloader = nil }
        }

        while now < end || (now < limit && (downloader != nil || controller.isWaitingForRestartBackfill(board: "B"))) {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            if now >= restartTime() {
                // A new process: recovery, the restart gaps (kept by the store), the board's next link.
                restarts += 1
                lastRestart = now
                store = try BufferStore(path: path, configuration: storeConfiguration)
                #expect(try store.recoverInterruptedSessions() == [killedSessions.last])
                var configuration = SessionController.Configuration()
                configuration.alwaysMode = true
                let restartedBase = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000 + Int64(restartedClockOffset * 1e9),
                                             monotonicNanoseconds: 0, systemClockSynchronised: true)
                controller = SessionController(store: store, timeBase: restartedBase, configuration: configuration)
                // A new process knows the boot origins it reads, no more (the pipeline passes the
                // download's clock reading).
                origins = [:]
                try controller.adoptAwaitingSurveyFromStore()
                controller.expectRestartBackfill(try store.restartGaps())
                handshake()
                controller.expectBackfill(board: "B", true)
                controller.attach(board: "B", gyroRateHertz: 100, accelerometerRateHertz: accelerometerRate)
                trimmer.forgetMark()
                if surveyAtRestart, let interrupted = killedSessions.last {
                    try controller.submitSurvey(.noHazard, sessionID: interrupted, submittedAt: Date(timeIntervalSince1970: 1_800_000_050))
                }
            }
            if !linkDown, restarts == 0, now >= linkDropAt, now < linkBackAt {
                // The link drops: the recorder detaches the board, which goes on logging.
                linkDown = true
                controller.detach(board: "B", now: now)
                downloader = nil
                readoutStartsAt = nil
                board.linkLost()
            }
            if linkDown, restarts == 0, let pause = sensorPauseInDrop, !sensorPaused, now >= (linkDropAt + linkBackAt) / 2 {
                sensorPaused = true
                for n in board.advance(to: UInt64(now)) where n.bytes.first == 0x0B { _ = n }
                for p in Commands.stop(.gyro, mode: .single, chip: chip) { _ = board.write(p.bytes) }
                _ = board.advance(to: UInt64(now + Int64(pause * 1e9)))
                for p in Commands.startGyro(gyro, mode: .single, chip: chip) { _ = board.write(p.bytes) }
            }
            if linkDown, restarts == 0, now >= linkBackAt, now < killTime() {
                linkDown = false
                handshake()
                controller.attach(board: "B", gyroRateHertz: 100, accelerometerRateHertz: accelerometerRate)
            }
            let killed = now >= killTime()
            let linkUp = !(linkDown && restarts == 0)
            if let resetAt = boardResetAt.map({ Int64($0 * 1e9) }), restarts == 0, killed, now >= resetAt, !boardReset {
                boardReset = true
                _ = board.advance(to: UInt64(resetAt))
                board.resetItself()
            }
            if killed, killedSessions.count == restarts, case .recording(let id) = controller.state { killedSessions.append(id) }
            for n in board.advance(to: UInt64(now)) {
                if n.bytes.first == 0x0B {
                    if !killed, linkUp { feed(n.bytes) }
                    continue
                }
                if !killed, linkUp { controller.ingest(board: "B", event: decoder.decode(n.bytes), receivedAt: now) }
            }
            if killed {
                // kill -9: nothing more is written, the link is gone.
                downloader = nil
                readoutStartsAt = nil
                board.linkLost()
                if let early = readoutCountedEarly, earlyReadout == nil, !earlyReadoutDone,
                   now >= restartTime() - Int64(early * 1e9) { earlyReadout = board }
                continue
            }
            while gnss, nextFixAt <= now {
                // A fix taken while the gateway was down was read by no one.
                if nextFixAt >= lastRestart || restarts == 0 {
                    let second = Double(nextFixAt) / 1e9
                    let when = Date(timeIntervalSince1970: 1_800_000_000 + second)
                    controller.ingest(fix: GNSSFix(time: when, timeOfDay: NMEATimeOfDay(microseconds: 0), mode: .threeD,
                                                   latitude: Self.walkLatitude(atSecond: second), longitude: 8, hdop: 0.9,
                                                   systemClockOffset: 0, arrival: when), now: now)
                }
                nextFixAt += 1_000_000_000
            }
            controller.tick(now: now)
            for trim in controller.flashLogTrims(now: now) where downloader == nil && linkUp {
                trimmer.apply(trim, to: &board)
            }
            if downloader == nil, linkUp, restarts > 0, let counted = earlyReadout, controller.takeBackfillRequests().contains("B") {
                // The early readout, on the board as it was then, page by page (its pages
                // confirmed on that copy only: the board keeps them).
                earlyReadout = nil
                earlyReadoutDone = true
                let live = board
                board = counted
                // That board logs on while its open page fills.
                for n in board.advance(to: board.nanoseconds + UInt64(openPageFill)) where n.bytes.first == 0x0B { _ = n }
                downloader = LogDownloader(revision: revision, loggers: loggers, confirmsPagesItself: false)
                send(downloader!.begin())
                let readoutEnd = board.nanoseconds + 120_000_000_000
                while downloader != nil, board.nanoseconds < readoutEnd {
                    for n in board.advance(to: board.nanoseconds + 5_000_000) where n.bytes.first == 0x0B { feed(n.bytes) }
                }
                #expect(downloader == nil, "the early readout finished")
                downloader = nil
                board = live
                continue
            }
            if downloader == nil, readoutStartsAt == nil, linkUp, now >= lastRestart + Int64(downloadAfter * 1e9),
               controller.takeBackfillRequests().contains("B") {
                trimmer.forgetMark()
                readoutStartsAt = now + openPageFill
            }
            if downloader == nil, linkUp, let start = readoutStartsAt, now >= start {
                readoutStartsAt = nil
                downloader = LogDownloader(revision: revision, loggers: loggers, confirmsPagesItself: false)
                send(downloader!.begin())
                if idleDuringReadout, restarts > 0 { controller.detach(board: "B", now: now) }
            }
        }
        #expect(downloader == nil, "the readout finished: \(downloader.map { "\($0.progress.left) of \($0.progress.total) left" } ?? "")")
        #expect(!controller.isWaitingForRestartBackfill(board: "B"), "the restart gap is filled")
        let resumedID: String
        guard case .recording(let id) = controller.state else {
            Issue.record("no session after the restart")
            return Run(interrupted: [], resumed: [], namedChunks: 0, chunks: 0, onBoard: 0, endsNotAtTheLastPoint: 0)
        }
        resumedID = id
        try controller.stop(trigger: .controlAPI, now: now)
        func documentPoints(_ id: String, at second: Double) throws -> (points: [RecordedPoint], names: Int, revised: Bool) {
            let record = try store.recordsDocument(sessionID: id)
                ?? controller.submitSurvey(.noHazard, sessionID: id, submittedAt: Date(timeIntervalSince1970: second))
            let points = try record.gscopeData.flatMap { try store.realtimeDocument(name: $0)?.points ?? [] }
            return (points, record.gscopeData.count, record.revision > 0)
        }
        #expect(killedSessions.first == sessionID)
        var run = Run(interrupted: [], resumed: [], namedChunks: 0, chunks: 0, onBoard: board.flashLog.storedCount,
                      endsNotAtTheLastPoint: 0)
        for (k, id) in killedSessions.enumerated() {
            let interrupted = try documentPoints(id, at: 1_800_000_100 + Double(k))
            let dataset = try store.dataset(sessionID: id)
            run.interrupted += interrupted.points
            run.namedChunks += interrupted.names
            if interrupted.revised { run.revisedRecords += 1 }
            run.chunks += dataset.chunkNames.count
            if dataset.endedAt != interrupted.points.last?.gyroscope.timestamp { run.endsNotAtTheLastPoint += 1 }
        }
        run.resumed = try documentPoints(resumedID, at: 1_800_000_200).points
        run.stillMissing = stillMissing
        run.missedInDocuments = run.interrupted.reduce(0) { $0 + $1.missedBefore }
        run.missedInHistory = try store.history().reduce(0) { $0 + $1.missedSamples }
        run.missedInHistoryFromScratch = try store.historyFromScratch().reduce(0) { $0 + $1.missedSamples }
        return run
    }

    /// With `byTime`, the points are taken in time order rather than in the records documents'
    /// order: a gap inside the recovered session's stored stretch is filled by correction
    /// chunks after its last chunk.
    /// With `timeOrderWithinSessions`, time order is checked within each session: each keeps
    /// its own gateway's clock, and a clock that stepped back puts the new session before the
    /// interrupted one's end.
    func expectEverySampleOnce(_ run: Run, down: Double, byTime: Bool = false, timeOrderWithinSessions: Bool = false,
                               sourceLocation: SourceLocation = #_sourceLocation) {
        let inOrder = run.interrupted + run.resumed
        let points = byTime ? inOrder.sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp } : inOrder
        let indices = points.map(Self.index)
        var holes: [String] = []
        for (a, b) in zip(points, points.dropFirst()) where Self.index(b) != Self.index(a) + 1 {
            holes.append("\(Self.index(a))\(a.backfilled ? "b" : "")->\(Self.index(b))\(b.backfilled ? "b" : "")")
        }
        let backfilled = run.interrupted.filter(\.backfilled)
        print("restart gap \(down) s: interrupted session \(run.interrupted.count) points (\(backfilled.count) backfilled), "
              + "resumed \(run.resumed.count), chunks \(run.chunks) (record names \(run.namedChunks)), on board \(run.onBoard), "
              + "holes \(holes.prefix(10))")
        #expect(Set(indices).count == indices.count, "no sample twice", sourceLocation: sourceLocation)
        for session in timeOrderWithinSessions ? [run.interrupted, run.resumed] : [points] {
            #expect(zip(session, session.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp }, "time order",
                    sourceLocation: sourceLocation)
        }
        #expect(holes.isEmpty, "every sample the board took is stored: \(holes.prefix(10))", sourceLocation: sourceLocation)
        #expect(Double(backfilled.count) >= down * 100 - 5, "the \(down) s are backfilled", sourceLocation: sourceLocation)
        #expect(run.resumed.allSatisfy { !$0.backfilled }, sourceLocation: sourceLocation)
        #expect(run.namedChunks == run.chunks, "the records document names the correction chunks", sourceLocation: sourceLocation)
        #expect(run.endsNotAtTheLastPoint == 0, "each interrupted session ends with its gap", sourceLocation: sourceLocation)
    }

    /// Accelerometer sample index of a point (the checkable signal's x at ±4 g: 8,192 counts per g).
    static func accelerometerIndex(_ p: RecordedPoint) -> Int? {
        p.accelerometer.map { Int(UInt16(bitPattern: Int16((Double($0.x) * 8192).rounded()))) }
    }

    /// The backfilled points have the accelerometer sample the board took with them: the
    /// accelerometer and gyro indices step together (same rate, started together), so the offset
    /// between them is the one of the streamed points after the restart, within one sample. A
    /// point at a page's end may miss it (its accelerometer entries come with the next page,
    /// after the point was stored): at most two a page.
    func expectAccelerometerBackfilled(_ run: Run, sourceLocation: SourceLocation = #_sourceLocation) {
        let streamed = run.resumed.prefix(200)
        let offsets = streamed.compactMap { p in Self.accelerometerIndex(p).map { $0 - Self.index(p) } }.sorted()
        let backfilled = run.interrupted.filter(\.backfilled)
        let without = backfilled.filter { $0.accelerometer == nil }.count
        guard let offset = offsets.isEmpty ? nil : offsets[offsets.count / 2] else {
            Issue.record("no streamed accelerometer readings", sourceLocation: sourceLocation)
            return
        }
        let off = backfilled.compactMap { p in Self.accelerometerIndex(p).map { $0 - Self.index(p) } }.filter { abs($0 - offset) > 1 }
        print("accelerometer: \(backfilled.count) backfilled points, \(without) without a reading, \(off.count) off the streamed offset \(offset): \(off.prefix(5))")
        #expect(without * 20 <= backfilled.count, "backfilled points have their accelerometer reading", sourceLocation: sourceLocation)
        #expect(without < backfilled.count, sourceLocation: sourceLocation)
        #expect(off.isEmpty, "the reading is the one the board took with it", sourceLocation: sourceLocation)
    }

    /// The walk the fixes of `gnss` runs follow: latitude `second` s into the run.
    static func walkLatitude(atSecond second: Double) -> Double { 47 + second * 1e-5 }

    /// A kill -9 2.5 s long with GNSS: the restart gap's backfilled points are located like a
    /// live gap's, between the positions around them: the killed gateway's fixes are gone, but
    /// the stored tail was located from them, and its last position and the restarted
    /// gateway's first fix (4 s apart, within the 5 s a live point is interpolated across)
    /// bracket the gap. Before, only the restarted gateway's fixes were used: the gap's points
    /// more than 2 s before its first fix (its freshness) had none.
    @Test func aRestartGapsPointsAreLocatedFromTheFixesAroundThem() throws {
        let run = try record(profile: .metaMotionR, seed: 49, down: 2.5, gnss: true)
        expectEverySampleOnce(run, down: 2.5)
        let backfilled = run.interrupted.filter(\.backfilled)
        let unlocated = backfilled.filter { $0.location == nil }
        print("restart gap with GNSS: \(backfilled.count) backfilled, \(unlocated.count) without a location "
              + "(\(unlocated.first.map { "\($0.missingLocation.map { "\($0)" } ?? "-") from \($0.gyroscope.timestamp)" } ?? "-"))")
        #expect(backfilled.count >= 200)
        #expect(unlocated.isEmpty, "\(unlocated.count) of \(backfilled.count) backfilled points have no location")
        // On the walk at their time (the fixes are on a straight line, so are the positions
        // interpolated between them): within 1 cm.
        let off = backfilled.filter { p in
            guard let location = p.location else { return false }
            return abs(location.latitude - Self.walkLatitude(atSecond: (p.gyroscope.timestamp - 1_800_000_000_000) / 1000)) > 1e-7
        }
        #expect(off.isEmpty, "\(off.count) backfilled points off the walk, first \(off.first.map { "\($0.location!.latitude) at \($0.gyroscope.timestamp)" } ?? "")")
    }

    @Test func aMetaMotionRKilledForEightSecondsLosesNothing() throws {
        let run = try record(profile: .metaMotionR, seed: 41, down: 8)
        expectEverySampleOnce(run, down: 8)
    }

    /// The log's first trims after the restart (a mark, and 5 s later the drop of what it
    /// counted) come before the readout here: they must not delete the gap.
    @Test func trimsBeforeTheReadoutKeepTheGap() throws {
        let run = try record(profile: .metaMotionR, seed: 43, down: 5, downloadAfter: 12)
        expectEverySampleOnce(run, down: 5)
    }

    @Test func theAccelerometerIsBackfilledOnABMI160() throws {
        let run = try record(profile: .metaMotionR, seed: 44, down: 4, accelerometer: true)
        expectEverySampleOnce(run, down: 4)
        expectAccelerometerBackfilled(run)
    }

    @Test func theAccelerometerIsBackfilledOnABMI270() throws {
        let run = try record(profile: .metaMotionS, seed: 45, down: 4, accelerometer: true)
        expectEverySampleOnce(run, down: 4)
        expectAccelerometerBackfilled(run)
    }

    /// A session recovered after a kill -9 mid-chunk keeps the accelerometer reading of every
    /// point whose reading mwgated had accepted by the last journal write before the crash:
    /// the journal carries it, not only the sealed chunk. Only the newest points of that write
    /// may lack one (their accelerometer notifications had not arrived yet).
    @Test(arguments: [(BoardProfile.metaMotionR, UInt64(46)), (.metaMotionS, 47)])
    func aRecoveredSessionKeepsItsAccelerometerReadings(profile: BoardProfile, seed: UInt64) throws {
        let killAt = 10.0
        let run = try record(profile: profile, seed: seed, killAt: killAt, down: 2, accelerometer: true)
        let recovered = run.interrupted.filter { !$0.backfilled }
        let newest = recovered.last?.gyroscope.timestamp ?? 0
        let without = recovered.filter { $0.accelerometer == nil }
        let settledWithout = without.filter { $0.gyroscope.timestamp < newest - 100 }
        let offsets = run.resumed.prefix(200).compactMap { p in Self.accelerometerIndex(p).map { $0 - Self.index(p) } }.sorted()
        let offset = offsets.isEmpty ? 0 : offsets[offsets.count / 2]
        let off = recovered.compactMap { p in Self.accelerometerIndex(p).map { (Self.index(p), $0 - Self.index(p)) } }
            .filter { $0.1 != offset }
        print("recovered \(recovered.count) points: \(without.count) without a reading (\(settledWithout.count) more than 100 ms "
              + "before the newest, first \(settledWithout.first.map(Self.index) ?? -1)); \(off.count) off the stream's offset "
              + "\(offset): \(off.prefix(5))")
        #expect(recovered.count > Int(killAt * 100) - 150, "the session is recovered")
        #expect(settledWithout.count == 0, "every recovered point keeps its accelerometer reading")
        #expect(off.count == 0, "the reading is the one the board sent with the sample")
    }

    /// The gateway restarts again before the first gap was filled (it was killed 4 s after
    /// the first restart, before it read the board's log): the store kept the first gap and
    /// where it ended, so the third gateway fills both from one readout.
    @Test func aSecondRestartBeforeTheGapIsFilledForgetsNothing() throws {
        let run = try record(profile: .metaMotionR, seed: 48, down: 2, downloadAfter: 6, secondKill: (at: 16, down: 2))
        expectEverySampleOnce(run, down: 4)
    }

    /// The link drops before the kill at 10 s (or drops at 8.5 s and is still down at the kill):
    /// the points after its gap wait for the board's log, and the gateway dies before the log is
    /// read (the first download only 12 s after the start). The held points were accepted: the
    /// recovered session keeps them, and the next gateway fills both the link drop's gap (inside
    /// the recovered stretch) and the restart gap from the log.
    @Test(arguments: [(7.0, 0.5), (4.0, 0.8), (8.5, 3.0)])
    func aKillWhilePointsWaitForTheLogLosesNothing(dropAt: Double, dropFor: Double) throws {
        let run = try record(profile: .metaMotionR, seed: 49, down: 2, downloadAfter: 12, linkDrop: (at: dropAt, down: dropFor))
        expectEverySampleOnce(run, down: 2 + min(dropFor, 10 - dropAt), byTime: true)
        expectNothingMarkedMissing(run)
    }

    /// The log filled every gap, so nothing is marked missing: not in the documents (the
    /// stored point after a link drop's gap was sealed by recovery with its live mark, the
    /// drop's length, before the restart gap filled the drop; its chunk is revised), not in
    /// history's LOST column (its running total, and counted from scratch).
    func expectNothingMarkedMissing(_ run: Run, sourceLocation: SourceLocation = #_sourceLocation) {
        let marked = run.interrupted.filter { $0.missedBefore > 0 }
        #expect(run.missedInDocuments == 0, "marked missing in the documents: \(marked.map { "\(Self.index($0))\($0.backfilled ? "b" : ""): \($0.missedBefore)" })",
                sourceLocation: sourceLocation)
        #expect(run.missedInHistory == 0, "history counts \(run.missedInHistory) missing", sourceLocation: sourceLocation)
        #expect(run.missedInHistoryFromScratch == 0, "history counts \(run.missedInHistoryFromScratch) missing from scratch",
                sourceLocation: sourceLocation)
    }

    /// As above (the link drops at 4 s for 2 s, the gateway dies at 10 s before the log is read),
    /// with the gyro paused for 0.3 s in the middle of the drop, as the watchdog's stream
    /// restarts pause it during a stall. The log is the board's record of every sample it took
    /// (a session never pauses its logging), so between two neighbours in one boot's log none is
    /// missing, however far apart: the rule a held gap has counted by. The restart gap that
    /// fills this stretch marked the pause's 30 periods missing on the sample after it and
    /// counted them "still missing" from the ticks (not from the log); now it counts by the
    /// same rule.
    @Test func aSensorPauseInsideARestartGapIsNoLoss() throws {
        let run = try record(profile: .metaMotionR, seed: 51, down: 2, downloadAfter: 12, linkDrop: (at: 4, down: 2),
                             sensorPauseInDrop: 0.3)
        expectEverySampleOnce(run, down: 4, byTime: true)
        expectNothingMarkedMissing(run)
        #expect(run.stillMissing == 0, "the recorder counted \(run.stillMissing) still missing")
    }

    /// The restarted gateway's epoch times are 1.5 s off the killed one's (the soak: a GNSS
    /// correction estimated from the first, delayed reports): the stored tail is still found in
    /// the log, and the restart gap holds the samples after it, none of the tail's again.
    @Test func aRestartedGatewayWhoseClockIsOffStillFillsTheGapOnce() throws {
        let run = try record(profile: .metaMotionR, seed: 50, down: 3, restartedClockOffset: 1.5)
        expectEverySampleOnce(run, down: 3)
    }

    /// The walker submits the interrupted session's survey as soon as the gateway is back, before
    /// the board's log is read: the gap is filled all the same, and the record revised.
    @Test func aSurveyBeforeTheDownloadGetsTheGapAsARevision() throws {
        let run = try record(profile: .metaMotionR, seed: 41, down: 8, downloadAfter: 12, surveyAtRestart: true)
        expectEverySampleOnce(run, down: 8)
        #expect(run.revisedRecords == 1)
    }

    /// The restarted gateway's clock 100 ms (or 40 ms) off the killed one's, under the 250 ms
    /// the tail used to be moved for: the make-test soak (seed 20261121, board 0) lost the ten
    /// samples after the tail, placed on the new stream's clock onto the tail's last times.
    /// Each session keeps its own gateway's clock, so a restarted clock behind the killed one
    /// puts the interrupted session's end after the new one's start: time order is checked
    /// within each session.
    @Test(arguments: [0.1, -0.1, 0.04])
    func aRestartedGatewaySlightlyOffStillFillsTheGapOnce(offset: Double) throws {
        let run = try record(profile: .metaMotionR, seed: 55, down: 3, restartedClockOffset: offset)
        let points = run.interrupted + run.resumed
        let holes = zip(points, points.dropFirst()).filter { Self.index($1) != Self.index($0) + 1 }
            .map { "\(Self.index($0))->\(Self.index($1))" }
        let indices = points.map(Self.index)
        print("restart gap, clock \(offset) s off: \(run.interrupted.filter(\.backfilled).count) backfilled, holes \(holes.prefix(10))")
        #expect(holes.isEmpty, "every sample the board took is stored: \(holes.prefix(10))")
        #expect(Set(indices).count == indices.count, "no sample twice")
        for session in [run.interrupted, run.resumed] {
            #expect(zip(session, session.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp }, "time order")
        }
        #expect(run.namedChunks == run.chunks, "the records document names the correction chunks")
    }

    /// The board goes idle while its restart gap is read (the soak's short form: the session
    /// stopped 4 s after the board was back, and mwgated detaches an idle board): the gap is
    /// placed with the stream the board had, every page stored and confirmed, and the readout
    /// ends. Before, each page waited for a stream that was gone: never stored, never
    /// confirmed, the readout stalled with 4,602 entries left until the daemon stopped.
    @Test func aBoardIdleDuringTheReadoutStillFillsTheGap() throws {
        let run = try record(profile: .metaMotionR, seed: 56, down: 3, idleDuringReadout: true)
        expectEverySampleOnce(run, down: 3)
    }

    /// The log's pages before the new stream's samples place the gap past the tail's anchors by
    /// the stream's period; the next page brings the new stream's anchors, which put its first
    /// sample a few ms earlier than that, within half a period of the last one sealed: it is
    /// still the next sample, not that one (seed 48 lost sample 1792 at the MetaMotion R's page
    /// boundary, and 1280 on the MetaMotion S).
    @Test(arguments: [(BoardProfile.metaMotionR, 8.0, 12.0), (.metaMotionS, 3.0, 0)])
    func aPageBoundaryAtTheGapsEndLosesNoSample(profile: BoardProfile, down: Double, downloadAfter: Double) throws {
        let run = try record(profile: profile, seed: 48, down: down, downloadAfter: downloadAfter)
        expectEverySampleOnce(run, down: down)
    }

    /// The readout that first delivers after the restart counted the board's log 0.5 s before
    /// the gateway was back (one under way when the stream returned ignores the gap's request):
    /// the gap is not closed with its last 50 samples missing, the log is read again and fills
    /// them.
    @Test func aRestartGapWhoseReadoutEndedShortIsReadAgain() throws {
        let run = try record(profile: .metaMotionR, seed: 57, down: 3, readoutCountedEarly: 0.5)
        expectEverySampleOnce(run, down: 3)
    }

    /// The board resets itself while the gateway is down (a brown-out: its tick counter starts
    /// again at 0 under the next reset UID, and it takes no sample until the next link starts
    /// its sensors): the gap holds the old boot's samples after the stored tail, the new boot's
    /// stream follows, every sample once.
    /// Nothing is counted still missing: the board took no sample from its reset until the new
    /// link started its sensors, which the log's ticks of each boot show; counted from the times
    /// the 2 s of the reset's pause were.
    @Test func aBoardResetWhileTheGatewayIsDownFillsTheGapFromTheOldBoot() throws {
        let run = try record(profile: .metaMotionR, seed: 58, down: 4, boardResetAt: 12)
        expectEverySampleOnce(run, down: 2)
        #expect(run.stillMissing == 0, "still missing \(run.stillMissing)")
    }

    /// The restarted gateway's clock stepped back 5 s (an NTP step at boot on a board without a
    /// real-time clock): the stored tail lies 5 s after the new stream's start on the new clock.
    @Test(arguments: [-5.0, 5.0])
    func aClockStepAcrossTheRestartFillsTheGapOnce(step: Double) throws {
        let run = try record(profile: .metaMotionR, seed: 59, down: 3, restartedClockOffset: step)
        expectEverySampleOnce(run, down: 3, timeOrderWithinSessions: true)
        #expect(run.stillMissing == 0, "still missing \(run.stillMissing)")
    }

    /// The restarted gateway's clock stepped a minute (a gateway without a real-time clock set
    /// by NTP after a power loss), far past the placement's reach (the clock read's 1 s tolerance
    /// and 10 s of drift, `BackfillPlanner.streamed(_:near:)`), and each link reads the board's
    /// clock 0.2 s late. Converted to the new clock, the stored tail lies a minute off the log's
    /// ticks until its alignment moves it (``StoredTailAlignment``); each page of the readout is
    /// matched only against the part of the moved tail and stream near its ticks. A window taken
    /// from the tail as stored (before the move) holds none of it: the gap's 391 samples were
    /// lost (-60 s), or the whole log stored a second time (+60 s). The 5 s steps stay within
    /// the reach and do not show it.
    @Test(arguments: [-60.0, 60.0])
    func aClockStepPastThePlacementsReachFillsTheGapOnce(step: Double) throws {
        let run = try record(profile: .metaMotionR, seed: 61, down: 3, restartedClockOffset: step, clockReadLatency: 0.2)
        expectEverySampleOnce(run, down: 3, timeOrderWithinSessions: true)
        #expect(run.stillMissing == 0, "still missing \(run.stillMissing)")
    }

    /// Both: the board reset while the gateway was down, and the gateway's clock stepped.
    @Test(arguments: [-5.0, 5.0])
    func aBoardResetAndAClockStepFillTheGapOnce(step: Double) throws {
        let run = try record(profile: .metaMotionR, seed: 60, down: 4, restartedClockOffset: step, boardResetAt: 12)
        expectEverySampleOnce(run, down: 2, timeOrderWithinSessions: true)
        #expect(run.stillMissing == 0, "still missing \(run.stillMissing)")
    }

    /// A MetaMotion S away 20 s whose log is read only 12 s after the gateway is back: the
    /// readout holds everything since the session's start (nothing trims a recording board's
    /// log), 8,406 entries, 21.6 s at the model's pace. Every sample is stored once when the
    /// readout ends.
    @Test func aTwentySecondGapReadLateLosesNothing() throws {
        let run = try record(profile: .metaMotionS, seed: 1, down: 20, downloadAfter: 12)
        expectEverySampleOnce(run, down: 20)
    }

    @Test func aMetaMotionSKilledForThreeSecondsLosesNothing() throws {
        let run = try record(profile: .metaMotionS, seed: 42, down: 3)
        expectEverySampleOnce(run, down: 3)
    }
}
