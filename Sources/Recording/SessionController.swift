import Foundation
import GNSS
import MetaWear

/// Records walking sessions: starts and stops them, rebuilds sample times, merges gyro (and
/// accelerometer) samples with GNSS fixes, cuts 2,000-point chunks per board, appends each
/// second's new points as segments (one write for all boards) and seals full chunks into a
/// `RecordingStore`.
///
/// Not thread-safe: own it from one actor or task. Every method takes the current monotonic
/// time (nanoseconds) from the caller, so tests drive it with simulated time.
public final class SessionController {
    /// Tuning.
    public struct Configuration: Sendable {
        /// Points per chunk (the `realtime_data` limit).
        public var chunkSize = RealtimeDataDocument.maxPoints
        /// Longest time between segment writes (what a crash may lose), nanoseconds.
        public var checkpointInterval: Int64 = 1_000_000_000
        /// How long samples are held for the timestamp fit, nanoseconds.
        public var lookahead: Int64 = 1_000_000_000
        /// How long a sample waits for its bracketing fix, milliseconds (one fix interval).
        public var fixWait: Double = 1000
        /// How old a fix may be and still be used, milliseconds.
        public var fixFreshness: Double = 2000
        /// Start a session automatically whenever a board streams.
        public var alwaysMode = false
        /// Merge dead-reckoned fixes (marked `dead_reckoned` in documents) besides measured
        /// ones; manual input and simulator fixes are never merged.
        public var acceptsDeadReckoning = false
        /// How long points after a gap of a board with a flash log wait for its backfill
        /// (``SessionController/backfill(board:logged:bootOrigins:)``), milliseconds of their
        /// time; then they are committed with the gap marked.
        public var backfillWait = BackfillHold.defaultWait
        /// How often a board's flash log is marked and trimmed between sessions (never during
        /// one: ``SessionController/flashLogTrims(now:)``), nanoseconds.
        public var flashLogTrimInterval: Int64 = 5_000_000_000
        /// How often a healthy stream's board is asked to read its log's streamed part during a
        /// session (``SessionController/streamedLogReads(now:)``), nanoseconds; 0: never.
        public var streamedLogReadInterval: Int64 = 10_000_000_000
        /// The boards log their sensors instead of streaming them (rates beyond the link): the
        /// fixes are kept for as long as their downloads lag (``loggedFixLimit`` at most).
        public var recordsLogged = false
        /// Most fixes kept for logged points still to be downloaded: two hours at 1 Hz.
        public var loggedFixLimit = 7200

        /// Defaults.
        public init() {}
    }

    /// Where the controller is.
    public enum State: Hashable, Sendable {
        case idle
        case recording(sessionID: String)
    }

    /// Why a command was refused.
    public enum CommandError: Error, Hashable, CustomStringConvertible {
        case alreadyRecording(String)
        case notRecording
        case unknownSession(String)
        case invalidSurvey(String)
        case emptySession(String)

        public var description: String {
            switch self {
            case let .alreadyRecording(id): "session \(id) is already recording"
            case .notRecording: "no session is recording"
            case let .unknownSession(id): "session \(id) is not awaiting a survey"
            case let .invalidSurvey(why): "invalid survey: \(why)"
            case let .emptySession(id): "session \(id) recorded no data (no board streamed), so no records document is written"
            }
        }
    }

    /// Where a board that detached during the session resumes (a reconnect continues its
    /// chunk numbering and point indices instead of colliding with what it sealed).
    struct ResumePoint {
        var seq: Int
        var points: Int
        /// Time of its last point (see `previousPointTime`).
        var time: Double?
        /// Points held after a gap when its link went (a download may have begun): they wait
        /// on across the reconnect for the board's log, whose pages were not yet deleted.
        var hold: BackfillHold?
        var gyroRate: Double
        var accelerometerRate: Double?
        /// It resumes from the session's start (away, or stalled, then): its first point counts
        /// the samples since for its log to fill, but none missing before the first the log or
        /// stream gives (its sensors may only start with the session: ``BackfillHold/opensSession``).
        var fromTheStart = false
        /// When its link went (monotonic), and when its stream was heard last then (epoch ms,
        /// ``lastHeard(_:)``): a board a shutdown stopped is not away (``awayGapEnd(_:now:boardsStoppedAt:)``).
        var detachedAt: Int64?
        var heard: Double?
    }

    struct Session {
        var id: String
        /// Epoch ms of `startedMonotonic`, converted with `startSource`'s clock.
        var startedAt: Double
        var startedMonotonic: Int64
        var startSource: TimeSource
        var trigger: SessionTrigger
        var boards: Set<String> = []
        var pointCount = 0
        var distance = TrackDistance()
        /// The weakest source of the points committed (none: the best).
        var pointsSource = TimeSource.systemClockSynchronised
        /// The source of the session's times: its start's and its points'.
        var worstSource: TimeSource { max(startSource, pointsSource) }
    }

