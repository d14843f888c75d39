import Foundation
import Recording

/// The control API's commands: each is serialised with the board events and fixes on the
/// pipeline, goes to the ``SessionController`` and answers with what it did or why not.
extension RecordingPipeline {
    /// Why a control-API command was refused; the message is meant for the user.
    public struct CommandError: Error, Equatable, CustomStringConvertible {
        public let message: String
        public init(_ message: String) { self.message = message }
        public var description: String { message }
    }

    /// Starts a session now; returns its ID. `duration` (seconds) ends it by itself after
    /// that long (nil: `[session] max_duration`, else until stopped); at a logged rate a
    /// length a connected board's flash cannot hold is refused, naming the board, its
    /// model's capacity, how long that lasts and what to change.
    @discardableResult
    public func startSession(duration: Double? = nil) throws(CommandError) -> String {
        try beginCommand()
        checkClock(now: timeline.now)
        if let duration, !(duration > 0 && duration.isFinite) {
            throw CommandError("a session length must be a positive number of seconds, got \(duration)")
        }
        let length = try checkSessionLength(requested: duration)
        do {
            let id = try controller.start(trigger: .controlAPI, now: timeline.now)
            sessionDidStart(id, trigger: .controlAPI, length: .some(length))
            return id
        } catch let error as SessionController.CommandError {
            throw CommandError(error.description)
        } catch {
            report(area: "buffer", "cannot start a session: \(error)")
            throw CommandError("cannot start a session: \(error)")
        }
    }

    /// Stops the recording session: everything accepted is sealed and the session awaits its
    /// survey. At a logged rate it answers once the boards' logs are read to the end (see
    /// ``beginFinishing(trigger:now:)``).
    @discardableResult
    public func stopSession() async throws(CommandError) -> SessionEnd {
        try beginCommand()
        if beginFinishing(trigger: .controlAPI, now: timeline.now) { return try await waitForFinish().get() }
        return try stop(trigger: .controlAPI, now: timeline.now)
    }

    /// Submits the hazard survey of a stopped session (the oldest awaiting one when
    /// `sessionID` is nil). Hazards must come from the configured catalogue.
    @discardableResult
    public func submitSurvey(_ survey: HazardSurvey, sessionID: String? = nil) throws(CommandError) -> RecordsDocument {
        try beginCommand()
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
            backlog.expire()
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

    /// ``submitSurvey(_:sessionID:)`` once the session's boards have filled the gaps its stop
    /// came too early for (their flash-log downloads still running), waiting at most `wait`:
    /// the correction chunks are then in the session before its records document names its
    /// chunks. After `wait` the survey goes in and what was not filled stays missing.
    @discardableResult
    public func submitSurvey(_ survey: HazardSurvey, sessionID: String? = nil,
                             waitingForBackfillAtMost wait: Duration) async throws(CommandError) -> RecordsDocument {
        let deadline = ContinuousClock.now + wait
        // Polled: the downloads' pages arrive as board events, handled while this waits.
        while !isShutDown, ContinuousClock.now < deadline {
            takeHeldEvents()
            guard let target = sessionID ?? awaitingSurvey.first, controller.hasPendingCorrections(sessionID: target) else { break }
            try? await Task.sleep(for: .milliseconds(100))
        }
        return try submitSurvey(survey, sessionID: sessionID)
    }

    /// Refuses a command after the shutdown; otherwise first takes the board events held
    /// before it, so it acts on everything that arrived before it.
    func beginCommand() throws(CommandError) {
        if isShutDown { throw CommandError("the gateway is shutting down") }
        takeHeldEvents()
    }

    /// Stops the session; at a logged rate the boards away keep the rest of their logs for
    /// when they are back (unless the caller kept those it knew of). `boardsStoppedAt`: when the
    /// boards were asked to stop, if before `now` (a shutdown's).
    func stop(trigger: SessionTrigger, now: Int64, boardsStoppedAt: Int64? = nil,
              keepingRestsOfDetachedBoards: Bool = true) throws(CommandError) -> SessionEnd {
        if keepingRestsOfDetachedBoards { keepLoggedRests(controller.detachedBoards, now: now) }
        do {
            let end = try controller.stop(trigger: trigger, now: now, boardsStoppedAt: boardsStoppedAt)
            logger.info("session \(end.sessionID) stopped (\(trigger)): \(end.pointCount) points from \(end.boards.count) board(s)")
            sessionDidStop()
            return end
        } catch let error as SessionController.CommandError {
            throw CommandError(error.description)
        } catch {
            report(area: "buffer", "cannot stop the session: \(error)")
            throw CommandError("cannot stop the session: \(error)")
        }
    }
}
