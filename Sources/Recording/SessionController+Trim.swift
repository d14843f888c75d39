/// Keeping each board's flash log short while its stream is healthy (issue 21): a download
/// after a gap then reads about the gap, not everything logged since the session began.
///
/// Every ``Configuration/flashLogTrimInterval`` the board's log length is marked; at the next
/// mark, what the previous one counted is dropped if every sample of that stretch is stored:
/// no gap was noticed since, no points wait for a backfill, the stream went on at least 2 s
/// past the mark (a stall spanning it would show as a gap first), and the segments are
/// written, and no restart gap waits for the log. Samples of a gap whose wait ended unfilled go with the trim (nothing fetches them
/// later).
///
/// A trim also needs the stream alive at that moment (a notification within
/// ``SessionController/trimLiveness``): the board drops entries only while it is not logging, so
/// the samples it takes during the trim's stop-drop-start reach no log and exist only in the
/// stream. Trimmed while the board was silent (the real-BlueZ VM's backfill group: a trim 1.4 s
/// into a 4 s silence), those 2 samples were lost for good.
extension SessionController {
    /// What to do with a board's flash log now.
    public enum FlashLogTrim: Hashable, Sendable {
        /// Note how many entries it holds (`0B 85`).
        case mark(String)
        /// Drop what the last mark counted: it is stored.
        case trim(String)
    }

    /// The flash log work due at monotonic `now` for the attached boards whose logs fill
    /// their gaps: call from the periodic tick and pass each on to the board.
    public func flashLogTrims(now: Int64) -> [FlashLogTrim] {
        var out: [FlashLogTrim] = []
        for board in backfillBoards.sorted() where boards[board] != nil {
            if let mark = trimMarks[board] {
                guard now - mark.at >= configuration.flashLogTrimInterval else { continue }
                if trimmable(board: board, since: mark, now: now) { out.append(.trim(board)) }
            }
            trimMarks[board] = TrimMark(at: now, gaps: gapsNoticed[board, default: 0])
            out.append(.mark(board))
        }
        return out
    }

    /// How recent the board's latest notification must be for a trim (nanoseconds): on the real
    /// stack notifications come in bursts up to 0.5 s apart; a silent board is noticed after ~1 s.
    static let trimLiveness: Int64 = 500_000_000

    private func trimmable(board: String, since mark: TrimMark, now: Int64) -> Bool {
        guard let stream = boards[board], stream.hold == nil, gapsNoticed[board, default: 0] == mark.gaps else { return false }
        // Only while the stream is alive now (what the trim's pause takes is in no log).
        if session != nil {
            guard let heard = stream.lastGyroReceivedAt, now - heard <= Self.trimLiveness else { return false }
        }
        // The log holds a restart gap not stored yet (between sessions too).
        guard restartGaps[board] == nil else { return false }
        // Between sessions nothing is stored, and nothing logged is wanted.
        guard session != nil else { return true }
        guard let last = stream.previousPointTime, last >= timeBase.epochMilliseconds(monotonic: mark.at) + 2000 else { return false }
        return writeSegments(now: now, force: true)
    }
}

/// A board's flash log length mark: when it was taken and the gaps noticed by then.
struct TrimMark {
    var at: Int64
    var gaps: Int
}