    public private(set) var configuration: Configuration
    public private(set) var timeBase: TimeBase
    let store: any RecordingStore
    private let makeID: () -> String
    var boards: [String: BoardStream] = [:]
    var session: Session?
    var failedSeals: [ChunkToSeal] = []
    /// Chunks sealed since ``holdSealsForTheStop()`` (or during ``stop(trigger:now:boardsStoppedAt:)``),
    /// in seal order: stored with the session's end in one transaction. Nil while none is held.
    var sealsForTheStop: [ChunkToSeal]?
    /// Ends of sessions stored once their refused chunks are sealed (``endOnceSealed(_:)``).
    var endsWaitingForSeals: [SessionEnd] = []
    /// Sessions this process stopped before its first GNSS fix, their times on the
    /// unsynchronised system clock: that fix converts them too (``convertOntoGNSSTimeOnceCorrected()``).
    var stoppedBeforeTheFirstFix: [String] = []
    private var nextSealRetry: Int64 = .min
    private var sealRetryDelay = SessionController.firstSealRetryDelay
    private(set) var lastSegmentWrite: Int64 = .min
    private static let firstSealRetryDelay: Int64 = 1_000_000_000
    private static let maxSealRetryDelay: Int64 = 30_000_000_000
    /// Boards detached during the session.
    var resumeAt: [String: ResumePoint] = [:]
    /// Boards whose flash log fills their gaps (see ``expectBackfill(board:_:)``).
    var backfillBoards: Set<String> = []
    /// Each board's recent stream, kept across its links (what logged samples are matched with).
    var streamed: [String: StreamedWindow] = [:]
    /// Each board's logged samples of its last released hold: a gap mark confirmed after that
    /// readout (5 s late) waits for the next one, which no longer holds the entries around it
    /// (the board deleted the pages the first one confirmed; ``marksTheLogContradicts(board:hold:)``).
    var previousLog: [String: LoggedSamples] = [:]
    /// Each board's gyro and accelerometer periods by its log's ticks, from the readouts so far.
    var loggedPeriods: [String: (gyro: LoggedPeriod, accelerometer: LoggedPeriod)] = [:]
    /// The same for each board's accelerometer stream, and its logged samples of the readout.
    var streamedAccelerometer: [String: StreamedWindow] = [:]
    var loggedAccelerometer: [String: LoggedSamples] = [:]
    /// Boards whose points started waiting for a backfill since the last ``takeBackfillRequests()``.
    var backfillRequests: Set<String> = []
    /// Per board: points after a gap appended in this process (kept across links).
    var gapsNoticed: [String: Int] = [:]
    /// Per board: the last flash log length mark.
    var trimMarks: [String: TrimMark] = [:]
    /// Per board: when a readout of its log's streamed part was last asked for (monotonic ns).
    var streamedLogReadAt: [String: Int64] = [:]
    /// Per board: the gaps gateway restarts left in recovered sessions, oldest first, until its
    /// log fills them (no entry when there is none).
    var restartGaps: [String: [PendingRestartGap]] = [:]
    /// Per board that logs instead of streaming: its timelines (see ``recordLogged(board:gyro:accelerometer:gyroScale:accelerometerScale:bootOrigins:now:)``).
    var loggedRecordings: [String: LoggedRecording] = [:]
    /// Per board: what stopped logged sessions still wait for from its log, oldest first.
    var loggedRests: [String: [LoggedRest]] = [:]
    /// Boards whose log is read out for stopped sessions' rests (until the readout ends).
    var loggedDrains: Set<String> = []
    /// The rests the stop under way keeps (``keepLoggedRests(boards:now:)``).
    var pendingLoggedRests: [String: LoggedRest] = [:]
    /// Per logged board of the recording session: the boot origins the store keeps for it.
    var keptLoggedOrigins: [String: Set<UInt8>] = [:]
    /// The fixes that locate logged points, kept from the oldest one still to be downloaded.
    var loggedFixes: LocationMerger<GyroItem>
    /// Backfilled samples sealed into sessions whose survey is in, until their gap is done
    /// (``takeRevisions()``), and the revisions done since the last take.
    var revisionsUnderway: [SessionBoard: Int] = [:]
    var revisionsFinished: [SessionRevision] = []
    /// Sessions stopped and awaiting their hazard survey, oldest first.
    public private(set) var awaitingSurvey: [String] = []
    /// Stopped sessions that recorded no point (no records document can be written for them),
    /// until a correction chunk is sealed into one (its boards all stalled through it).
    var emptySessions: Set<String> = []
    /// The last store error (recording goes on; failed seals are retried on `tick`).
    public internal(set) var lastStoreError: String?
    /// Chunks sealed by this controller, in order (name, session, board, seq, points).
    public internal(set) var sealedCount = 0

    /// A controller writing into `store`; `makeID` names sessions (UUIDs by default).
    public init(store: any RecordingStore, timeBase: TimeBase, configuration: Configuration = Configuration(),
                makeID: @escaping () -> String = { UUID().uuidString }) {
        self.store = store
        self.timeBase = timeBase
        self.configuration = configuration
        self.makeID = makeID
        loggedFixes = LocationMerger(maxWait: configuration.fixWait, freshness: configuration.fixFreshness,
                                     fixLimit: configuration.loggedFixLimit)
    }

    /// Idle or recording.
    /// Switches always-on recording on or off (configuration reload). Turning it off does not
    /// stop a running session; turning it on starts one with the next sample.
    public func setAlwaysMode(_ enabled: Bool) {
        configuration.alwaysMode = enabled
    }

    /// True while sealed chunks wait for a retry because the store refused them (the buffer
    /// is not writable right now), or a session's end waits for them (``endOnceSealed(_:)``).
    public var hasFailedSeals: Bool { !failedSeals.isEmpty || !endsWaitingForSeals.isEmpty }

    public var state: State { session.map { .recording(sessionID: $0.id) } ?? .idle }

