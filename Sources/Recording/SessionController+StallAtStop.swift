/// A board linked but silent when its session stops (issue 21): its stream stalled (the board
/// stopped sending, or bluetoothd or the radio held its notifications) and no sample came since.
/// The live stream notices a gap only when the next sample comes, and none comes before the
/// stop; the board has no points held (``keepStopGap(board:sessionID:)``) and is not away
/// (`keepAwayGap`), yet its log holds every sample of the stall, and between sessions the log
/// is trimmed. So the stop keeps the stall as a gap from the board's newest point to the stop,
/// with the session's end (a restarted gateway fills it too), and it is filled like a stop
/// gap: sealed into the stopped session as correction chunks once the log is read, before
/// anything trims it. What the board takes after the stop is not the session's.
extension SessionController {
    /// How old a healthy stream's newest point may be at a stop, milliseconds: what is still on
    /// its way. The board sessions hand notifications on in groups of up to 250 ms
    /// (`BoardSession.Options.defaultNotificationCoalescing`), and the link releases them in
    /// connection events up to 30 ms apart, several in a row when the radio is busy (a MetaWear
    /// packs at most 3 samples a notification); the timestamper stamps each sample on the lower
    /// envelope of its arrival times, near when the board took it. So the newest point of a
    /// healthy stream lies up to about 250 + 4 × 30 ms before the stop (at ten stops of the
    /// end-to-end tests, load 6-8: 28-214 ms); 400 ms leaves room for scheduling. A stream silent longer than that and one and a half sample periods (the live
    /// gap rule, ``GapCount``: the sample after the slack is overdue) is stalled. Samples
    /// still on their way at a stop land after it, as documented for the coalescing; a stall
    /// shorter than the slack is left as a healthy stream's tail is.
    static let stopArrivalSlack = 400.0

    /// The stall of `board` at the stop at monotonic `now`, kept like a stop gap: from its newest
    /// point to the stop. Nil when its flash log does not fill its gaps, points wait for a gap's
    /// log (``keepStopGap(board:sessionID:)`` keeps those), it has no point in the session, or
    /// its newest point is not overdue by the live gap rule past ``stopArrivalSlack``.
    func keepStallGap(board: String, sessionID: String, now: Int64) -> PendingRestartGap? {
        guard backfillBoards.contains(board), let stream = boards[board], stream.hold == nil, stream.pointsCommitted > 0,
              let newest = stream.previousPointTime else { return nil }
        let stop = timeBase.epochMilliseconds(monotonic: now)
        let overdue = GapCount.missed(stepMs: stop - Self.stopArrivalSlack - newest, periodMs: 1000 / stream.gyroRate)
        guard overdue > 0 else { return nil }
        var pending = PendingRestartGap(RestartGap(sessionID: sessionID, board: board, nextSeq: stream.seq, tail: [], after: newest))
        pending.until = stop
        // Its stream before the stall is this process's, in the stream window: the anchors.
        pending.tailStreamedHere = true
        pending.stoppedStream = (stream.gyroRate, stream.merger)
        return pending
    }
}
