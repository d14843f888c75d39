import Buffer
import Foundation
import MetaWear
import MetaWearBoardModel
import Recording

/// Time to close an 8 s gap after a session of 2, 5 and 10 minutes (issue 21): a board model
/// streams gyro at 100 Hz into a `SessionController`, its stream stalls for 8 s (or `downSeconds`:
/// a board whose notifications are lost for minutes while its link stays), and as soon as
/// the points after the stall wait, its log is read out page by page, each page confirmed once
/// the recorder says it is stored. The log is not trimmed while a session records (d94c3c6);
/// while the stream is healthy the recorder asks for readouts of the log's streamed part
/// (`SessionController.streamedLogReads(now:)`), so the gap's readout reads about the gap, not
/// the whole session before it (`--no-streamed-reads`: as before, one readout of all of it).
/// The readouts run at the model's pace (200 notifications/s, 400 entries/s) and at 10,000
/// notifications/s (what mwgated's side takes). "entries" counts what the board sent from the
/// stall's start to the gap closed. Simulated time; the figure is the protocol's and the
/// recorder's, not the radio's. The stall is one stream's, kept through it: notifications lost
/// while the link stays and nothing restarts the stream. mwgated's watchdog does not keep a
/// silent stream that long (it restarts it after 1 s, then gives the link up and links again,
/// each a new stream); `scripts/bench/backfill.sh`'s `--silent` rows run that, whole.
///
/// The restart rows (`backfill_restart_*`): instead of the stall, the gateway is killed (kill -9:
/// recorder and store dropped, a real buffer in a temporary directory) and back 8 s later (or
/// `downSeconds`: a gateway down for minutes, whose log the streamed reads did not keep short) as a
/// new process: recovery, the restart gap from the store, the board's next link, an always-mode
/// session; the board's log is read when the recorder asks, and the gap is closed when it no
/// longer waits for its restart backfill (`SessionController+RestartGap`).
enum BackfillGapBenchmark {
    /// What interrupts the stream (for 8 s unless told).
    enum Fault: String {
        /// The board's stream stalls (its notifications are lost); the recorder goes on.
        case stall = "gap"
        /// The gateway is killed and started again (a restart gap).
        case restart
    }

    /// What one session gave.
    struct Outcome {
        var entriesRead: UInt32
        /// Seconds from the stream's return to the gap's points committed.
        var secondsToClose: Double?
        var backfilled: Int
        /// Most entries the board's log held before the stall (the healthy stretch).
        var logPeak = 0
        /// CPU of the healthy stretch before the stall (the stream's ingest, and the reads of
        /// the log's streamed part when they run).
        var healthyCPUSeconds = 0.0
        /// CPU from the readout's start to the gap closed (the stream's own ingest included).
        var cpuSeconds: Double
        /// The restart rows: samples of the board's stream missing from the interrupted and the
        /// new session's stored points (taken together, at the gap's close), and stored twice.
        var lost: Int?
        var twice: Int?
        /// The first few holes and repeats, as "index->next index" (16-bit sample indices).
        var holes: [String] = []
    }

    /// A store that keeps nothing: the recorder's writes succeed at once.
    final class DiscardingStore: RecordingStore {
        func beginSession(_: SessionStart) throws {}
        func append(_: [OpenSegment]) throws {}
        func seal(_: ChunkToSeal) throws -> String { UUID().uuidString }
        func endSession(_: SessionEnd) throws {}
        func submitSurvey(sessionID _: String, survey _: HazardSurvey, submittedAt _: Date) throws -> RecordsDocument {
            throw CocoaError(.featureUnsupported)
        }
        func sessionsAwaitingSurvey() throws -> [String] { [] }
    }

    /// The paces read at, in notifications per second: the model's and a fast one.
    static let paces: [(name: String, perSecond: UInt64)] = [("model", 200), ("fast", 10_000)]