    /// Adds a streaming board with its configured rates; its stream began at monotonic `now`
    /// (when its sensors started streaming, or its link came; nil: not told). A stream that
    /// begins during a session with nothing of the board before it is the board's part of the
    /// session from `now` (``BoardStream/opensAtItsStart``).
    public func attach(board: String, gyroRateHertz: Double, accelerometerRateHertz: Double? = nil, now: Int64? = nil) {
        let gyro = SampleTimestamper<MotionSamples>.Configuration(rateHertz: gyroRateHertz, lookahead: configuration.lookahead)
        let accel = accelerometerRateHertz.map {
            SampleTimestamper<MotionSamples>(configuration: .init(rateHertz: $0, lookahead: configuration.lookahead))
        }
        let stream = BoardStream(
            gyroRate: gyroRateHertz, accelerometerRate: accelerometerRateHertz,
            gyro: SampleTimestamper(configuration: gyro), accelerometer: accel,
            merger: LocationMerger(maxWait: configuration.fixWait, freshness: configuration.fixFreshness))
        stream.backfillExpected = backfillBoards.contains(board)
        if let periods = loggedPeriods[board] { stream.takeBoardPeriods(periods) }
        stream.began = now.map(timeBase.epochMilliseconds(monotonic:))
        streamed[board]?.beginLink()
        streamedAccelerometer[board]?.beginLink()
        if session != nil, let resume = resumeAt.removeValue(forKey: board) {
            stream.seq = resume.seq
            stream.pointsCommitted = resume.points
            stream.pointsWritten = resume.points
            if let time = resume.time {
                stream.previousPointTime = time
                stream.resumedStream = true
            }
            stream.resumedFromTheStart = resume.fromTheStart
            if let hold = resume.hold {
                stream.hold = hold
                backfillRequests.insert(board)
            }
        } else if session != nil, stream.began != nil {
            stream.opensAtItsStart = true
        }
        boards[board] = stream
        keepLoggedSession(board: board)
    }

    /// Removes a board (disconnect): its samples are committed and its chunk sealed. Points
    /// held for a backfill wait on (journaled) for the board's return, until
    /// ``Configuration/backfillWait`` from its new link's first point (its log can only be
    /// read then) or the session's end.
    public func detach(board: String, now: Int64) {
        guard boards[board] != nil else { return }
        drainAll(board: board, now: now)
        if session == nil { releaseHold(board: board, backfilled: []) }
        // Its drained points go into the chunk sealed now: journaled first, they cost a second
        // fsync on a stop's path (issue 18 §2.7). Only points held for a backfill (not in the
        // chunk) or a chunk the store refused (kept in memory for a retry) are journaled.
        if !sealOpenChunk(board: board) || boards[board]?.hold != nil { writeSegments(now: now, force: true) }
        // Everything it committed is now in a chunk (sealed, or waiting for a seal retry).
        if session != nil, let b = boards[board] {
            // One that began in the session and gave no point resumes from where it began.
            let opening = b.opensAtItsStart ? b.began : nil
            resumeAt[board] = ResumePoint(seq: b.seq, points: b.pointsCommitted, time: b.previousPointTime ?? opening, hold: b.hold,
                                          gyroRate: b.gyroRate, accelerometerRate: b.accelerometerRate,
                                          fromTheStart: (b.resumedFromTheStart || opening != nil) && b.pointsCommitted == 0,
                                          detachedAt: now, heard: lastHeard(b))
        }
        keepStreamForRestartGaps(board: board)
        boards[board] = nil
    }

    /// Starts a session.
    @discardableResult
    public func start(trigger: SessionTrigger, now: Int64) throws -> String {
        if let s = session { throw CommandError.alreadyRecording(s.id) }
        let id = makeID()
        let started = timeBase.epochMilliseconds(monotonic: now)
        try store.beginSession(SessionStart(sessionID: id, startedAt: started, trigger: trigger))
        session = Session(id: id, startedAt: started, startedMonotonic: now, startSource: timeBase.source, trigger: trigger)
        // A board whose link went during the last session and is not back yet (the gap kept at
        // that stop still waits for it) may still be measuring (out of range): when it returns,
        // what it took since this start is a gap its flash log fills, like a link drop's.
        let away = resumeAt.filter { boards[$0.key] == nil && backfillBoards.contains($0.key) && restartGaps[$0.key] != nil }
        resumeAt = away.mapValues {
            ResumePoint(seq: 0, points: 0, time: started, hold: nil, gyroRate: $0.gyroRate, accelerometerRate: $0.accelerometerRate,
                        fromTheStart: true)
        }
        // So may a board linked but stalled (its stream silent since before the start): each
        // board's new stream (``attach(board:gyroRateHertz:accelerometerRateHertz:)``) takes it.
        resumeAt.merge(stalledAtTheStart(started)) { away, _ in away }
        loggedRecordings.removeAll()
        keptLoggedOrigins.removeAll()
        // What an interrupted session waits for from a board not back yet ends here: the board
        // now records for this one.
        boundOpenLoggedRests(at: started)
        lastSegmentWrite = .min
        for key in boards.keys.sorted() {
            resetBoard(key, now: now)
            keepLoggedSession(board: key)
        }
        return id
    }

