import MetaWear
import MetaWearBoardModel
import Recording

/// The board's side of the session's flash-log trims in the in-process tests: a mark reads
/// how many entries the log holds, the next trim drops that many, as mwgated's board session
/// does over the link.
struct BoardLogTrimmer {
    private var marked: UInt32?

    /// Carries out one trim on `board`.
    mutating func apply(_ trim: SessionController.FlashLogTrim, to board: inout SimulatedBoard) {
        switch trim {
        case .mark:
            for reply in board.write(LoggingCommands.readLength.bytes).notifications {
                if case .success(.length(let count))? = LogNotificationDecoder.decode(reply) { marked = count }
            }
        case .trim:
            if let count = marked {
                for packet in LoggingCommands.trim(entries: count, overwriteWhenFull: true) { _ = board.write(packet.bytes) }
            }
            marked = nil
        }
    }

    /// Drops the mark: the log is about to be read (and confirmed) by a download, or the board
    /// came back after a restart, so what was counted before no longer stands.
    mutating func forgetMark() { marked = nil }
}
