import BlueZ
import Boards
import Buffer
import Foundation
import GNSS
import Logging
import MetaWear
import Recording
import StatusModel

/// The one place where board events and GNSS fixes meet: owns the ``SessionController``
/// (which is not thread-safe) and serialises everything that touches it: samples, fixes,
/// the tick (every 250 ms while recording, none while idle), board attach/detach, buttons and
/// control-API commands.
///
/// Recording never waits on the network: the pipeline only calls the local buffer
/// (synchronous SQLite) and never awaits anything upstream.
public actor RecordingPipeline {
    /// Why a control-API command was refused; the message is meant for the user.
    public struct CommandError: Error, Equatable, CustomStringConvertible {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// One session as listed by the control API.
    public struct SessionListing: Sendable, Equatable {
        public var sessionID: String
        /// Epoch milliseconds.
        public var startedAt: Double
        /// `recording`, `awaiting_survey`, `submitted`.
        public var state: String
        public var pointCount: Int
    }

    /// How often ``tick()`` runs in ``runTicks()`` while a session records.
    public static let tickInterval: Duration = .milliseconds(250)
    /// How often it runs while only documents wait for upload (the backlog shown in status).
    public static let backlogTickInterval: Duration = .seconds(2)

    /// Whether the boards' sensors should stream, on every change (newest only): during a
    /// session, always in `always` mode, or with ``GatewaySettings/streamBetweenSessions``.
    public nonisolated let sensorDemand: AsyncStream<Bool>
    private let sensorDemandContinuation: AsyncStream<Bool>.Continuation
    private var sensorsWanted: Bool
    /// Wakes ``runTicks()`` when periodic work appears (see `tickPeriod`).
    private let work: AsyncStream<Void>
    private let workContinuation: AsyncStream<Void>.Continuation

    private var settings: GatewaySettings
    private let store: BufferStore
    private let controller: SessionController
    private let timeline: MonotonicTimeline
    private let clockProbe: any ClockSynchronisationProbe
    private let logger: Logger

    private var boards: [String: BoardStatus] = [:]
    private var attached: Set<String> = []
    private var lastBoardDetachedAt: Int64?
    private var gnss: GNSSStatus
    private var sessionStartedAt: Date?
    private var sessionTrigger: String?
    private var problems: [GatewayProblem] = []
    private var backlog: BacklogStats?
    private var systemClockSynchronised: Bool
    private var clockCheck = ThrottledCheck()
    private var backlogRead = ThrottledCheck()
    private var lastReportedStoreError: String?
    private var isShutDown = false
    private let statusReaders = StatusBroadcast()
    private var lastTickAt: ContinuousClock.Instant?

    /// A pipeline writing into `store`. `timeline` maps event instants to the Recording clock.
    public init(settings: GatewaySettings, store: BufferStore, logger: Logger,
                clockProbe: any ClockSynchronisationProbe = KernelClockSynchronisation(),
                timeline: MonotonicTimeline = MonotonicTimeline()) {
        self.settings = settings
        self.store = store
        self.logger = logger
        self.clockProbe = clockProbe
        self.timeline = timeline
        let synchronised = clockProbe.isSynchronised()
        systemClockSynchronised = synchronised
        let nowNs = timeline.now
        let wall = Date().timeIntervalSince1970
        let timeBase = TimeBase(wallNanoseconds: Int64(wall * 1e9), monotonicNanoseconds: nowNs,
                                systemClockSynchronised: synchronised)
        var configuration = SessionController.Configuration()
        configuration.alwaysMode = settings.sessionMode == .always
        configuration.acceptsDeadReckoning = settings.acceptDeadReckoning
        controller = SessionController(store: store, timeBase: timeBase, configuration: configuration)
        gnss = GNSSStatus(source: settings.gnss?.description)
        controller.adoptAwaitingSurvey((try? store.sessionsAwaitingSurvey()) ?? [])
        backlog = try? store.backlogStats()
        (sensorDemand, sensorDemandContinuation) = AsyncStream.makeStream(of: Bool.self, bufferingPolicy: .bufferingNewest(1))
        sensorsWanted = Self.sensorsWanted(settings, recording: false)
        (work, workContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        workContinuation.yield()
    }

    /// Whether boards stream with these settings: while recording, in `always` mode, or when
    /// asked to stream between sessions.
    public static func sensorsWanted(_ settings: GatewaySettings, recording: Bool) -> Bool {
        recording || settings.sessionMode == .always || settings.streamBetweenSessions
    }

    // MARK: Inputs

    /// Feeds every event of `events` until the stream finishes (the board manager shut down).
    public func consume(boardEvents events: BoardEventStream) async {
        for await batch in events.batches {
            for event in batch { handle(event) }
        }
    }

    /// Handles one board event.
    public func handle(_ event: BoardEvent) {
        guard !isShutDown else { return }
        let key = event.board.rawValue
        switch event.kind {
        case .sample(let sample):
            let wasIdle = controller.state == .idle
            controller.ingest(board: key, event: sample, receivedAt: timeline.nanoseconds(event.receivedAt))
            if wasIdle, case .recording(let id) = controller.state { sessionDidStart(id, trigger: .always) }
            boards[key]?.lastSampleAt = event.wallClock.timeIntervalSince1970
            if case .gyro(let samples) = sample {
                boards[key]?.gyroSamplesReceived += samples.count
                // Streaming is reported once samples really arrive (a restarted or reconnected
                // stream that stays silent is not streaming).
                if attached.contains(key), boards[key]?.isStreaming == false {
                    boards[key]?.isStreaming = true
                    publish()
                }
                if attached.contains(key), controller.state != .idle { boards[key]?.gyroSamplesInSession += samples.count }
            }
        case .state(let state):
            boardStateChanged(key, state, at: event.receivedAt)
        case .battery(let battery):
            ensureBoard(key)
            boards[key]?.setBattery(battery)
            publish()
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
        controller.ingest(fix: fix, now: timeline.now)
        gnss.mode = fix.mode.statusName
        gnss.hasPosition = fix.hasPosition
        if fix.hasPosition {
            gnss.latitude = fix.latitude
            gnss.longitude = fix.longitude
        }
        gnss.satellitesUsed = fix.satellitesUsed
        gnss.lastFixAt = fix.arrival.timeIntervalSince1970
        gnss.fixesReceived += 1
        publish()
    }

    /// Marks the GNSS source as running or not (the GNSS service reports its lifetime).
    public func setGNSSRunning(_ running: Bool) {
        guard gnss.isRunning != running else { return }
        gnss.isRunning = running
        publish()
    }

    /// Records a problem for the status (and logs it).
    public func report(area: String, _ message: String) {
        logger.warning("\(area): \(message)")
        problems.append(GatewayProblem(at: Date().timeIntervalSince1970, area: area, message: message))
        if problems.count > GatewayStatus.maximumProblems { problems.removeFirst(problems.count - GatewayStatus.maximumProblems) }
        publish()
    }

    // MARK: Tick

    /// Periodic work: releases samples whose fix wait is over, appends the second's points
    /// (≤ 1 s), re-reads the clock's synchronisation and the backlog, ends an idle
    /// `always` session.
    public func tick() {
        guard !isShutDown else { return }
        lastTickAt = ContinuousClock.now
        let now = timeline.now
        checkClock(now: now)
        controller.tick(now: now)
        if settings.sessionMode == .always, attached.isEmpty, case .recording = controller.state,
           let detachedAt = lastBoardDetachedAt, now - detachedAt >= nanoseconds(settings.alwaysModeIdleStop) {
            logger.info("no board streamed for \(settings.alwaysModeIdleStop): ending the always-mode session")
            _ = try? stop(trigger: .always, now: now)
        }
        readBacklog(now: now)
        reportStoreErrorIfNew()
    }

    /// Ticks while there is periodic work (`tickPeriod`) and otherwise waits, with no timer,
    /// until work appears; returns when the calling task is cancelled.
    public func runTicks() async {
        let clock = ContinuousClock()
        for await _ in work {
            var next = clock.now
            while !Task.isCancelled {
                tick()
                guard let period = tickPeriod else { break }
                next += period
                if next < clock.now { next = clock.now }
                do { try await clock.sleep(until: next) } catch { return }
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
        if (backlog?.count ?? 0) > 0 { return Self.backlogTickInterval }
        return nil
    }

    private func wakeTicks() {
        workContinuation.yield()
    }

    private func updateSensorDemand() {
        let wanted = Self.sensorsWanted(settings, recording: controller.state != .idle)
        guard wanted != sensorsWanted else { return }
        sensorsWanted = wanted
        sensorDemandContinuation.yield(wanted)
    }

    private func checkClock(now: Int64) {
        guard clockCheck.isDue(now: now, interval: nanoseconds(settings.clockCheckInterval)) else { return }
        let synchronised = clockProbe.isSynchronised()
        if synchronised != systemClockSynchronised {
            systemClockSynchronised = synchronised
            logger.info("system clock is \(synchronised ? "now" : "no longer") synchronised")
            publish()
        }
        controller.setSystemClockSynchronised(synchronised)
    }

    private func readBacklog(now: Int64) {
        guard backlogRead.isDue(now: now, interval: 2_000_000_000) else { return }
        do {
            let fresh = try store.backlogStats()
            if fresh != backlog {
                backlog = fresh
                publish()
            }
        } catch {
            report(area: "buffer", "cannot read the upload backlog: \(error)")
        }
    }

    // MARK: Commands (control API)

    /// Starts a session now; returns its ID.
    @discardableResult
    public func startSession() throws(CommandError) -> String {
        try refuseIfShutDown()
        checkClock(now: timeline.now)
        do {
            let id = try controller.start(trigger: .controlAPI, now: timeline.now)
            sessionDidStart(id, trigger: .controlAPI)
            return id
        } catch let error as SessionController.CommandError {
            throw CommandError(error.description)
        } catch {
            report(area: "buffer", "cannot start a session: \(error)")
            throw CommandError("cannot start a session: \(error)")
        }
    }

    /// Stops the recording session: everything accepted is sealed and the session awaits its survey.
    @discardableResult
    public func stopSession() throws(CommandError) -> SessionEnd {
        try refuseIfShutDown()
        return try stop(trigger: .controlAPI, now: timeline.now)
    }

    /// Submits the hazard survey of a stopped session (the oldest awaiting one when
    /// `sessionID` is nil). Hazards must come from the configured catalogue.
    @discardableResult
    public func submitSurvey(_ survey: HazardSurvey, sessionID: String? = nil) throws(CommandError) -> RecordsDocument {
        try refuseIfShutDown()
        if case .hazards(let map) = survey, !settings.hazardCatalogue.isEmpty {
            let unknown = map.keys.filter { !settings.hazardCatalogue.contains($0) }.sorted()
            guard unknown.isEmpty else {
                throw CommandError("unknown hazard\(unknown.count > 1 ? "s" : "") \(unknown.joined(separator: ", ")) (known: \(settings.hazardCatalogue.joined(separator: ", ")))")
            }
        }
        let target = sessionID ?? awaitingSurvey.first
        guard let target else { throw CommandError("no session is awaiting a survey") }
        do {
            guard controller.awaitingSurvey.contains(target) else { throw CommandError("session \(target) is not awaiting a survey") }
            let record = try controller.submitSurvey(survey, sessionID: target, submittedAt: Date())
            logger.info("survey submitted for session \(target): \(record.name)")
            backlogRead.expire()
            wakeTicks()
            publish()
            return record
        } catch let error as CommandError {
            throw error
        } catch let error as SessionController.CommandError {
            throw CommandError(error.description)
        } catch {
            report(area: "buffer", "cannot store the survey of \(target): \(error)")
            throw CommandError("cannot store the survey of \(target): \(error)")
        }
    }

    /// Sessions in the buffer, newest first.
    public func sessions(limit: Int = 100) throws(CommandError) -> [SessionListing] {
        do {
            return try store.sessions(limit: limit).map {
                SessionListing(sessionID: $0.id, startedAt: $0.startedAt, state: $0.state, pointCount: $0.points)
            }
        } catch {
            throw CommandError("cannot read the sessions: \(error)")
        }
    }

    /// Sessions waiting for their survey, oldest first.
    public var awaitingSurvey: [String] { controller.awaitingSurvey }

    /// The current snapshot. While idle nothing ticks, so the backlog (the sync service may
    /// have sent documents) and the clock are re-read here when stale.
    public var status: GatewayStatus {
        let now = timeline.now
        checkClock(now: now)
        readBacklog(now: now)
        if tickPeriod != nil { wakeTicks() }
        return snapshot()
    }

    /// Snapshots on every change, starting with the current one. Only the newest undelivered
    /// snapshot is kept for a slow reader.
    public func statusUpdates() -> AsyncStream<GatewayStatus> {
        statusReaders.subscribe(current: snapshot())
    }

    // MARK: Health and reload

    /// What a watchdog needs to know: when the pipeline last ticked and whether the buffer
    /// refused the last write (nil when it took it).
    public struct Health: Sendable, Equatable {
        /// The last ``tick()`` (nil before the first).
        public var lastTickAt: ContinuousClock.Instant?
        /// The buffer's last write error while sealed chunks wait for a retry; nil while writes succeed.
        public var bufferError: String?
        /// True after ``shutdown()``.
        public var isShutDown: Bool
        /// True while nothing periodic is to be done, so the pipeline does not tick (answering
        /// at all is then its sign of life).
        public var isIdle: Bool

        public init(lastTickAt: ContinuousClock.Instant?, bufferError: String?, isShutDown: Bool, isIdle: Bool = false) {
            self.lastTickAt = lastTickAt
            self.bufferError = bufferError
            self.isShutDown = isShutDown
            self.isIdle = isIdle
        }
    }

    /// The pipeline's health now.
    public var health: Health {
        Health(lastTickAt: lastTickAt, bufferError: controller.hasFailedSeals ? (controller.lastStoreError ?? "seals pending") : nil,
               isShutDown: isShutDown, isIdle: tickPeriod == nil)
    }

    /// Applies the settings that can change while running (SIGHUP): the hazard catalogue,
    /// the session mode, the button toggle and streaming between sessions. Boards, streaming,
    /// GNSS and the buffer need a restart. Switching to `manual` does not end a running session.
    public func reload(hazardCatalogue: [String], sessionMode: GatewaySettings.SessionMode, buttonTogglesSession: Bool,
                       streamBetweenSessions: Bool = false) {
        settings.hazardCatalogue = hazardCatalogue
        settings.sessionMode = sessionMode
        settings.buttonTogglesSession = buttonTogglesSession
        settings.streamBetweenSessions = streamBetweenSessions
        controller.setAlwaysMode(sessionMode == .always)
        updateSensorDemand()
        publish()
    }

    // MARK: Shutdown

    /// Graceful shutdown: a recording session is stopped with trigger `shutdown`, so every
    /// accepted sample is sealed and the session waits for its survey (the walk is over
    /// when the gateway goes down; the survey is asked for at the next start). Later
    /// events are ignored. Idempotent.
    public func shutdown() {
        guard !isShutDown else { return }
        let now = timeline.now
        controller.tick(now: now)
        if case .recording(let id) = controller.state {
            do {
                let end = try stop(trigger: .shutdown, now: now)
                logger.notice("shutdown: session \(id) stopped with \(end.pointCount) points sealed; it awaits its survey")
            } catch {
                logger.error("shutdown: session \(id) could not be stopped: \(error); startup recovery will seal its checkpoints")
            }
        }
        for key in attached.sorted() { controller.detach(board: key, now: now) }
        attached.removeAll()
        isShutDown = true
        reportStoreErrorIfNew()
        publish()
        statusReaders.finishAll()
        sensorDemandContinuation.finish()
        workContinuation.finish()
    }

    // MARK: Internals

    private func refuseIfShutDown() throws(CommandError) {
        if isShutDown { throw CommandError("the gateway is shutting down") }
    }

    private func stop(trigger: SessionTrigger, now: Int64) throws(CommandError) -> SessionEnd {
        do {
            let end = try controller.stop(trigger: trigger, now: now)
            logger.info("session \(end.sessionID) stopped (\(trigger)): \(end.pointCount) points from \(end.boards.count) board(s)")
            sessionStartedAt = nil
            sessionTrigger = nil
            sessionDidStop()
            return end
        } catch let error as SessionController.CommandError {
            throw CommandError(error.description)
        } catch {
            report(area: "buffer", "cannot stop the session: \(error)")
            throw CommandError("cannot stop the session: \(error)")
        }
    }

    private func sessionDidStart(_ id: String, trigger: SessionTrigger) {
        sessionStartedAt = Date()
        sessionTrigger = trigger.description
        for key in boards.keys { boards[key]?.gyroSamplesInSession = 0 }
        logger.info("session \(id) started (\(trigger))")
        updateSensorDemand()
        wakeTicks()
        publish()
    }

    /// After a stop: sensors off unless configured otherwise; ticks while the new documents
    /// wait for upload.
    private func sessionDidStop() {
        updateSensorDemand()
        backlogRead.expire()
        readBacklog(now: timeline.now)
        wakeTicks()
        publish()
    }

    private func buttonPressed(board key: String, at now: Int64) {
        let wasRecording = controller.state != .idle
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
                sessionStartedAt = nil
                sessionTrigger = nil
                sessionDidStop()
            }
        }
    }

    private func ensureBoard(_ key: String) {
        guard boards[key] == nil else { return }
        boards[key] = BoardStatus(address: key, state: "connecting", gyroRateHz: settings.gyroRateHertz,
                                  accelerometerRateHz: settings.accelerometerRateHertz)
    }

    private func boardStateChanged(_ key: String, _ state: BoardState, at instant: ContinuousClock.Instant) {
        ensureBoard(key)
        let now = timeline.nanoseconds(instant)
        boards[key]?.state = state.description
        switch state {
        case .streaming(let description):
            // A restarted stream starts a new sample sequence: seal what the old one gave.
            if attached.contains(key) { controller.detach(board: key, now: now) }
            controller.attach(board: key, gyroRateHertz: settings.gyroRateHertz,
                              accelerometerRateHertz: settings.accelerometerRateHertz)
            attached.insert(key)
            boards[key]?.isStreaming = false
            boards[key]?.model = description.description
            boards[key]?.missingIdentity = description.missingIdentity
            if let battery = description.battery { boards[key]?.setBattery(battery) }
            logger.info("board \(key) streaming: \(description)")
        case .idle(let description):
            detach(key, now: now)
            boards[key]?.model = description.description
            if let battery = description.battery { boards[key]?.setBattery(battery) }
            logger.info("board \(key) connected, sensors off until a session starts: \(description)")
        case .lost(let reason):
            detach(key, now: now)
            report(area: "board", "\(key) lost: \(reason)")
            return
        default:
            detach(key, now: now)
            logger.info("board \(key): \(state)")
        }
        publish()
    }

    private func detach(_ key: String, now: Int64) {
        boards[key]?.isStreaming = false
        guard attached.remove(key) != nil else { return }
        controller.detach(board: key, now: now)
        if attached.isEmpty { lastBoardDetachedAt = now }
    }

    private func reportStoreErrorIfNew() {
        guard let error = controller.lastStoreError, error != lastReportedStoreError else { return }
        lastReportedStoreError = error
        report(area: "buffer", error)
    }

    private func publish() {
        guard !statusReaders.isEmpty else { return }
        statusReaders.publish(snapshot())
    }

    private func snapshot() -> GatewayStatus {
        var sessionID: String?
        if case .recording(let id) = controller.state { sessionID = id }
        let now = Date().timeIntervalSince1970
        var gnss = gnss
        gnss.fixAgeSeconds = gnss.age(at: now)
        return GatewayStatus(
            generatedAt: now,
            boards: boards.values.sorted { $0.address < $1.address },
            gnss: gnss,
            session: SessionStatus(state: sessionID != nil ? SessionStatus.recording : SessionStatus.idle, sessionID: sessionID,
                                   trigger: sessionTrigger, startedAt: sessionStartedAt?.timeIntervalSince1970,
                                   awaitingSurvey: awaitingSurvey, chunksSealed: controller.sealedCount,
                                   mode: settings.sessionMode.rawValue),
            clock: ClockStatus(systemClockSynchronised: systemClockSynchronised, timeSource: controller.timeBase.source.rawValue),
            backlog: backlog.map(BacklogStatus.init),
            problems: problems)
    }

    private func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}