    /// Stops the recording session: held samples are committed, every board's last chunk is
    /// sealed, and the session awaits its survey. `boardsStoppedAt` (monotonic, default `now`)
    /// is when the boards were asked to stop: a shutdown stops them first and seals only once
    /// they have (``keepStallGap(board:sessionID:now:boardsStoppedAt:held:)``).
    @discardableResult
    public func stop(trigger: SessionTrigger, now: Int64, boardsStoppedAt: Int64? = nil) throws -> SessionEnd {
        guard var s = session else { throw CommandError.notRecording }
        // Every board's last chunk and the gaps the stop leaves, kept with the session's end in
        // one transaction.
        if sealsForTheStop == nil { sealsForTheStop = [] }
        var stopGaps: [StopGapBound] = []
        // Boards that left with points held: those are committed too.
        // A gap whose download is not complete yet is filled later, as a correction.
        for (key, resume) in resumeAt.sorted(by: { $0.key < $1.key }) where resume.hold != nil && boards[key] == nil {
            attach(board: key, gyroRateHertz: resume.gyroRate, accelerometerRateHertz: resume.accelerometerRate)
            // What it took after its last held point until the stop is in its log too.
            if let gap = sealAtStop(board: key, sessionID: s.id, now: now, boardsStoppedAt: boardsStoppedAt ?? now,
                                    processEnds: trigger == .shutdown) { stopGaps.append(gap) }
            boards[key] = nil
        }
        // Boards away (their link went, nothing streamed since): what they took until the stop
        // is a gap their logs fill when they return, sealed into this session.
        for (key, resume) in resumeAt.sorted(by: { $0.key < $1.key }) where resume.hold == nil && boards[key] == nil {
            let away = keepAwayGap(board: key, resume: resume, sessionID: s.id, now: now, boardsStoppedAt: boardsStoppedAt)
            if let gap = waitForStopGap(away, board: key) { stopGaps.append(gap) }
        }
        // Boards linked: points held after a gap, or a stream silent since its newest point (a
        // stall no sample has shown yet), are a gap their logs fill.
        for key in boards.keys.sorted() {
            drainAll(board: key, now: now)
            if let gap = sealAtStop(board: key, sessionID: s.id, now: now, boardsStoppedAt: boardsStoppedAt ?? now,
                                    processEnds: trigger == .shutdown) { stopGaps.append(gap) }
        }
        s = session ?? s
        let end = SessionEnd(sessionID: s.id, endedAt: timeBase.epochMilliseconds(monotonic: now), trigger: trigger,
                             boards: s.boards.sorted(), pointCount: s.pointCount, distance: s.distance.metres,
                             timeSource: s.worstSource)
        waitForLoggedRests(sessionID: s.id)
        try storeEnd(end, stopGaps: stopGaps, now: now)
        session = nil
        awaitingSurvey.append(s.id)
        if timeBase.source == .unsynchronisedSystemClock { stoppedBeforeTheFirstFix.append(s.id) }
        if s.pointCount == 0 { emptySessions.insert(s.id) }
        return end
    }

    /// A linked board's part of the stop: its held points committed (at a shutdown with what its
    /// readout's pages brought), its last chunk sealed, and the gap its log still fills (points
    /// held after a gap, a stall since its newest point) kept for the session's end.
    private func sealAtStop(board: String, sessionID: String, now: Int64, boardsStoppedAt: Int64,
                            processEnds: Bool) -> StopGapBound? {
        // What the log read so far shows, before the held points become the stop gap's tail.
        takeBackDelaysTheLogShows(board: board)
        var kept = keepStallGap(board: board, sessionID: sessionID, now: now, boardsStoppedAt: boardsStoppedAt,
                                held: keepStopGap(board: board, sessionID: sessionID))
        releaseHoldAtStop(board: board, keeping: &kept, processEnds: processEnds)
        sealOpenChunk(board: board)
        return waitForStopGap(kept, board: board)
    }

    /// The gap of a board away at the stop (``stop(trigger:now:boardsStoppedAt:)``): from its last
    /// point to the stop, kept like a stop gap; from the start when it resumed from there (away or
    /// stalled then) and gave no point since, a gap that opens the session (``RestartGap/opensSession``:
    /// a board stalled through the whole session, whose link the stream watchdog dropped, may be
    /// between links at the stop). A gap of an earlier session its log is still read for does not
    /// stand in the way: each gap takes the log's samples of its own stretch (before, a board away
    /// at the start and still away at the stop kept no gap, though its log held the session).
    /// Nil when it has no point in the session and did not resume from its start, its flash log
    /// does not fill its gaps, or it is not away but stopped by the shutdown:
    /// ``awayGapEnd(_:now:boardsStoppedAt:)``.
    private func keepAwayGap(board: String, resume: ResumePoint, sessionID: String, now: Int64,
                             boardsStoppedAt: Int64?) -> PendingRestartGap? {
        let wholeSession = resume.points == 0 && resume.fromTheStart
        guard backfillBoards.contains(board), let after = resume.time, resume.points > 0 || wholeSession,
              let until = awayGapEnd(resume, now: now, boardsStoppedAt: boardsStoppedAt) else { return nil }
        var pending = PendingRestartGap(RestartGap(sessionID: sessionID, board: board, nextSeq: resume.seq, tail: [], after: after,
                                                   opensSession: wholeSession))
        pending.until = timeBase.epochMilliseconds(monotonic: until)
        // Its own stream (and its fixes) went with its link: another board's fixes locate it.
        let merger = boards.values.first?.merger
            ?? LocationMerger(maxWait: configuration.fixWait, freshness: configuration.fixFreshness)
        pending.stoppedStream = (resume.gyroRate, merger)
        return pending
    }

    /// A board's button was pressed: starts a session, or stops the one recording.
    public func buttonPressed(board: String, now: Int64) throws {
        if session == nil { try start(trigger: .button(board: board), now: now) } else { try stop(trigger: .button(board: board), now: now) }
    }

    /// Queues, ahead of this controller's own, the sessions stopped before it started that
    /// still wait for their survey (recovered after a crash, or ended at shutdown), so every
    /// survey goes through ``submitSurvey(_:sessionID:submittedAt:)``.
    public func adoptAwaitingSurvey(_ sessionIDs: [String]) {
        awaitingSurvey.insert(contentsOf: sessionIDs.filter { !awaitingSurvey.contains($0) }, at: 0)
    }

