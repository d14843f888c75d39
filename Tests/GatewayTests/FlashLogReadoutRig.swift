import MetaWear
import MetaWearBoardModel
import Recording

/// A board model's flash log read out into a recorder page by page, as mwgated's board session
/// does: each page handed to ``SessionController/backfill(board:logged:accelerometer:bootOrigins:complete:now:)``
/// and confirmed (deleted on the board) only when the recorder says it is durable. For the
/// in-process tests of gaps filled from the log.
struct FlashLogReadoutRig {
    var board: SimulatedBoard
    let loggers: [MotionSensor: LoggerIDs]
    let revision: UInt8
    /// Where each boot's tick 0 lies on the board's clock (read at every handshake).
    var origins: [UInt8: Int64] = [:]
    private(set) var downloader: LogDownloader?
    private var page: [LoggedSample] = []

    init(board: SimulatedBoard, loggers: [MotionSensor: LoggerIDs], revision: UInt8) {
        self.board = board
        self.loggers = loggers
        self.revision = revision
    }

    /// The board's link handshake: the clock read, logging (re)started, the gyro started.
    mutating func handshake(gyro: GyroConfiguration, chip: IMUChip) {
        if let reply = board.write([0x0B, 0x84]).notifications.first, reply.count == 7 {
            let tick = UInt32(reply[2]) | UInt32(reply[3]) << 8 | UInt32(reply[4]) << 16 | UInt32(reply[5]) << 24
            origins[reply[6] & 7] = Int64(board.nanoseconds) - Int64(BoardTicks.milliseconds(UInt64(tick)) * 1e6)
        }
        for p in LoggingCommands.start(overwriteWhenFull: true) + Commands.startGyro(gyro, mode: .single, chip: chip) {
            _ = board.write(p.bytes)
        }
    }

    /// Starts a readout of the whole log.
    mutating func beginReadout(into controller: SessionController, board key: String, now: Int64) {
        var d = LogDownloader(revision: revision, loggers: loggers, confirmsPagesItself: false)
        let begin = d.begin()
        downloader = d
        send(begin, into: controller, board: key, now: now)
    }

    /// The link went: the readout ends (what was not confirmed stays on the board).
    mutating func linkLost() {
        downloader = nil
        page = []
        board.linkLost()
    }

    /// A notification of the logging module while a readout runs.
    mutating func receive(_ bytes: [UInt8], into controller: SessionController, board key: String, now: Int64) {
        guard var d = downloader else { return }
        let step = d.receive(bytes, at: Int64(board.nanoseconds))
        downloader = d
        page += step.samples.filter { $0.sensor == .gyro }.map(\.sample)
        send(step.writes, into: controller, board: key, now: now)
        let finished = d.state == .finished
        guard step.pageReady || finished else { return }
        let outcome = controller.backfill(board: key, logged: page, bootOrigins: origins, complete: finished, now: now)
        page = []
        if outcome.durable, var current = downloader {
            let confirm = current.confirmPage()
            downloader = current
            send(confirm, into: controller, board: key, now: now)
        }
        if finished { downloader = nil }
    }

    private mutating func send(_ packets: [Packet], into controller: SessionController, board key: String, now: Int64) {
        for packet in packets {
            for reply in board.write(packet.bytes).notifications { receive(reply, into: controller, board: key, now: now) }
        }
    }
}
