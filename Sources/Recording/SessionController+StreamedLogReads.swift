/// Keeping each board's flash log short while a session records (issue 21), without ever
/// pausing its logging.
///
/// A session never trims the log (a trim pauses logging, P15: SessionController+Trim.swift), so
/// only readouts empty it, through their page confirms. Read only after a gap, the log held the
/// whole healthy stretch before it: an 8 s gap after 10 minutes read 122,800 entries and closed
/// after 313 s at the board model's 400 entries/s (docs/benchmarks.md), and an always-mode
/// session, never between sessions, filled the board's flash. So while the stream is healthy
/// the recorder asks every ``Configuration/streamedLogReadInterval`` for a readout of the log's
/// streamed part: the board leaves unread the entries of its last ``streamedLogLeftUnread``
/// (counted at its configured rates, a quarter over), and a page of that readout is confirmed
/// only once the stream has been checked for gaps past what the readout could hold
/// (``pageWaitsForTheStream(board:loggedBefore:)``). Its samples were streamed and are stored,
/// so a confirmed page costs airtime only; a gap's readout then reads about the gap, the
/// interval and the part left unread, however long the session ran.
///
/// Cost: every entry the board logs is read once during the session instead of being dropped
/// unread between sessions: at 100 Hz gyro 200 entries a second, about 100 readout
/// notifications a second on average beside the stream's (on a board reading 400 entries a
/// second, half the time; on one reading thousands, a few per cent), in bursts every interval.
/// Backfill off (`[boards] backfill = false`) turns it off with the log.
extension SessionController {
    /// How much of its newest log a readout of the streamed part leaves unread: what the
    /// stream may not have brought to the recorder yet (the timestamper's lookahead and the fix
    /// wait, about 2 s) with room for a link's latency.
    public static let streamedLogLeftUnread = Duration.seconds(6)

    /// How far the gap-checked stream must reach past the entries a readout of the streamed part
    /// can hold before its pages are confirmed, milliseconds: a streamed sample's time lies
    /// after the board took it by the link's latency.
    static let streamedLogCoverageMargin = 3000.0

    /// How recent a board's newest checked point must be for its stream to count as healthy,
    /// milliseconds (a stalled or delayed stream is not read: a gap's readout follows it).
    static let streamedLogFreshness = 4000.0

    /// Boards whose log's streamed part is due for a readout at monotonic `now` (call from the
    /// periodic tick and ask each board): those that fill their gaps from the log, while a
    /// session records, whose stream is healthy and nothing waits for their log.
    public func streamedLogReads(now: Int64) -> [String] {
        guard session != nil, configuration.streamedLogReadInterval > 0 else {
            streamedLogReadAt.removeAll()
            return []
        }
        let nowMs = timeBase.epochMilliseconds(monotonic: now)
        var due: [String] = []
        for board in backfillBoards.sorted() {
            guard let stream = boards[board], stream.backfillExpected, stream.hold == nil, !stream.resumedStream,
                  restartGaps[board] == nil, loggedRests[board] == nil, let newest = stream.previousPointTime,
                  nowMs - newest <= Self.streamedLogFreshness else { continue }
            // The first an interval after the stream is seen healthy: the log holds little before.
            guard let last = streamedLogReadAt[board] else {
                streamedLogReadAt[board] = now
                continue
            }
            guard now - last >= configuration.streamedLogReadInterval else { continue }
            streamedLogReadAt[board] = now
            due.append(board)
        }
        return due
    }

    /// Whether a page of a readout of `board`'s streamed part must wait before
    /// ``backfill(board:logged:accelerometer:bootOrigins:complete:now:)``: its entries were
    /// logged before monotonic `loggedBefore`, and the stream is not yet checked for gaps that
    /// far (a gap there not yet noticed would have its samples confirmed away). With a hold,
    /// ``pageWaitsForItsGap(board:)`` decides (the page fills the gap); with no session, the
    /// page goes to the restart and stop gaps as any.
    public func pageWaitsForTheStream(board: String, loggedBefore: Int64) -> Bool {
        guard session != nil, let stream = boards[board], stream.backfillExpected else { return false }
        if stream.hold != nil || stream.resumedStream { return pageWaitsForItsGap(board: board) }
        guard let newest = stream.previousPointTime else { return true }
        return newest < timeBase.epochMilliseconds(monotonic: loggedBefore) + Self.streamedLogCoverageMargin
    }
}