    /// Adopts (``adoptAwaitingSurvey(_:)``) the sessions the store holds awaiting their survey.
    public func adoptAwaitingSurveyFromStore() throws {
        adoptAwaitingSurvey(try store.sessionsAwaitingSurvey())
    }

    /// Submits the hazard survey of a stopped session (the oldest awaiting one when nil).
    @discardableResult
    public func submitSurvey(_ survey: HazardSurvey, sessionID: String? = nil, submittedAt: Date) throws -> RecordsDocument {
        guard let id = sessionID ?? awaitingSurvey.first, let index = awaitingSurvey.firstIndex(of: id) else {
            throw CommandError.unknownSession(sessionID ?? "(none)")
        }
        let valid: HazardSurvey
        do { valid = try survey.validated() } catch { throw CommandError.invalidSurvey(error.description) }
        // A record whose `gscope_data` is empty is an invalid document; a session that
        // recorded nothing gets none, and the next survey is for the next session. One whose
        // boards' logs still owe it a gap waits for them (the store refuses it until then).
        if emptySessions.contains(id), !hasPendingCorrections(sessionID: id) {
            emptySessions.remove(id)
            awaitingSurvey.remove(at: index)
            throw CommandError.emptySession(id)
        }
        let record = try store.submitSurvey(sessionID: id, survey: valid, submittedAt: submittedAt)
        awaitingSurvey.remove(at: index)
        return record
    }

    /// Feeds one decoded notification of `board` received at `receivedAt`.
    public func ingest(board: String, event: MetaWearEvent, receivedAt: Int64) {
        guard boards[board] != nil else { return }
        // Heard between sessions too: a start tells a stalled stream by it.
        if case .gyro = event { boards[board]?.lastGyroArrival = receivedAt }
        if session == nil, configuration.alwaysMode { _ = try? start(trigger: .always, now: receivedAt) }
        // Looked up after a start, which gives every board a new stream.
        guard session != nil, let stream = boards[board] else { return }
        switch event {
        case let .gyro(samples):
            stream.lastGyroArrival = receivedAt
            let stamped = stream.gyro.add(samples, count: samples.count, receivedAt: receivedAt)
            acceptGyro(board: board, stream, stamped, now: receivedAt)
        case let .accelerometer(samples):
            guard let stamped = stream.accelerometer?.add(samples, count: samples.count, receivedAt: receivedAt) else { return }
            acceptAccelerometer(board: board, stream, stamped)
        default:
            return
        }
        writeSegments(now: receivedAt)
    }

    /// Feeds a GNSS fix received at monotonic `now`.
    public func ingest(fix: GNSSFix, now: Int64) {
        let uncorrected = timeBase.source == .unsynchronisedSystemClock
        timeBase.observe(fix, at: now)
        if uncorrected, timeBase.source == .gnssCorrected { convertOntoGNSSTimeOnceCorrected() }
        guard let located = LocatedFix(fix, timeBase: timeBase, acceptingDeadReckoning: configuration.acceptsDeadReckoning) else { return }
        if session != nil { session!.distance.add(latitude: located.latitude, longitude: located.longitude, accuracy: located.accuracy) }
        let nowMs = timeBase.epochMilliseconds(monotonic: now)
        for key in boards.keys {
            commit(board: key, boards[key]?.merger.add(fix: located, now: nowMs) ?? [])
        }
        if (session != nil && configuration.recordsLogged) || !loggedRests.isEmpty {
            _ = loggedFixes.add(fix: located, now: nowMs)
            keepFixesForLoggedDownloads()
        }
    }

    /// Periodic work (call at least every second while recording or while ``hasFailedSeals``):
    /// releases samples whose fix wait is over, appends the second's segments, retries failed
    /// seals. Idle with nothing to retry, it does nothing. `beforeTheStop`: the session's stop
    /// follows in the same step and writes everything in its one transaction, so nothing (no
    /// segment, seal retry or held chunk, ``holdSealsForTheStop()``) is written now.
    public func tick(now: Int64, beforeTheStop: Bool = false) {
        if !beforeTheStop { retryFailedSeals(now: now) }
        guard session != nil else { return }
        let nowMs = timeBase.epochMilliseconds(monotonic: now)
        for key in boards.keys {
            commit(board: key, boards[key]?.merger.release(now: nowMs) ?? [])
            if let hold = boards[key]?.hold, !hold.isBeingRead(now: nowMs, wait: configuration.backfillWait),
               nowMs - hold.since > configuration.backfillWait
                || nowMs - hold.firstHeld > BackfillHold.longestHoldInWaits * configuration.backfillWait {
                giveUpWaitingForTheLog(board: key)
            }
        }
        guard !beforeTheStop else { return }
        sealHeldChunksIfDue(now: now)
        writeSegments(now: now)
    }

    /// A reading of the system and monotonic clocks at one instant: returns whether the system
    /// clock was stepped (``TimeBase/readWallClock(wallNanoseconds:monotonicNanoseconds:)``).
    @discardableResult
    public func readWallClock(wallNanoseconds: Int64, monotonicNanoseconds: Int64) -> Bool {
        timeBase.readWallClock(wallNanoseconds: wallNanoseconds, monotonicNanoseconds: monotonicNanoseconds)
    }

    /// Tells the controller whether the system clock is synchronised (from adjtimex or
    /// timedated at the edge).
    public func setSystemClockSynchronised(_ synchronised: Bool) {
        timeBase.systemClockSynchronised = synchronised
        // Synchronised, the clock may have been stepped: how far the times taken before were
        // off is no longer known, and their sessions stay on the system clock (and say so).
        if synchronised { stoppedBeforeTheFirstFix = [] }
    }

