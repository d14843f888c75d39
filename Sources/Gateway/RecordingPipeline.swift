import Basics
import BlueZ
import Boards
import Buffer
import Foundation
import GNSS
import Logging
import MetaWear
import Recording
import StatusModel
import Synchronization

/// The one place where board events and GNSS fixes meet: owns the ``SessionController``
/// (which is not thread-safe) and serialises everything that touches it: samples, fixes,
/// the tick (every 250 ms while recording, none while idle), board attach/detach, buttons and
/// control-API commands.
///
/// Recording never waits on the network: the pipeline only calls the local buffer
/// (synchronous SQLite, through the ``SessionController``) and never awaits anything upstream.
/// Its other jobs are small values it holds: the status (``StatusBook``, published through
/// a ``Broadcast``), the clock's synchronisation (``ClockWatch``) and the upload backlog
/// (``BacklogWatch``).
public actor RecordingPipeline {
    /// How often ``tick()`` runs in ``runTicks()`` while a session records.
    public static let tickInterval: Duration = .milliseconds(250)
    /// How often it runs while only documents wait for upload (the backlog shown in status).
    public static let backlogTickInterval: Duration = .seconds(2)

    /// Whether the boards' sensors should stream, on every change (newest only): during a
    /// session, always in `always` mode, or with ``GatewaySettings/streamBetweenSessions``.
    public nonisolated let sensorDemand: AsyncStream<Bool>
    private let sensorDemandContinuation: AsyncStream<Bool>.Continuation
    /// What the boards' flash logs should do now: download (a board's points wait for a
    /// backfill), or delete the page just reported (what it holds is stored); none dropped.
    public nonisolated let backfillDemand = BackfillDemands()
    private var sensorsWanted: Bool
    /// Yields whenever the last board streaming into the pipeline stops streaming (stopped,
    /// lost, idle), when the boards' events end (``consume(boardEvents:)`` returned) and at
    /// the seal (``shutdown()``): a shutdown waiting for the seal looks at ``isShutDown`` then.
    /// One reader (``RecordingService``).
    public nonisolated let streamingBoardsChanged: AsyncStream<Void>
    let streamingBoardsChangedContinuation: AsyncStream<Void>.Continuation
    var boardEventsHaveEnded = false
    /// Set by ``sealOnceBoardsStop()``: the step that takes the last recording board's final
    /// event seals too.
    var sealsOnceBoardsStop = false
    /// When ``sealOnceBoardsStop()`` was asked for (the boards' stop began with it).
    var sealAskedAt: ContinuousClock.Instant?
    /// Set, from any thread, as soon as the shutdown's seal is asked for (``shutdownBegins()``):
    /// a board's stop taken before the pipeline's ``sealOnceBoardsStop()`` (on a starved
    /// gateway the boards' stop events can come first) already holds its chunk for the end's
    /// one commit.
    private nonisolated let shutdownBegun = Atomic<Bool>(false)
    /// The boards still streaming into the session ``shutdown()`` sealed (the seal gave up
    /// waiting for their last samples): what they deliver later belonged to that session.
    private var boardsStreamingAtTheSeal: Set<String> = []
    /// Gyro samples that arrived after ``shutdown()`` from ``boardsStreamingAtTheSeal``: the
    /// session's, not recorded (a warning when the boards' events end).
    var sessionSamplesAfterShutdown = 0
    /// Gyro samples that arrived after ``shutdown()`` from boards streaming into no session
    /// (between sessions, or stopped before the seal): no session would have held them.
    var otherSamplesAfterShutdown = 0
    /// Set while a shutdown's seal waits for the boards' last samples: each board event wakes
    /// the pipeline instead of waiting for the next tick (see ``sealOnceBoardsStop()``).
    var boardEventsWake = false
    /// Board events not yet taken (see ``HeldBoardEvents``).
    let heldEvents = HeldBoardEvents()
    /// Wakes ``runTicks()`` when periodic work appears (see `tickPeriod`).
    private let work: AsyncStream<Void>
    private let workContinuation: AsyncStream<Void>.Continuation

    var settings: GatewaySettings
    let controller: SessionController
    let timeline: MonotonicTimeline
    let logger: Logger

    var attached: Set<String> = []
    private var lastBoardDetachedAt: Int64?
    var book: StatusBook
    private var clock: ClockWatch
    private let wallClock: any WallClock
    var backlog: BacklogWatch
    private var lastReportedStoreError: String?
    var isShutDown = false
    private let statusReaders = Broadcast<GatewayStatus>()
    private var lastTickAt: ContinuousClock.Instant?
    /// Each connected board's flash (for the session-length check at logged rates).
    var flashCapacities: [String: FlashCapacity] = [:]
    /// The recording session's length, seconds (nil: until stopped), and when it started.
    var sessionLength: Double?
    var sessionStartedAt: Int64?
    /// A stop waiting for the boards' logs (sessions at logged rates).
    var finishing: Finishing?
    var lastLoggedDownloadRequest: Int64?
    /// Per logged board: gyro samples in the pages of its readout so far.
    var loggedReadoutSamples: [String: Int] = [:]
    /// Per board: what the pages of its readout filled so far, for the line at its end.
    var backfillReadouts: [String: BackfillReadoutSummary] = [:]
    /// Per board: pages of its readout that wait, unanswered, for the gap they fill to have an
    /// end in the recorder (``SessionController/pageWaitsForItsGap(board:)``), in order.
    var pagesWaiting: [String: [FlashLogDownload]] = [:]
    /// Set once the shutdown's seal is asked for: backfill pages are left on the boards for the
    /// next run (``leaveReadoutsToTheNextRun()``), and what was left, per board.
    var leavesReadoutsToTheNextRun = false
    var pagesLeftAtShutdown: [String: PagesLeft] = [:]

    /// The pipeline runs on ``RecordingThread``: its synchronous SQLite commits wait there,
    /// not on a thread of the shared cooperative pool.
    public nonisolated var unownedExecutor: UnownedSerialExecutor { RecordingThread.shared.asUnownedSerialExecutor() }

    /// A pipeline writing into `store`. `timeline` maps event instants to the Recording clock.
    /// `restartGaps` are the gaps restarts left in the sessions startup recovery closed (now or before)
    /// (``BufferStore/restartGaps()``, kept until filled): each board's flash log fills its gap when
    /// it streams again. `loggedRests` are what logged sessions still wait for from the boards'
    /// logs (``BufferStore/loggedRests()``): each board's log is read out for them when it is back.
    public init(settings: GatewaySettings, store: BufferStore, logger: Logger,
                clockProbe: any ClockSynchronisationProbe = KernelClockSynchronisation(),
                wallClock: any WallClock = SystemWallClock(),
                timeline: MonotonicTimeline = MonotonicTimeline(), restartGaps: [RestartGap] = [],
                loggedRests: [KeptLoggedRest] = []) {
        self.settings = settings
        self.logger = logger
        self.timeline = timeline
        clock = ClockWatch(probe: clockProbe)
        self.wallClock = wallClock
        let nowNs = timeline.now
        let timeBase = TimeBase(wallNanoseconds: wallClock.nanosecondsSinceEpoch(), monotonicNanoseconds: nowNs,
                                systemClockSynchronised: clock.isSynchronised)
        var configuration = SessionController.Configuration()
        configuration.alwaysMode = settings.sessionMode == .always
        configuration.acceptsDeadReckoning = settings.acceptDeadReckoning
        configuration.recordsLogged = !settings.streaming.logged.isEmpty
        controller = SessionController(store: store, timeBase: timeBase, configuration: configuration)
        book = StatusBook(gnssSource: settings.gnss?.description, gyroRateHz: settings.gyroRateHertz,
                          accelerometerRateHz: settings.accelerometerRateHertz)
        try? controller.adoptAwaitingSurveyFromStore()
        controller.expectRestartBackfill(restartGaps)
        controller.expectLoggedRests(loggedRests)
        backlog = BacklogWatch(read: { try store.backlogStats() })
        (sensorDemand, sensorDemandContinuation) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(1))
        sensorsWanted = Self.sensorsWanted(settings, recording: false)
        (work, workContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        workContinuation.yield()
        (streamingBoardsChanged, streamingBoardsChangedContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Whether boards stream with these settings: while recording, in `always` mode, or when
    /// asked to stream between sessions.
    public static func sensorsWanted(_ settings: GatewaySettings, recording: Bool) -> Bool {
        recording || settings.sessionMode == .always || settings.streamBetweenSessions
    }

    // MARK: Inputs

    /// Whether a session records while a board still streams into it (whose last samples a
    /// shutdown's seal waits for, ``sealOnceBoardsStop()``), as of the board events taken so
    /// far: false once every board stopped streaming or the boards' events ended.
    var boardsStreamIntoTheSession: Bool {
        !boardEventsHaveEnded && !attached.isEmpty && controller.state != .idle
    }

    /// Handles one board event.
    public func handle(_ event: BoardEvent) {
        guard !isShutDown else {
            if case .sample(.gyro(let samples)) = event.kind {
                if boardsStreamingAtTheSeal.contains(event.board.rawValue) {
                    sessionSamplesAfterShutdown += samples.count
                } else {
                    otherSamplesAfterShutdown += samples.count
                }
            }
            return
        }
        let key = event.board.rawValue
        switch event.kind {
        case .sample(let sample):
            let wasIdle = controller.state == .idle
            controller.ingest(board: key, event: sample, receivedAt: timeline.nanoseconds(event.receivedAt))
            if wasIdle, case .recording(let id) = controller.state { sessionDidStart(id, trigger: .always) }
            var gyroSamples: Int?
            if case .gyro(let samples) = sample { gyroSamples = samples.count }
            if book.samplesArrived(board: key, at: event.wallClock, gyroSamples: gyroSamples, attached: attached.contains(key),
                                   recording: controller.state != .idle) {
                publish()
            }
        case .state(let state):
            boardStateChanged(key, state, at: event.receivedAt)
        case .battery(let battery):
            book.batteryRead(key, battery)
            publish()
        case .flashLog(let status):
            book.flashLogChanged(key, status)
            switch status {
            // A logged board's log is its recording, not a gap filler: no hold, no trim.
            case .logging, .downloading: controller.expectBackfill(board: key, !recordsLogged)
            case .off, .failed: controller.expectBackfill(board: key, false)
            case .starting: break
            }
            if case .failed(let reason) = status { report(area: "board", "\(key) flash log: \(reason)") }
            publish()
        case .flashLogDownloaded(let download):
            if recordsLogged || controller.hasLoggedRest(board: key) {
                loggedDownloaded(key, download)
            } else if !leavesPageToTheNextRun(key, download), !keepPageWaiting(key, download) {
                backfill(key, download)
            }
        case .button(_, let togglesSession):
            guard togglesSession, settings.buttonTogglesSession else { return }
            buttonPressed(board: key, at: timeline.nanoseconds(event.receivedAt))
        }
        reportStoreErrorIfNew()
    }

    /// Feeds every fix of `fixes` until the stream ends; returns the error that ended it, if any.
    public func consume(fixes: AsyncThrowingStream<GNSSFix, any Error>) async -> (any Error)? {
        setGNSSRunning(true)
        defer { setGNSSRunning(false) }
        do {
            for try await fix in fixes { ingest(fix) }
            return nil
        } catch {
            return error
        }
    }

    /// Feeds one fix received now.
    public func ingest(_ fix: GNSSFix) {
        guard !isShutDown else { return }
        takeHeldEvents()
        // The fix's offset is against the system clock as it is now: a step since is noticed first.
        readWallClock()
        controller.ingest(fix: fix, now: timeline.now)
        book.fixArrived(fix)
        publish()
    }

    /// Marks the GNSS source as running or not (the GNSS service reports its lifetime).
    public func setGNSSRunning(_ running: Bool) {
        if book.setGNSSRunning(running) { publish() }
    }

    /// Records a problem for the status (and logs it).
    public func report(area: String, _ message: String) {
        logger.warning("\(area): \(message)")
        book.problem(area: area, message)
        publish()
    }

    /// A board's flash log arrived: the samples the stream missed fill the gap its points
    /// wait on.
    func backfill(_ key: String, _ download: FlashLogDownload) {
        var origins: [UInt8: Int64] = [:]
        if let clock = download.clock, let readAt = download.clockReadAt {
            origins[clock.resetUID & 0x07] = timeline.nanoseconds(readAt) - Int64(BoardTicks.milliseconds(UInt64(clock.tick)) * 1e6)
        }
        let outcome = controller.backfill(board: key, logged: download.gyro, accelerometer: download.accelerometer,
                                          bootOrigins: origins, complete: download.complete,
                                          now: timeline.now)
        backfillDemand.send(outcome.durable ? .confirmPage(key) : .declinePage(key))
        // Each page's fills count: a restart's or stop's gap is sealed page by page.
        book.backfilled(key, samples: outcome.filled, intoEarlierSessions: outcome.filledIntoEarlierSessions,
                        attached: attached.contains(key), recording: controller.state != .idle)
        backfillReadouts[key, default: BackfillReadoutSummary()].add(download, outcome)
        guard download.complete, let summary = backfillReadouts.removeValue(forKey: key) else {
            if outcome.filled > 0 { publish() }
            return
        }
        // A read of the streamed part every few seconds that filled nothing is routine.
        if download.loggedBefore != nil, summary.filled == 0 {
            logger.debug("board \(key) flash log, streamed part: \(summary.text)")
        } else {
            logger.info("board \(key) flash log: \(summary.text)")
        }
        publish()
    }

    /// How often the download's readout stopped delivering and was asked for again, for the
    /// summary (empty when it never did).
    static func readoutRecovery(_ download: FlashLogDownload) -> String {
        guard download.readoutsResumed > 0 else { return "" }
        return ", readout asked for again \(download.readoutsResumed) time(s) after it stopped delivering"
            + " (\(download.entriesMissed) entries seen lost on the way)"
    }

    // MARK: Tick

    /// Periodic work: releases samples whose fix wait is over, appends the second's points
    /// (≤ 1 s), re-reads the clock's synchronisation and the backlog, ends an idle
    /// `always` session.
    public func tick() {
        guard !isShutDown else { return }
        takeHeldEvents()
        lastTickAt = ContinuousClock.now
        let now = timeline.now
        checkClock(now: now)
        controller.tick(now: now)
        for trim in controller.flashLogTrims(now: now) {
            switch trim {
            case .mark(let board): backfillDemand.send(.markFlashLog(board, askedAt: .now))
            case .trim(let board): backfillDemand.send(.trimFlashLog(board))
            }
        }
        for board in controller.streamedLogReads(now: now) { backfillDemand.send(.readStreamedLog(board)) }
        if settings.sessionMode == .always, attached.isEmpty, case .recording = controller.state,
           let detachedAt = lastBoardDetachedAt, now - detachedAt >= nanoseconds(settings.alwaysModeIdleStop) {
            logger.info("no board streamed for \(settings.alwaysModeIdleStop): ending the always-mode session")
            _ = try? stop(trigger: .always, now: now)
        }
        endSessionAtItsLength(now: now)
        requestLoggedDownloads(now: now)
        checkFinishing(now: now)
        readBacklog(now: now)
        reportStoreErrorIfNew()
    }

    /// Ticks while there is periodic work (`tickPeriod`) and otherwise waits, with no timer,
    /// until work appears; returns when the calling task is cancelled. While it ticks every
    /// ``tickInterval``, the ticks take the held board events.
    public func runTicks() async {
        await withTaskExecutorPreference(RecordingThread.shared) { await tickWhileWorkWaits() }
    }

    private func tickWhileWorkWaits() async {
        defer { letTicksTakeHeldEvents(false) }
        let clock = ContinuousClock()
        for await _ in work {
            var next = clock.now
            while !Task.isCancelled {
                tick()
                letTicksTakeHeldEvents(tickPeriod == Self.tickInterval && !boardEventsWake)
                guard let period = tickPeriod else { break }
                next += period
                if next < clock.now { next = clock.now }
                do { try await RecordingThread.shared.sleep(until: next) } catch { return }
            }
        }
    }

    /// How often ticks are needed now: every ``tickInterval`` while a session records (fix
    /// waits, the second's segments, an idle `always` session to end) or a sealed chunk waits
    /// for the buffer; every ``backlogTickInterval`` while documents wait for upload; nil when
    /// there is nothing periodic to do.
    private var tickPeriod: Duration? {
        if isShutDown { return nil }
        if controller.state != .idle || controller.hasFailedSeals { return Self.tickInterval }
        if backlog.hasDocuments { return Self.backlogTickInterval }
        return nil
    }

    func wakeTicks() {
        workContinuation.yield()
    }

    private func updateSensorDemand() {
        let wanted = Self.sensorsWanted(settings, recording: controller.state != .idle)
        guard wanted != sensorsWanted else { return }
        sensorsWanted = wanted
        sensorDemandContinuation.yield(wanted)
    }

    func checkClock(now: Int64) {
        guard let reading = clock.reading(now: now, interval: nanoseconds(settings.clockCheckInterval)) else { return }
        // Synchronised by a step (timesyncd's first NTP step): the step is known before the new source.
        readWallClock()
        if reading.changed {
            logger.info("system clock is \(reading.synchronised ? "now" : "no longer") synchronised")
            publish()
        }
        controller.setSystemClockSynchronised(reading.synchronised)
    }

    /// Reads the system clock beside the monotonic one: a step of it is logged and taken by the time base.
    func readWallClock() {
        if controller.readWallClock(wallNanoseconds: wallClock.nanosecondsSinceEpoch(), monotonicNanoseconds: timeline.now) {
            logger.info("system clock stepped by \(Double(controller.timeBase.wallStep) / 1e9) s since the start; times stay on the clock read then")
        }
    }

    func readBacklog(now: Int64) {
        do {
            if try backlog.refresh(now: now) { publish() }
        } catch {
            report(area: "buffer", "cannot read the upload backlog: \(error)")
        }
    }

    /// Sessions waiting for their survey, oldest first.
    public var awaitingSurvey: [String] { controller.awaitingSurvey }

    /// The current snapshot. While idle nothing ticks, so the backlog (the sync service may
    /// have sent documents) and the clock are re-read here when stale.
    public var status: GatewayStatus {
        takeHeldEvents()
        let now = timeline.now
        checkClock(now: now)
        readBacklog(now: now)
        if tickPeriod != nil { wakeTicks() }
        return snapshot()
    }

    /// Snapshots on every change, starting with the current one. Only the newest undelivered
    /// snapshot is kept for a slow reader.
    public func statusUpdates() -> AsyncStream<GatewayStatus> {
        takeHeldEvents()
        return statusReaders.subscribe(current: snapshot())
    }

    // MARK: Health and live settings

    /// The pipeline's health now.
    public var health: Health {
        Health(lastTickAt: lastTickAt, bufferError: controller.hasFailedSeals ? (controller.lastStoreError ?? "seals pending") : nil,
               isShutDown: isShutDown, isIdle: tickPeriod == nil)
    }

    /// Applies settings changed while running (``LiveSettings``, a reload): the session mode
    /// and the boards' streaming between sessions take effect at once.
    public func apply(_ live: LiveSettings) {
        takeHeldEvents()
        settings.live = live
        controller.setAlwaysMode(live.sessionMode == .always)
        updateSensorDemand()
        publish()
    }

    // MARK: Shutdown

    /// Graceful shutdown: a recording session is stopped with trigger `shutdown`, so every
    /// accepted sample is sealed and the session waits for its survey (the walk is over
    /// when the gateway goes down; the survey is asked for at the next start). Later
    /// events are ignored. Idempotent.
    /// The shutdown's seal is asked for (callable from anywhere, before the boards' stop
    /// begins): the boards' last chunks wait for the session end's commit from now on.
    public nonisolated func shutdownBegins() {
        shutdownBegun.store(true, ordering: .releasing)
    }

    public func shutdown() {
        guard !isShutDown else { return }
        // Sealing now: the events taken below must not start a second seal.
        sealsOnceBoardsStop = false
        // Nor place a flash-log page: the seal does not wait on the readouts.
        leaveReadoutsToTheNextRun()
        takeHeldEvents()
        let now = timeline.now
        // Recording, the stop below writes everything in one transaction.
        controller.holdSealsForTheStop()
        controller.tick(now: now, beforeTheStop: controller.state != .idle)
        let waiters = finishing?.waiters ?? []
        // At a logged rate the boards' logs are not read to the end: the next start reads the
        // rest when each board is back (those a finishing stop read to the end wait for nothing).
        let unread = finishing.map { $0.boards.union($0.away) } ?? attached.union(controller.detachedBoards)
        finishing = nil
        if case .recording(let id) = controller.state {
            boardsStreamingAtTheSeal = attached
            keepLoggedRests(unread, now: now)
            do {
                // A board is stalled if it was silent when its stop began, not at the seal.
                let end = try stop(trigger: .shutdown, now: now, boardsStoppedAt: sealAskedAt.map(timeline.nanoseconds))
                for waiter in waiters { waiter.resume(returning: .success(end)) }
                logger.notice("shutdown: session \(id) stopped with \(end.pointCount) points sealed; it awaits its survey")
            } catch {
                logger.error("shutdown: session \(id) could not be stopped: \(error); startup recovery will seal its checkpoints")
                for waiter in waiters { waiter.resume(returning: .failure(error)) }
            }
        }
        reportPagesLeftAtShutdown()
        controller.sealWhatTheGapsReadoutsBrought()
        for key in attached.sorted() { controller.detach(board: key, now: now) }
        attached.removeAll()
        isShutDown = true
        reportStoreErrorIfNew()
        publish()
        statusReaders.finishAll()
        sensorDemandContinuation.finish()
        backfillDemand.finish()
        workContinuation.finish()
        streamingBoardsChangedContinuation.yield()
    }

    // MARK: Internals

    func sessionDidStart(_ id: String, trigger: SessionTrigger, length: Double?? = nil) {
        book.sessionStarted(trigger: trigger.description)
        sessionStartedAt = timeline.now
        sessionLength = length ?? settings.maxSessionDuration
        if length == nil, let seconds = sessionLength, let refusal = sessionLengthRefusal(seconds: seconds) {
            report(area: "session", "session \(id) (\(trigger)) may outlast a board's flash: \(refusal)")
        }
        let ends = sessionLength.map { ", ends after \(DurationText.string($0))" } ?? ""
        logger.info("session \(id) started (\(trigger))\(ends)")
        updateSensorDemand()
        wakeTicks()
        publish()
    }

    /// After a stop: sensors off unless configured otherwise; ticks while the new documents
    /// wait for upload.
    func sessionDidStop() {
        book.sessionStopped()
        sessionStartedAt = nil
        sessionLength = nil
        updateSensorDemand()
        backlog.expire()
        readBacklog(now: timeline.now)
        wakeTicks()
        publish()
    }

    private func buttonPressed(board key: String, at now: Int64) {
        let wasRecording = controller.state != .idle
        if wasRecording, beginFinishing(trigger: .button(board: key), now: now) { return }
        do {
            try controller.buttonPressed(board: key, now: now)
        } catch {
            report(area: "recording", "button of \(key): \(error)")
            return
        }
        switch controller.state {
        case .recording(let id): sessionDidStart(id, trigger: .button(board: key))
        case .idle:
            if wasRecording {
                logger.info("session stopped by the button of \(key)")
                sessionDidStop()
            }
        }
    }

    private func boardStateChanged(_ key: String, _ state: BoardState, at instant: ContinuousClock.Instant) {
        book.boardStateChanged(key, state)
        let now = timeline.nanoseconds(instant)
        switch state {
        case .streaming(let description):
            noteFlashCapacity(key, description)
            // A restarted stream starts a new sample sequence: seal what the old one gave.
            if attached.contains(key) { controller.detach(board: key, now: now) }
            controller.attach(board: key, gyroRateHertz: settings.gyroRateHertz,
                              accelerometerRateHertz: settings.accelerometerRateHertz, now: now)
            attached.insert(key)
            logger.info("board \(key) streaming: \(description)")
            drainLoggedRest(key)
        case .idle(let description):
            noteFlashCapacity(key, description)
            detach(key, now: now)
            logger.info("board \(key) connected, sensors off until a session starts: \(description)")
            drainLoggedRest(key)
        case .lost(let reason):
            // Unanswered, those pages stay on the board: the next link's readout sends them again.
            pagesWaiting[key] = nil
            detach(key, now: now)
            // Its readout ended with the link: the next one is summed up on its own.
            backfillReadouts[key] = nil
            report(area: "board", "\(key) lost: \(reason)")
            return
        default:
            // Said before the detach, which seals the board's chunk and, at a shutdown, the
            // session: the line dates the pipeline's taking the board's stop.
            logger.info("board \(key): \(state)")
            detach(key, now: now)
        }
        publish()
    }

    private func detach(_ key: String, now: Int64) {
        guard attached.remove(key) != nil else { return }
        if shutdownBegun.load(ordering: .acquiring) { controller.holdSealsForTheStop() }
        controller.detach(board: key, now: now)
        if attached.isEmpty {
            lastBoardDetachedAt = now
            streamingBoardsChangedContinuation.yield()
            sealIfTheBoardsStopped()
        }
    }

    func reportStoreErrorIfNew() {
        backfillPagesNoLongerWaiting()
        for board in controller.takeBackfillRequests() { backfillDemand.send(.download(board)) }
        for revision in controller.takeRevisions() {
            logger.notice("""
                session \(revision.sessionID) revised with \(revision.samples) samples from board \(revision.board): \
                its records document names the correction chunks and is uploaded again
                """)
        }
        guard let error = controller.lastStoreError, error != lastReportedStoreError else { return }
        lastReportedStoreError = error
        report(area: "buffer", error)
    }

    func publish() {
        guard !statusReaders.isEmpty else { return }
        statusReaders.publish(snapshot())
    }

    private func snapshot() -> GatewayStatus {
        var sessionID: String?
        if case .recording(let id) = controller.state { sessionID = id }
        return book.snapshot(
            sessionID: sessionID, awaitingSurvey: awaitingSurvey, chunksSealed: controller.sealedCount, mode: settings.sessionMode,
            clock: ClockStatus(systemClockSynchronised: clock.isSynchronised, timeSource: controller.timeBase.source.rawValue),
            backlog: backlog.current.map(BacklogStatus.init))
    }

    private func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}
