import MetaWear
import MetaWearBoardModel
import Recording

/// The board's side of the session's flash-log trims in the in-process tests: a mark reads
/// how many entries the log holds, the next trim drops that many, as mwgated's board session
/// does over the link.
struct BoardLogTrimmer {
    private var marked: UInt32?
    /// With `pausesOverAStep`, the restart a trim's drop waits for: a real link carries the
    /// trim's three writes to the board in connection events, and whatever the board samples
    /// between the stop and the start goes into no log. ``resume(on:)`` writes it.
    private var pendingStart: [Packet] = []
    /// A trim's start reaches the board one step of the test's clock after its stop and drop.
    var pausesOverAStep = false

    /// Writes a paused trim's start (call after the board advanced past the trim).
    mutating func resume(on board: inout SimulatedBoard) {
        for packet in pendingStart { _ = board.write(packet.bytes) }
        pendingStart = []
    }

    /// Carries out one trim on `board`.
    mutating func apply(_ trim: SessionController.FlashLogTrim, to board: inout SimulatedBoard) {
        switch trim {
        case .mark:
            for reply in board.write(LoggingCommands.readLength.bytes).notifications {
                if case .success(.length(let count))? = LogNotificationDecoder.decode(reply) { marked = count }
            }
        case .trim:
            if let count = marked {
                var packets = LoggingCommands.trim(entries: count, overwriteWhenFull: true)
                if pausesOverAStep { pendingStart = Array(packets[2...]); packets = Array(packets[..<2]) }
                for packet in packets { _ = board.write(packet.bytes) }
            }
            marked = nil
        }
    }

    /// Drops the mark: the log is about to be read (and confirmed) by a download, or the board
    /// came back after a restart, so what was counted before no longer stands.
    mutating func forgetMark() { marked = nil }
}