    // MARK: Internals

    /// Gives a linked board a new stream at the session's start (monotonic `now`): the board
    /// measures on, and what it takes from the start is the session's.
    private func resetBoard(_ key: String, now: Int64) {
        guard let b = boards[key] else { return }
        attach(board: key, gyroRateHertz: b.gyroRate, accelerometerRateHertz: b.accelerometerRate, now: now)
    }

    private func acceptGyro(board: String, _ stream: BoardStream, _ stamped: [SampleTimestamper<MotionSamples>.Stamped],
                            now: Int64) {
        guard !stamped.isEmpty else { return }
        let nowMs = timeBase.epochMilliseconds(monotonic: now)
        let source = timeBase.source
        var released: [LocationMerger<GyroItem>.Located] = []
        rememberStreamed(board: board, stamped)
        if let first = stamped.first?.times.first { restartStreamResumed(board: board, at: first) }
        for s in stamped {
            for (k, t) in s.times.enumerated() {
                let item = GyroItem(sample: s.payload[k], missedBefore: k == 0 ? s.missedBefore : 0, source: source)
                released += stream.merger.add(item, time: timeBase.epochMilliseconds(monotonic: t), now: nowMs)
            }
        }
        commit(board: board, stream, released)
    }

    private func acceptAccelerometer(board: String, _ stream: BoardStream, _ stamped: [SampleTimestamper<MotionSamples>.Stamped]) {
        for s in stamped {
            for (k, t) in s.times.enumerated() {
                let v = s.payload[k]
                let time = timeBase.epochMilliseconds(monotonic: t)
                stream.recentAccelerometer.append(AccelerometerReading(v, timestamp: time))
                stream.accelerometerStampedUntil = time
            }
        }
        rememberStreamedAccelerometer(board: board, stamped)
        releaseWaitingForAccelerometer(board: board, stream, force: false)
    }

    /// The accelerometer sample nearest `time` within half an accelerometer period.
    func nearestAccelerometer(board: String, time: Double) -> AccelerometerReading? {
        boards[board]?.nearestAccelerometer(to: time)
    }

    /// Commits (or holds) the points the merger released; the stream is `board`'s.
    private func commit(board: String, _ released: [LocationMerger<GyroItem>.Located]) {
        guard let stream = boards[board] else { return }
        commit(board: board, stream, released)
    }

    private func commit(board: String, _ stream: BoardStream, _ released: [LocationMerger<GyroItem>.Located]) {
        guard session != nil else { return }
        if stream.accelerometerRate == nil {
            appendAll(board: board, stream, released[...])
        } else {
            stream.waitingForAccelerometer += released
            releaseWaitingForAccelerometer(board: board, stream, force: false)
        }
    }

    /// Commits gyro points once the accelerometer stream has been stamped past them (so the
    /// nearest accelerometer sample is known), or when more than 3 s wait (a stalled stream).
    private func releaseWaitingForAccelerometer(board: String, _ b: BoardStream, force: Bool) {
        guard let rate = b.accelerometerRate, !b.waitingForAccelerometer.isEmpty else { return }
        let halfPeriod = 500 / rate
        let waiting = b.waitingForAccelerometer
        var released = 0
        for l in waiting {
            let ready = force || l.time + halfPeriod <= b.accelerometerStampedUntil || waiting.count - released > Int(b.gyroRate * 3)
            guard ready else { break }
            released += 1
        }
        guard released > 0 else { return }
        b.waitingForAccelerometer.removeFirst(released)
        appendAll(board: board, b, waiting.prefix(released))
    }

    /// Appends points in order, sealing each chunk as it fills.
    private func appendAll(board: String, _ stream: BoardStream, _ items: ArraySlice<LocationMerger<GyroItem>.Located>) {
        for item in items where append(board: board, stream, item) { sealOpenChunk(board: board) }
    }

    /// Adds one point to the open chunk; true when the chunk is now full. After a gap of a
    /// board with a flash log, the point and those after it are held for the backfill.
    private func append(board: String, _ stream: BoardStream, _ l: LocationMerger<GyroItem>.Located) -> Bool {
        guard session != nil else { return false }
        var p = stream.point(l)
        openingStall(stream, firstPointAt: p.gyroscope.timestamp)
        let previous = stream.previousPointTime
        let firstOfNewLink = stream.resumedStream
        markGap(&p, stream)
        if p.missedBefore > 0 { gapsNoticed[board, default: 0] += 1 }
        if stream.hold != nil {
            if firstOfNewLink {
                stream.hold?.newestLinkSince = p.gyroscope.timestamp
                let start = stream.hold?.points.count ?? 0
                stream.hold?.linkStarts.append(start)
            }
            stream.hold?.points.append((p, l.payload.source))
            return false
        }
        // A new link's first points may be stamped up to tens of milliseconds early (its
        // timestamper starts from nothing), which hides a short drop's gap from the times
        // (soak seed 12: 7 samples, first point one period after the last): the log says.
        if p.missedBefore > 0 || firstOfNewLink, stream.backfillExpected {
            // Points after the gap already written as provisional ones (before the gap was
            // known) are journaled again, with the times they have now, in held records.
            stream.hold = BackfillHold(after: previous, startIndex: stream.pointsCommitted, points: [(p, l.payload.source)])
            stream.hold?.opensSession = stream.resumedFromTheStart && stream.pointsCommitted == 0
            backfillRequests.insert(board)
            return false
        }
        return commit(board: board, stream, point: p, source: l.payload.source)
    }

