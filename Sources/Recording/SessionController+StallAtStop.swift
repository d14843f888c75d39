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
    /// How long before a stop a healthy stream may have been heard last, milliseconds: its
    /// newest point's time or its last notification's arrival, whichever is later. The board
    /// sessions hand notifications on in groups of up to 250 ms
    /// (`BoardSession.Options.defaultNotificationCoalescing`); the timestamper stamps a sample on
    /// the lower envelope of its arrivals, near when the board took it, so a stamp lies the
    /// link's latency (connection events up to 30 ms apart, several in a row when the radio is
    /// busy) before its arrival. So a healthy stream was heard up to about 250 + 4 × 30 ms
    /// before the stop (at ten stops of the end-to-end tests, load 6-8, its newest point was
    /// 28-214 ms old); 400 ms leaves room for scheduling. A stream silent longer than that and
    /// one and a half sample periods (the live gap rule, ``GapCount``: the sample after the
    /// slack is overdue) is stalled. Samples still on their way at a stop land after it, as
    /// documented for the coalescing; a stall shorter than the slack is left as a healthy
    /// stream's tail is.
    static let stopArrivalSlack = 400.0

    /// The gap `board` leaves at the stop at monotonic `now`, given the gap of its points held
    /// for a log (`held`, ``keepStopGap(board:sessionID:)``): a stream stalled since its newest
    /// point (held or committed) makes the gap reach the stop; with no held gap, the stall alone
    /// is kept, from its newest point, like a stop gap. A board that resumed from the session's
    /// start (``stalledAtTheStart(_:)``, or away then), or whose stream began in the session
    /// (``BoardStream/opensAtItsStart``), and gave no point since was stalled through the whole
    /// session: its gap reaches from the start (its stream's) to the stop and opens the session
    /// (``RestartGap/opensSession``; before, it kept none, and the session had nothing of the
    /// board though its log held all of it). Stalled means silent when the boards were
    /// asked to stop (`boardsStoppedAt`, monotonic): a shutdown (SIGTERM) turns every board's
    /// sensors and log off first and seals only once they have stopped, in a loaded VM 0.5-1.8 s
    /// later; judged at the seal, every streaming board looked stalled and kept a gap its log,
    /// stopped with its sensors, never filled. Nil when nothing is held and the stream
    /// is not stalled (heard within ``stopArrivalSlack`` by the live gap rule), its flash log
    /// does not fill its gaps, or it has no point in the session and did not resume from its
    /// start. (Soak seed 2112: a board's
    /// link-drop gap still waited for its log when the board stalled 3.5 s before the stop; the
    /// held gap ended at its last held point, and the 146 samples of the stall after it were
    /// lost.)
    func keepStallGap(board: String, sessionID: String, now: Int64, boardsStoppedAt: Int64,
                      held: PendingRestartGap?) -> PendingRestartGap? {
        guard backfillBoards.contains(board), let stream = boards[board],
              let newest = stream.previousPointTime ?? (stream.opensAtItsStart ? stream.began : nil) else { return held }
        let stop = timeBase.epochMilliseconds(monotonic: now)
        guard isStalled(stream, at: timeBase.epochMilliseconds(monotonic: min(boardsStoppedAt, now))) else { return held }
        if var held {
            // The held points are the stretch's stored points; the log's samples after the
            // last of them, up to the stop, are the stall's.
            held.until = stop
            return held
        }
        // A board resumed from the start (stalled or away then) with no point since was stalled
        // through the whole session: its log holds all of it, from its start (`newest`).
        let wholeSession = stream.pointsCommitted == 0 && (stream.resumedFromTheStart || stream.opensAtItsStart)
        guard stream.pointsCommitted > 0 || wholeSession else { return nil }
        var pending = PendingRestartGap(RestartGap(sessionID: sessionID, board: board, nextSeq: stream.seq, tail: [], after: newest,
                                                   opensSession: wholeSession))
        pending.until = stop
        // Its stream before the stall is this process's, in the stream window: the anchors.
        pending.tailStreamedHere = true
        pending.stoppedStream = (stream.gyroRate, stream.merger)
        return pending
    }

    /// Whether `stream` is stalled at epoch ms `time`: neither its newest point's time nor its
    /// last gyro notification's arrival lies within ``stopArrivalSlack`` and one and a half
    /// sample periods before it (the live gap rule, ``GapCount``). False for a stream never
    /// heard. Heard since its newest point's time: a stream whose stamps lie early (a new
    /// link's first seconds after a burst) is not silent (soak seed 2112: a stream restarted
    /// after a stall, its held points stamped early, arriving until the stop; a held gap
    /// stretched to the stop there took 23 samples of the log placed after its last held point
    /// twice).
    /// A stream that began in the session and has not been heard is stalled once silent for
    /// longer than a stream takes to start (``streamStartSlack``).
    func isStalled(_ stream: BoardStream, at time: Double) -> Bool {
        guard lastHeard(stream) == nil, stream.opensAtItsStart, let began = stream.began else {
            return isStalled(heard: lastHeard(stream), gyroRate: stream.gyroRate, at: time)
        }
        return hasNotStarted(began: began, gyroRate: stream.gyroRate, at: time)
    }

    /// How long after a stream began (``BoardStream/began``) its first sample may come,
    /// milliseconds. A board's stream is announced before the start's writes go out (its flash
    /// log's start, the sensors' configuration and start, one write with response each: several
    /// connection events apiece on a loaded link), and its sensors then take 30-130 ms to start
    /// and its first notifications are grouped for up to 250 ms; the board session's watchdog
    /// takes a stream silent for a second (5 periods, at least 1 s) for stalled. A first sample
    /// within that is the stream's start: no readout. (With the stop's 400 ms, a loaded
    /// in-process test's first sample 678 ms after its start was taken for a stall.)
    static let streamStartSlack = 1000.0

    /// Whether a stream that began at epoch ms `began` and has not been heard since is stalled at
    /// epoch ms `time`: its first sample is overdue by the live gap rule after ``streamStartSlack``.
    func hasNotStarted(began: Double, gyroRate: Double, at time: Double) -> Bool {
        isSilent(since: began, longerThan: Self.streamStartSlack, gyroRate: gyroRate, at: time)
    }

    /// Whether a stream last heard at epoch ms `heard` (``lastHeard(_:)``) at `gyroRate` is
    /// stalled at epoch ms `time` (``isStalled(_:at:)``).
    func isStalled(heard: Double?, gyroRate: Double, at time: Double) -> Bool {
        guard let heard else { return false }
        return isSilent(since: heard, longerThan: Self.stopArrivalSlack, gyroRate: gyroRate, at: time)
    }

    /// The one silence rule of a stall: at epoch ms `time`, a sample is overdue by the live gap
    /// rule (``GapCount``) after `slack` ms past `since` (epoch ms).
    private func isSilent(since: Double, longerThan slack: Double, gyroRate: Double, at time: Double) -> Bool {
        GapCount.missed(stepMs: time - slack - since, periodMs: 1000 / gyroRate) > 0
    }

    /// When `stream` was heard last, epoch ms: its newest point's time or its last gyro
    /// notification's arrival, whichever is later (nil if never). A stream restarted (the
    /// watchdog's restart, a new link) is not heard by its restart: silent since its newest
    /// point, it is stalled (StallAtStopEndToEndTests, the stop after the watchdog's restart).
    func lastHeard(_ stream: BoardStream) -> Double? {
        let arrival = stream.lastGyroArrival.map { timeBase.epochMilliseconds(monotonic: $0) }
        return [stream.previousPointTime, arrival].compactMap({ $0 }).max()
    }

    /// The first point of a stream that began in the session (``BoardStream/opensAtItsStart``),
    /// at epoch ms `time`: later after the stream began than a stream takes to start
    /// (``hasNotStarted(began:gyroRate:at:)``), the stretch before it is a stall, which the
    /// board's log fills as a gap that opens the session. With the sensors off between sessions
    /// a stall that began then is silent at the start like any (nothing was sampled, so nothing
    /// was lost then), but the board measures and logs from its sensors' start: its stream's
    /// first point counted no gap, and what it took until then was lost, unmarked. Within the
    /// slack it is the stream's first sample, as before: no readout for a healthy start.
    func openingStall(_ stream: BoardStream, firstPointAt time: Double) {
        guard stream.opensAtItsStart else { return }
        stream.opensAtItsStart = false
        guard stream.previousPointTime == nil, let began = stream.began,
              hasNotStarted(began: began, gyroRate: stream.gyroRate, at: time) else { return }
        stream.previousPointTime = began
        stream.resumedStream = true
        stream.resumedFromTheStart = true
    }

    /// Where the gap of a board whose link went before the stop at monotonic `now` ends
    /// (monotonic), or nil when it leaves none. A board away (its link went before the boards
    /// were asked to stop, `boardsStoppedAt`, or with no such moment) goes on measuring into its
    /// log: its gap reaches the stop. A board whose link ended after it was stopped by the
    /// shutdown (sensors and log off, then its link's end, before the seal) is no board away:
    /// its log holds nothing after its stop, and a gap kept to the seal (0.5-1.8 s after a
    /// SIGTERM in a loaded VM) waited for samples no log had ("0 filled a gap, 28-55 still
    /// missing" at the next run's readout). Its gap is a stall's, to its link's end, if it was
    /// stalled when the stop began (``isStalled(heard:gyroRate:at:)``).
    func awayGapEnd(_ resume: ResumePoint, now: Int64, boardsStoppedAt: Int64?) -> Int64? {
        guard let asked = boardsStoppedAt, let detached = resume.detachedAt, detached >= asked else { return now }
        let stalled = isStalled(heard: resume.heard, gyroRate: resume.gyroRate, at: timeBase.epochMilliseconds(monotonic: asked))
        return stalled ? min(detached, now) : nil
    }

    /// The boards linked at a session's start at epoch ms `started` whose streams are stalled
    /// (``isStalled(_:at:)``), and whose flash logs fill their gaps: the stall goes on into the
    /// new session, whose fresh streams would take their first points after it for their first
    /// samples (the stretch from the start lost, unmarked). Like a board away at the start, each
    /// resumes from the start (a ``ResumePoint`` at it): its first point counts the samples
    /// since, a gap its log fills.
    func stalledAtTheStart(_ started: Double) -> [String: ResumePoint] {
        var resume: [String: ResumePoint] = [:]
        for (key, stream) in boards where backfillBoards.contains(key) && isStalled(stream, at: started) {
            resume[key] = ResumePoint(seq: 0, points: 0, time: started, hold: nil, gyroRate: stream.gyroRate,
                                      accelerometerRate: stream.accelerometerRate, fromTheStart: true)
        }
        // With its sensors off between sessions (the default) a board is not linked into the
        // controller then, and silent either way: one stalled at the last stop, whose stall gap
        // still waits for its log (the stall most likely goes on: its readout comes through the
        // same notifications), may be stalled still. It measures from when its sensors start,
        // with this session, so its first point counts none missing before it; what it took
        // before its first streamed point comes from its log. (A healthy one costs a readout
        // that finds nothing before its first point.)
        for (key, gaps) in restartGaps where boards[key] == nil && resumeAt[key] == nil && backfillBoards.contains(key) {
            guard let rate = gaps.last?.stoppedStream?.gyroRate else { continue }
            resume[key] = ResumePoint(seq: 0, points: 0, time: started, hold: nil, gyroRate: rate, accelerometerRate: nil,
                                      fromTheStart: true)
        }
        return resume
    }
}
