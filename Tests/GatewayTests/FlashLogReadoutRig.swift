import MetaWear
import MetaWearBoardModel
import Recording

/// A board model's flash log read out into a recorder page by page, as mwgated's board session
/// does: each page handed to ``SessionController/backfill(board:logged:accelerometer:bootOrigins:complete:now:)``
/// (a board that streams and logs) or ``SessionController/recordLogged(board:gyro:accelerometer:gyroScale:accelerometerScale:bootOrigins:now:)``
/// (a board that logs at a rate beyond the link, ``loggedGyroScale``) and confirmed (deleted on
/// the board) only when the recorder says it is durable. For the in-process tests of gaps and
/// logged sessions filled from the log.
struct FlashLogReadoutRig {
    var board: SimulatedBoard
    let loggers: [MotionSensor: LoggerIDs]
    let revision: UInt8
    /// The gyro's LSB per °/s when the board logs instead of streaming (its pages are recorded as
    /// the session's points); nil: the pages fill the gaps of its stream.
    var loggedGyroScale: Double?
    /// Where each boot's tick 0 lies on the board's clock (read at every handshake).
    var origins: [UInt8: Int64] = [:]
    /// How late the clock reading's reply is taken in, nanoseconds: each boot's tick 0 is put
    /// that much late (a link's latency, which the planner's anchors correct).
    var clockReadLatency: Int64 = 0
    private(set) var downloader: LogDownloader?
    private var page: [LoggedSample] = []
    /// Pages the recorder stored.
    private(set) var pagesStored = 0
    /// The first stored page from this number on that is not its readout's last (a full page
    /// the board keeps until confirmed) is not confirmed: the gateway dies first (kill -9
    /// between the store and the board's delete); nothing more is received until ``linkLost()``.
    var holdConfirmAfter: Int?
    private(set) var confirmHeld = false
    /// A readout ended since the caller cleared it.
    var readoutEnded = false
    /// The gyro rate the board logs at when the recorder's reads of the log's streamed part run
    /// (``SessionController/streamedLogReads(now:)``, as `BoardSession.readStreamedFlashLog`
    /// does); nil: they do not.
    var readsStreamedPartAt: Double?
    /// Reads of the streamed part begun.
    private(set) var streamedReads = 0
    /// Of the readout under way when it reads the streamed part: its entries were logged before
    /// this (monotonic ns); nil for a readout of the whole log.
    private var loggedBefore: Int64?
    /// A page of such a readout the recorder does not take yet (the board waits at its end).
    private var waitingPage: (gyro: [LoggedSample], finished: Bool)?

    init(board: SimulatedBoard, loggers: [MotionSensor: LoggerIDs], revision: UInt8) {
        self.board = board
        self.loggers = loggers
        self.revision = revision
    }

    /// A rig for `board` (a BMI160) with its gyro's two loggers allocated on it.
    static func loggingGyro(of board: SimulatedBoard) -> FlashLogReadoutRig {
        var board = board
        var ids: [UInt8] = []
        for trigger in LoggingCommands.triggers(.gyro, chip: .bmi160) {
            for reply in board.write(trigger.bytes).notifications {
                if case .success(.triggerAllocated(let id))? = LogNotificationDecoder.decode(reply) { ids.append(id) }
            }
        }
        return FlashLogReadoutRig(board: board, loggers: [.gyro: LoggerIDs(xy: ids[0], z: ids[1])], revision: 2)
    }

    /// A MetaMotion R (seed 9, its clock at `tickAtPowerOn`, 128-entry log pages) logging and
    /// streaming its 100 Hz gyro (``gyro100``), linked into `controller` as board `key`, which
    /// fills its gaps from the log.
    static func linkedMetaMotionR(tickAtPowerOn: UInt32, into controller: SessionController, board key: String,
                                  trimmer: inout BoardLogTrimmer) -> FlashLogReadoutRig {
        var board = SimulatedBoard(profile: .metaMotionR, seed: 9)
        board.tickAtPowerOn = tickAtPowerOn
        board.flashLog.pageEntries = 128
        var rig = loggingGyro(of: board)
        controller.expectBackfill(board: key, true)
        rig.links(gyro: gyro100, into: controller, board: key, trimmer: &trimmer)
        return rig
    }