    /// Commits one final point to the board's open chunk; true when the chunk is now full.
    func commit(board: String, point p: RecordedPoint, source: TimeSource) -> Bool {
        guard let stream = boards[board] else { return false }
        return commit(board: board, stream, point: p, source: source)
    }

    private func commit(board: String, _ stream: BoardStream, point p: RecordedPoint, source: TimeSource) -> Bool {
        let full = stream.commit(p, source: source, chunkSize: configuration.chunkSize)
        guard session != nil else { return full }
        // Listed once per stream, not hashed into the set per point.
        if !stream.listedInSession {
            session?.boards.insert(board)
            stream.listedInSession = true
        }
        session?.pointCount += 1
        if let worst = session?.pointsSource { session?.pointsSource = max(worst, source) }
        return full
    }

    /// The largest step back, in milliseconds, between a board's consecutive points that is
    /// taken for two streams' overlapping time estimates (see ``markGap(_:_:)``).
    static let overlapPlacedAfter: Double = 1000

    /// Gives a gap its duration, and counts the samples a reconnect cost: the new stream's
    /// timestamper starts from nothing, so the first point after a re-attach is compared with
    /// the board's last point before it at the configured rate.
    private func markGap(_ p: inout RecordedPoint, _ stream: BoardStream) {
        if let previous = stream.previousPointTime, p.gyroscope.timestamp <= previous,
           previous - p.gyroscope.timestamp < Self.overlapPlacedAfter {
            // Each stream's timestamper starts from nothing: after a re-attach its first
            // estimates can fall a few milliseconds before the last point of the stream before
            // it, when the two links' latencies differ (seen in the real-BlueZ VM: 3 ms). The
            // board took these samples later, so they go just after that point. A larger step
            // back is a clock correction, not an overlap, and is left as it is.
            p.gyroscope.timestamp = previous + 1
        }
        let time = p.gyroscope.timestamp
        defer {
            stream.previousPointTime = time
            stream.resumedStream = false
        }
        guard let previous = stream.previousPointTime else { return }
        let step = time - previous
        if stream.resumedStream, p.missedBefore == 0 {
            let period = 1000 / stream.gyroRate
            p.missedBefore = GapCount.missed(stepMs: step, periodMs: period)
        }
        if p.missedBefore > 0 { p.gapMilliseconds = GapCount.milliseconds(missed: p.missedBefore, stepMs: step) }
    }

    private func drainAll(board: String, now: Int64) {
        guard session != nil, let stream = boards[board] else { return }
        let nowMs = timeBase.epochMilliseconds(monotonic: now)
        if let stamped = stream.accelerometer?.flush() { acceptAccelerometer(board: board, stream, stamped) }
        acceptGyro(board: board, stream, stream.gyro.flush(), now: now)
        commit(board: board, stream, stream.merger.release(now: nowMs))
        commit(board: board, stream, stream.merger.flush())
        releaseWaitingForAccelerometer(board: board, stream, force: true)
    }

    /// Seals `board`'s open chunk. Returns false when the store refused it (kept for a retry).
    @discardableResult
    func sealOpenChunk(board: String) -> Bool {
        guard let s = session, let b = boards[board], b.committedCount > 0 else { return true }
        var chunk = ChunkToSeal(sessionID: s.id, board: board, seq: b.seq, bytes: b.committed, pointCount: b.committedCount,
                                firstTimestamp: b.firstTimestamp, lastTimestamp: b.lastTimestamp,
                                timeSource: b.worstSource, missedSamples: b.missedInChunk)
        chunk.checksum = b.committedChecksum
        chunk.segmentsThrough = b.pointsCommitted
        b.committed = []
        b.committedChecksum = 0
        b.committed.reserveCapacity(configuration.chunkSize * 56)
        b.committedCount = 0
        b.missedInChunk = 0
        b.seq += 1
        // An earlier chunk of this board still waiting to be sealed must land first.
        if failedSeals.contains(where: { $0.board == board }) {
            failedSeals.append(chunk)
            return false
        }
        if sealsForTheStop != nil {
            sealsForTheStop?.append(chunk)
            boards[board]?.journaledReadings.runsStored()
            return true
        }
        do {
            try store.seal(chunk)
            sealedCount += 1
            boards[board]?.journaledReadings.runsStored()
            return true
        } catch {
            lastStoreError = "seal of \(board) chunk \(chunk.seq) failed: \(error)"
            failedSeals.append(chunk)
            return false
        }
    }

    /// Retries seals that failed (disk full, I/O error). A failure holds back only the later
    /// chunks of the same board, so seal order per board (the `gscope_data` order) is kept
    /// while the other boards go on; retries back off to at most every 30 s so a store that
    /// keeps failing is not hammered from every tick.
    func retryFailedSeals(now: Int64, force: Bool = false) {
        guard hasFailedSeals, force || now >= nextSealRetry else { return }
        defer { storeEndsNoLongerWaiting() }
        var blockedBoards: Set<String> = []
        var stillFailing: [ChunkToSeal] = []
        for chunk in failedSeals {
            if blockedBoards.contains(chunk.board) {
                stillFailing.append(chunk)
                continue
            }
            do {
                try store.seal(chunk)
                sealedCount += 1
            } catch {
                lastStoreError = "seal retry of \(chunk.board) chunk \(chunk.seq) failed: \(error)"
                blockedBoards.insert(chunk.board)
                stillFailing.append(chunk)
            }
        }
        failedSeals = stillFailing
        if failedSeals.isEmpty {
            sealRetryDelay = Self.firstSealRetryDelay
        } else {
            nextSealRetry = now + sealRetryDelay
            sealRetryDelay = min(sealRetryDelay * 2, Self.maxSealRetryDelay)
        }
    }