    static func run(minutes: [Int], streamedReads: Bool = true, fault: Fault = .stall, downSeconds: Double = 8) -> [String] {
        var lines: [String] = []
        for m in minutes {
            for pace in paces {
                let o = session(stallAt: Double(m * 60), notificationsPerSecond: pace.perSecond, streamedReads: streamedReads,
                                fault: fault, downSeconds: downSeconds)
                let down = downSeconds == 8 ? "" : "_down\(Int(downSeconds))s"
                let key = "backfill_\(fault.rawValue)_\(m)min\(down)_\(pace.name)"
                lines.append("\(key)_entries=\(o.entriesRead)")
                // Released without a fill: the wait ended, the gap stays marked.
                let closed = o.backfilled > 0 ? o.secondsToClose : nil
                lines.append("\(key)_close_s=\(closed.map { MetaWearBenchmark.format($0, 1) } ?? "never")")
                lines.append("\(key)_backfilled=\(o.backfilled)")
                lines.append("\(key)_log_peak_entries=\(o.logPeak)")
                lines.append("\(key)_healthy_cpu_ms_per_min=\(MetaWearBenchmark.format(o.healthyCPUSeconds * 1000 / Double(m), 0))")
                lines.append("\(key)_cpu_ms=\(MetaWearBenchmark.format(o.cpuSeconds * 1000, 0))")
                if let lost = o.lost, let twice = o.twice {
                    lines.append("\(key)_lost=\(lost)")
                    lines.append("\(key)_twice=\(twice)")
                    if !o.holes.isEmpty { lines.append("\(key)_holes=\(o.holes.joined(separator: " "))") }
                }
                if o.backfilled > 0 {
                    lines.append("\(key)_cpu_ms_per_1000=\(MetaWearBenchmark.format(o.cpuSeconds * 1000 / Double(o.backfilled) * 1000, 0))")
                }
            }
        }
        return lines
    }

