/// Keeping each board's flash log short between sessions (issue 21); during a session the log
/// is emptied only by its readouts, which need no pause in logging.
///
/// The board drops entries (`0B 09`) only while it does not log (P15), so a trim pauses
/// logging for its stop-drop-start, and what the board samples in that pause is in no log, only
/// in the stream. A board that fell silent just then (its stream stalled or its link going: a
/// trim is sent while the board was heard within half a second) lost those samples for good
/// (1-3 at 100 Hz; the real-BlueZ VM's backfill group: a trim 1.4 s into a 4 s silence), and the
/// log, which then held a hole, could no longer tell that the rest of the gap was complete. So
/// a session never pauses logging: a download's page confirms (`0B 0E`) delete what it read
/// while the board logs on, and what a gap's readout reads before the gap is the stretch since
/// the previous readout (the held points wait as long as its pages come,
/// ``SessionController/tick(now:)``). So that this stretch stays short, the log's streamed
/// part is read while the stream is healthy (``SessionController/streamedLogReads(now:)``).
///
/// Between sessions (nothing logged is wanted, the sensors are off) every
/// ``Configuration/flashLogTrimInterval`` the board's log length is marked; at the next mark,
/// what the previous one counted is dropped, unless a restart gap of the board still waits for
/// the log.
extension SessionController {
    /// What to do with a board's flash log now.
    public enum FlashLogTrim: Hashable, Sendable {
        /// Note how many entries it holds (`0B 85`).
        case mark(String)
        /// Drop what the last mark counted: it is stored.
        case trim(String)
    }

    /// The flash log work due at monotonic `now` for the attached boards whose logs fill
    /// their gaps: call from the periodic tick and pass each on to the board. None while a
    /// session records (a trim pauses logging).
    public func flashLogTrims(now: Int64) -> [FlashLogTrim] {
        guard session == nil else {
            trimMarks.removeAll()
            return []
        }
        var out: [FlashLogTrim] = []
        for board in backfillBoards.sorted() where boards[board] != nil {
            if let mark = trimMarks[board] {
                guard now - mark.at >= configuration.flashLogTrimInterval else { continue }
                if trimmable(board: board, since: mark) { out.append(.trim(board)) }
            }
            trimMarks[board] = TrimMark(at: now, gaps: gapsNoticed[board, default: 0])
            out.append(.mark(board))
        }
        return out
    }

    private func trimmable(board: String, since mark: TrimMark) -> Bool {
        guard let stream = boards[board], stream.hold == nil, gapsNoticed[board, default: 0] == mark.gaps else { return false }
        // The log holds a restart gap not stored yet.
        return restartGaps[board] == nil
    }
}

/// A board's flash log length mark: when it was taken and the gaps noticed by then.
struct TrimMark {
    var at: Int64
    var gaps: Int
}