    /// Appends, in one store write for all boards, every point not yet written: points
    /// committed since the last write, then samples still held that arrived since then (of a
    /// board whose points wait for a backfill, those go with its held points into a held
    /// record). A point is written once; its final form goes into the chunk at the seal.
    /// At most once per ``Configuration/checkpointInterval`` unless `force`d. Returns whether
    /// everything is written (nothing to write, or the store took it).
    @discardableResult
    func writeSegments(now: Int64?, force: Bool = false) -> Bool {
        guard let s = session else { return true }
        if !force, let now {
            guard lastSegmentWrite == .min || now - lastSegmentWrite >= configuration.checkpointInterval else { return true }
        }
        var segments: [OpenSegment] = []
        var writtenThrough: [String: Int] = [:]
        var heldThrough: [String: Int] = [:]
        var provisionalReadings: [String: (first: Int, readings: [AccelerometerReading?])] = [:]
        for key in boards.keys.sorted() {
            guard let b = boards[key] else { continue }
            let provisional = provisionalPoints(board: key)
            if let (held, until) = heldSegment(board: key, sessionID: s.id, provisional: provisional) {
                segments.append(held)
                heldThrough[key] = until
            }
            // Points journaled before with another accelerometer reading (committed, or
            // still provisional): after the records they replace.
            if b.accelerometerRate != nil, b.hold == nil {
                boards[key]?.journaledReadings.stillProvisional(provisional.prefix(max(0, b.pointsWritten - b.pointsCommitted)),
                                                                from: b.pointsCommitted, source: timeBase.source)
            }
            defer {
                for run in boards[key]?.journaledReadings.runs ?? [] {
                    segments.append(OpenSegment(sessionID: s.id, board: key, firstIndex: run.firstIndex, bytes: run.bytes,
                                                pointCount: run.count, timeSource: run.timeSource))
                }
            }
            // Held samples have the indices after the committed points; those below
            // `pointsWritten` are in an earlier segment. While points are held for a
            // backfill, the held record carries them instead.
            let regular = b.hold == nil ? provisional : []
            let skip = max(0, b.pointsWritten - b.pointsCommitted)
            guard b.unwrittenCount > 0 || regular.count > skip else { continue }
            var bytes = b.unwritten
            for p in regular.dropFirst(skip) { PointCodec.append(p, to: &bytes) }
            let count = b.unwrittenCount + max(0, regular.count - skip)
            let source = b.unwrittenCount > 0 ? max(b.unwrittenSource, timeBase.source) : timeBase.source
            segments.append(OpenSegment(sessionID: s.id, board: key, firstIndex: b.pointsWritten, bytes: bytes,
                                        pointCount: count, timeSource: source))
            writtenThrough[key] = b.pointsWritten + count
            if b.accelerometerRate != nil, regular.count > skip {
                provisionalReadings[key] = (b.pointsWritten + b.unwrittenCount, regular.dropFirst(skip).map(\.accelerometer))
            }
        }
        // A failed write is retried with everything unwritten a second later, not per sample.
        if let now { lastSegmentWrite = now }
        do {
            if !segments.isEmpty { try store.append(segments) }
            for (key, through) in writtenThrough {
                boards[key]?.pointsWritten = through
                boards[key]?.unwritten.removeAll(keepingCapacity: true)
                boards[key]?.unwrittenCount = 0
            }
            for (key, count) in heldThrough { heldSegmentWritten(board: key, journaled: count) }
            for key in boards.keys { boards[key]?.journaledReadings.runsStored() }
            for (key, journaled) in provisionalReadings {
                guard let committed = boards[key]?.pointsCommitted else { continue }
                boards[key]?.journaledReadings.journaled(journaled.readings, from: journaled.first, committed: committed)
            }
            return true
        } catch {
            lastStoreError = "segment write failed: \(error)"
            return false
        }
    }

    /// Samples accepted but still held for the time fit or a fix, with their best times and
    /// locations now.
    /// The accelerometer reading each carries is the nearest one known now, stamped or still
    /// held for the accelerometer's own time fit (``JournaledReadings`` journals the point again
    /// when its committed reading differs).
    private func provisionalPoints(board: String) -> [RecordedPoint] {
        guard let b = boards[board] else { return [] }
        var out = (b.waitingForAccelerometer + b.merger.peek()).map { b.point($0) }
        for s in b.gyro.peekHeld() {
            for (k, t) in s.times.enumerated() {
                let v = s.payload[k]
                let time = timeBase.epochMilliseconds(monotonic: t)
                let l = b.merger.locate(GyroItem(sample: v, missedBefore: 0, source: timeBase.source), time)
                out.append(RecordedPoint(gyroscope: GyroReading(v, timestamp: time),
                                         location: l.location, missingLocation: l.missing))
            }
        }
        guard let rate = b.accelerometerRate else { return out }
        var held: [AccelerometerReading] = []
        for s in b.accelerometer?.peekHeld() ?? [] {
            for (k, t) in s.times.enumerated() {
                held.append(AccelerometerReading(s.payload[k], timestamp: timeBase.epochMilliseconds(monotonic: t)))
            }
        }
        for k in out.indices {
            let time = out[k].gyroscope.timestamp
            let candidates = [b.recentAccelerometer.nearest(to: time), held.nearest(to: time)].compactMap { $0 }
            out[k].accelerometer = candidates.nearest(to: time).flatMap { abs($0.timestamp - time) <= 500 / rate + 1 ? $0 : nil }
        }
        return out
    }
}