    static func session(stallAt: Double, notificationsPerSecond: UInt64, streamedReads: Bool = true, fault: Fault = .stall,
                        downSeconds: Double = 8) -> Outcome {
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        var configuration = SessionController.Configuration()
        if !streamedReads { configuration.streamedLogReadInterval = 0 }
        // The restart rows' buffer, which the restarted process opens again.
        let directory = NSTemporaryDirectory() + "mwbench-restart-\(UUID().uuidString)"
        defer { if fault == .restart { try? FileManager.default.removeItem(atPath: directory) } }
        let storeConfiguration = BufferStore.Configuration(userID: "00000000-0000-4000-8000-000000000001")
        func openBuffer() -> BufferStore {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                return try BufferStore(path: BufferStore.path(inStateDirectory: directory), configuration: storeConfiguration)
            } catch { fail("mwbench backfill: buffer in \(directory): \(error)") }
        }
        let firstStore: any RecordingStore = fault == .restart ? openBuffer() as any RecordingStore : DiscardingStore()
        var recorder = SessionController(store: firstStore, timeBase: base, configuration: configuration)
        var board = SimulatedBoard(profile: .metaMotionR, seed: 7)
        board.flashLog.readoutInterval = 1_000_000_000 / notificationsPerSecond
        let ids = LoggingCommands.triggers(.gyro, chip: .bmi160).flatMap { board.write($0.bytes).notifications }.map { $0[2] }
        let loggers: [MotionSensor: LoggerIDs] = [.gyro: LoggerIDs(xy: ids[0], z: ids[1])]
        var origins: [UInt8: Int64] = [:]
        // A link's handshake: the board's clock read, logging and the gyro started.
        func handshake() {
            if let reply = board.write([0x0B, 0x84]).notifications.first, reply.count == 7 {
                let tick = UInt32(reply[2]) | UInt32(reply[3]) << 8 | UInt32(reply[4]) << 16 | UInt32(reply[5]) << 24
                origins[reply[6] & 7] = Int64(board.nanoseconds) - Int64(BoardTicks.milliseconds(UInt64(tick)) * 1e6)
            }
            for p in LoggingCommands.start(overwriteWhenFull: true) + Commands.startGyro(GyroConfiguration(rate: .hz100, range: .dps2000), mode: .single, chip: .bmi160) {
                _ = board.write(p.bytes)
            }
        }
        handshake()
        recorder.expectBackfill(board: "B", true)
        recorder.attach(board: "B", gyroRateHertz: 100)
        _ = try? recorder.start(trigger: .controlAPI, now: 0)
        let decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps2000, accelerometerRange: .g4)
        var readout: LogDownloader?
        // Of a readout of the streamed part (mwgated's `readStreamedFlashLog`): its entries were
        // logged before this; nil for a full readout.
        var loggedBefore: Int64?
        var page: [LoggedSample] = []
        // A page that waits for the recorder (the board waits at its end meanwhile).
        var waiting: (samples: [LoggedSample], complete: Bool)?
        var outcome = Outcome(entriesRead: 0, backfilled: 0, cpuSeconds: 0)
        var now: Int64 = 0
        var cpuAtReadout = 0.0
        let cpuAtStart = ProcessCPU.ownSeconds()
        var gapReadoutAsked = false
        var killed = false
        let stallStart = Int64(stallAt * 1e9)
        let stallEnd = Int64((stallAt + downSeconds) * 1e9)
        let leaving = SessionController.streamedLogLeftUnread
        // As `BoardSession.entriesLogged(in:)`: 100 Hz gyro, two entries a sample, a quarter over.
        let leftEntries = UInt32((2 * 100 * Double(leaving.components.seconds) * 1.25).rounded(.up))
        var pending: [[UInt8]] = []
        // The gateway is back (kill -9's second half): a new process recovers the interrupted
        // session, expects its restart gap, and the board links again into an always-mode session.
        var sessions: [String] = []
        var restartedStore: BufferStore?
        func restart() {
            let store = openBuffer()
            restartedStore = store
            var restarted = configuration
            restarted.alwaysMode = true
            recorder = SessionController(store: store, timeBase: base, configuration: restarted)
            do {
                _ = try store.recoverInterruptedSessions()
                recorder.expectRestartBackfill(try store.restartGaps())
            } catch { fail("mwbench backfill: recovery: \(error)") }
            origins = [:]
            handshake()
            recorder.expectBackfill(board: "B", true)
            recorder.attach(board: "B", gyroRateHertz: 100)
        }
        func gapWaits() -> Bool {
            fault == .stall ? recorder.isWaitingForBackfill(board: "B") : recorder.isWaitingForRestartBackfill(board: "B")
        }
        func start(_ r: LogDownloader, before: Int64?) {
            var r = r
            for p in r.begin() { pending += board.write(p.bytes).notifications }
            readout = r
            loggedBefore = before
        }
        func hand(_ samples: [LoggedSample], complete: Bool) {
            guard var r = readout else { return }
            let result = recorder.backfill(board: "B", logged: samples, bootOrigins: origins, complete: complete, now: now)
            outcome.backfilled += result.filled
            if result.durable { for p in r.confirmPage() { pending += board.write(p.bytes).notifications } }
            readout = r.state == .finished && !r.awaitsConfirm ? nil : r
        }
        func pageWaits() -> Bool {
            guard let before = loggedBefore else { return false }
            return recorder.pageWaitsForTheStream(board: "B", loggedBefore: before)
        }
        // Past the recorder's longest hold (5 waits of 60 s from the first point after the gap).
        while now < stallEnd + 330_000_000_000, outcome.secondsToClose == nil {
            now += 20_000_000
            let stalled = now >= stallStart && now < stallEnd
            if stalled, outcome.healthyCPUSeconds == 0 { outcome.healthyCPUSeconds = ProcessCPU.ownSeconds() - cpuAtStart }
            if now < stallStart { outcome.logPeak = max(outcome.logPeak, board.flashLog.storedCount) }
            if fault == .restart, stalled {
                // kill -9: nothing more is read or written, the link is gone; the board logs on.
                if !killed {
                    if case .recording(let id) = recorder.state { sessions.append(id) }
                    killed = true
                    readout = nil
                    waiting = nil
                    page = []
                    pending = []
                }
                board.linkLost()
                _ = board.advance(to: UInt64(now))
                continue
            }
            if killed {
                killed = false
                restart()
            }
            if let w = waiting, !pageWaits() {
                waiting = nil
                hand(w.samples, complete: w.complete)
            }
            pending += board.advance(to: UInt64(now)).map(\.bytes)
            while !pending.isEmpty {
                let bytes = pending.removeFirst()
                guard bytes.first == 0x0B else {
                    if !stalled { recorder.ingest(board: "B", event: decoder.decode(bytes), receivedAt: now) }
                    continue
                }
                guard var r = readout else { continue }
                let step = r.receive(bytes, at: now)
                readout = r
                if now >= stallStart { outcome.entriesRead += UInt32(LogNotificationDecoder.decode(bytes).flatMap { decoded -> Int? in
                    if case .success(.entries(let e)) = decoded { return e.count }
                    return nil
                } ?? 0) }
                page += step.samples.map(\.sample)
                for p in step.writes { pending += board.write(p.bytes).notifications }
                if step.pageReady || r.state == .finished {
                    let samples = page
                    page = []
                    if pageWaits() { waiting = (samples, r.state == .finished) } else { hand(samples, complete: r.state == .finished) }
                }
                if r.state == .finished, !r.awaitsConfirm { readout = nil }
            }
            recorder.tick(now: now)
            // A stall's readout begins as soon as its points wait; a restart gap's when the
            // recorder asks (the restarted stream's scale and anchors known).
            if readout == nil, gapWaits(),
               (fault == .stall && !gapReadoutAsked) || recorder.takeBackfillRequests().contains("B") {
                if !gapReadoutAsked { cpuAtReadout = ProcessCPU.ownSeconds() }
                gapReadoutAsked = true
                start(LogDownloader(revision: 2, loggers: loggers, confirmsPagesItself: false), before: nil)
            }
            for _ in recorder.streamedLogReads(now: now) where readout == nil {
                start(LogDownloader(revision: 2, loggers: loggers, confirmsPagesItself: false, leavingNewest: leftEntries),
                      before: now - Int64(leaving.components.seconds) * 1_000_000_000)
            }
            if gapReadoutAsked, !gapWaits() { outcome.secondsToClose = Double(now - stallEnd) / 1e9 }
        }
        outcome.cpuSeconds = ProcessCPU.ownSeconds() - cpuAtReadout
        if let store = restartedStore, case .recording(let id) = recorder.state {
            (outcome.lost, outcome.twice, outcome.holes) = countLostAndTwice(store: store, sessions: sessions + [id])
        }
        return outcome
    }

    /// Samples missing between the first and the last stored point of `sessions` taken
    /// together (in order), and samples stored twice: the board model's gyro x is its sample
    /// index (16 bits, at 16.4 counts per °/s).
    static func countLostAndTwice(store: BufferStore, sessions: [String]) -> (lost: Int, twice: Int, holes: [String]) {
        var points: [RecordedPoint] = []
        for id in sessions {
            guard let stored = try? store.dataset(sessionID: id).points else { fail("mwbench backfill: session \(id) not readable") }
            points += stored.map(\.point)
        }
        func index(_ p: RecordedPoint) -> UInt16 { UInt16(bitPattern: Int16((Double(p.gyroscope.x) * 16.4).rounded())) }
        var lost = 0
        var twice = 0
        var holes: [String] = []
        for (a, b) in zip(points, points.dropFirst()) {
            let step = index(b) &- index(a)
            guard step != 1 else { continue }
            if step == 0 || step > 0x8000 { twice += 1 } else { lost += Int(step) - 1 }
            if holes.count < 5 {
                holes.append("\(index(a))\(a.backfilled ? "b" : "")@\(Int(a.gyroscope.timestamp))->\(index(b))\(b.backfilled ? "b" : "")")
            }
        }
        return (lost, twice, holes)
    }
}