    /// The gyro of ``linkedMetaMotionR(tickAtPowerOn:into:board:trimmer:)``, and the decoder of its stream.
    static let gyro100 = GyroConfiguration(rate: .hz100, range: .dps2000)
    static let bmi160Decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps2000, accelerometerRange: .g4)

    /// Reads the board clock (`0B 84`): where its boot's tick 0 lies.
    mutating func readClock() {
        if let reply = board.write([0x0B, 0x84]).notifications.first, reply.count == 7 {
            let tick = UInt32(reply[2]) | UInt32(reply[3]) << 8 | UInt32(reply[4]) << 16 | UInt32(reply[5]) << 24
            origins[reply[6] & 7] = Int64(board.nanoseconds) + clockReadLatency - Int64(BoardTicks.milliseconds(UInt64(tick)) * 1e6)
        }
    }

    /// The board's link handshake: the clock read, logging (re)started, the gyro started.
    mutating func handshake(gyro: GyroConfiguration, chip: IMUChip) {
        readClock()
        for p in LoggingCommands.start(overwriteWhenFull: true) + Commands.startGyro(gyro, mode: .single, chip: chip) {
            _ = board.write(p.bytes)
        }
    }

    /// Starts a readout of the whole log.
    mutating func beginReadout(into controller: SessionController, board key: String, now: Int64) {
        var d = LogDownloader(revision: revision, loggers: loggers, confirmsPagesItself: false)
        loggedBefore = nil
        let begin = d.begin()
        downloader = d
        send(begin, into: controller, board: key, now: now)
    }

    /// The link went: the readout ends (what was not confirmed stays on the board).
    mutating func linkLost() {
        downloader = nil
        page = []
        waitingPage = nil
        confirmHeld = false
        holdConfirmAfter = nil
        board.linkLost()
    }

    /// The board went out of range: the recorder detaches it, its readout ends, it logs on.
    mutating func goesAway(from controller: SessionController, board key: String, now: Int64) {
        controller.detach(board: key, now: now)
        linkLost()
    }

    /// The board links (again, when it comes back): its handshake (a BMI160's 100 Hz gyro,
    /// `gyro`), the recorder attaches it, and a log trim mark from before no longer stands.
    mutating func links(gyro: GyroConfiguration, into controller: SessionController, board key: String,
                        trimmer: inout BoardLogTrimmer) {
        handshake(gyro: gyro, chip: .bmi160)
        controller.attach(board: key, gyroRateHertz: 100)
        trimmer.forgetMark()
    }

    /// One step of a board that streams and logs its gyro, up to `now`: while its link is up its
    /// notifications go to the recorder (the logging module's to the readout), the recorder
    /// ticks, the log is trimmed as the recorder says (by `trimmer`, not while a readout runs),
    /// and a readout begins when the recorder asks for the board's log.
    /// With `lag`, the board's clock is that far behind the host's: its notifications come that
    /// much later than it took them (a step in latency when it grows, no sample lost). With
    /// `losesSamples`, the sensors' notifications of this step never arrive (the logging
    /// module's do).
    mutating func stream(to now: Int64, lag: Int64 = 0, linkUp: Bool, losesSamples: Bool = false, into controller: SessionController,
                         board key: String, decoder: NotificationDecoder, trimmer: inout BoardLogTrimmer) {
        for n in board.advance(to: UInt64(max(Int64(board.nanoseconds), now - lag))) {
            guard linkUp else { continue }
            if n.bytes.first == 0x0B { receive(n.bytes, into: controller, board: key, now: now); continue }
            guard !losesSamples else { continue }
            controller.ingest(board: key, event: decoder.decode(n.bytes), receivedAt: now)
        }
        if linkUp { handWaitingPage(into: controller, board: key, now: now) }
        controller.tick(now: now)
        for trim in controller.flashLogTrims(now: now) where downloader == nil && linkUp {
            trimmer.apply(trim, to: &board)
        }
        if let hertz = readsStreamedPartAt {
            for _ in controller.streamedLogReads(now: now) where downloader == nil && linkUp {
                beginStreamedRead(gyroHertz: hertz, into: controller, board: key, now: now)
            }
        }
        if downloader == nil, linkUp, controller.takeBackfillRequests().contains(key) {
            trimmer.forgetMark()
            beginReadout(into: controller, board: key, now: now)
        }
    }

    /// A notification of the logging module while a readout runs.
    mutating func receive(_ bytes: [UInt8], into controller: SessionController, board key: String, now: Int64) {
        guard var d = downloader, !confirmHeld else { return }
        let step = d.receive(bytes, at: Int64(board.nanoseconds))
        downloader = d
        page += step.samples.filter { $0.sensor == .gyro }.map(\.sample)
        send(step.writes, into: controller, board: key, now: now)
        let finished = d.state == .finished
        guard step.pageReady || finished else { return }
        waitingPage = (page, finished)
        page = []
        handWaitingPage(into: controller, board: key, now: now)
    }

    /// Starts a read of the log's streamed part: the entries of the newest
    /// ``SessionController/streamedLogLeftUnread`` at `gyroHertz` (two a sample, a quarter
    /// over, as `BoardSession.entriesLogged(in:)`) stay unread.
    private mutating func beginStreamedRead(gyroHertz: Double, into controller: SessionController, board key: String, now: Int64) {
        let leaving = SessionController.streamedLogLeftUnread
        let left = UInt32((2 * gyroHertz * Double(leaving.components.seconds) * 1.25).rounded(.up))
        var d = LogDownloader(revision: revision, loggers: loggers, confirmsPagesItself: false, leavingNewest: left)
        streamedReads += 1
        loggedBefore = now - Int64(leaving.components.seconds) * 1_000_000_000
        let begin = d.begin()
        downloader = d
        send(begin, into: controller, board: key, now: now)
    }

    /// Hands the last page to the recorder unless it must wait, and confirms it when stored.
    private mutating func handWaitingPage(into controller: SessionController, board key: String, now: Int64) {
        guard let waiting = waitingPage else { return }
        if let before = loggedBefore, controller.pageWaitsForTheStream(board: key, loggedBefore: before) { return }
        waitingPage = nil
        let finished = waiting.finished
        let durable: Bool
        if let scale = loggedGyroScale {
            durable = controller.recordLogged(board: key, gyro: waiting.gyro, gyroScale: scale, bootOrigins: origins, now: now).durable
        } else {
            durable = controller.backfill(board: key, logged: waiting.gyro, bootOrigins: origins, complete: finished, now: now).durable
        }
        if durable {
            pagesStored += 1
            if let hold = holdConfirmAfter, pagesStored >= hold, !finished {
                confirmHeld = true
                return
            }
            if var current = downloader {
                let confirm = current.confirmPage()
                downloader = current
                send(confirm, into: controller, board: key, now: now)
            }
        }
        if finished {
            downloader = nil
            readoutEnded = true
            if loggedGyroScale != nil { controller.loggedReadoutEnded(board: key) }
        }
    }

    private mutating func send(_ packets: [Packet], into controller: SessionController, board key: String, now: Int64) {
        for packet in packets {
            for reply in board.write(packet.bytes).notifications { receive(reply, into: controller, board: key, now: now) }
        }
    }
}
