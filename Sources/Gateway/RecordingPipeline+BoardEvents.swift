import Basics
import Boards

/// The boards' events into the pipeline: held on the feeder's side and taken on the
/// pipeline's thread at its ticks or on a wake (``HeldBoardEvents``).
extension RecordingPipeline {
    /// Feeds every event of `events` until the stream finishes (the board manager shut down).
    ///
    /// The events are held (``HeldBoardEvents``) on the caller's thread, not handed to the
    /// pipeline's thread one batch at a time: while a session records, each tick takes them;
    /// otherwise the first one held wakes the pipeline.
    public nonisolated func consume(boardEvents events: BoardEventStream) async {
        let held = heldEvents
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await withTaskGroup(of: Void.self) { group in
            group.addTask(executorPreference: RecordingThread.shared) { await self.takeHeldEvents(whenWoken: wakes) }
            for await batch in events.batches {
                switch held.hold(batch) {
                case .held: break
                case .wake: wake.yield()
                case .full: await takeHeldEvents()
                }
            }
            wake.finish()
        }
        await boardEventsEnded()
    }

    private func takeHeldEvents(whenWoken wakes: AsyncStream<Void>) async {
        for await _ in wakes { takeHeldEvents() }
    }

    /// Handles the board events held so far, oldest first. Every input and command calls it
    /// first, so the events that arrived before it are handled before it.
    func takeHeldEvents() {
        handle(batches: heldEvents.takeAll())
    }

    private func handle(batches: [[BoardEvent]]) {
        for batch in batches {
            for event in batch { handle(event) }
        }
    }

    /// The shutdown's seal (``shutdown()``), as soon as the boards streaming into the session
    /// have delivered their last samples: in the step that takes the last such board's final
    /// state change (its events reach the pipeline only after every sample it delivered before
    /// it), on the pipeline's own thread, or at once when none streams into a session. Until
    /// then each board event is handled as it arrives instead of at the next tick (up to
    /// ``tickInterval`` later). Each hop between the boards' stop and the seal (the ticks, the
    /// caller's wake-up, its call back into the pipeline) counted in a SIGTERM's 2 s, and a
    /// loaded real-BlueZ VM spent 0.4-0.45 s between the boards' stop and the pipeline's seeing
    /// it (issue 18 §2.7). ``RecordingService`` waits for ``isShutDown`` at most its safety limit.
    public func sealOnceBoardsStop() {
        sealAskedAt = sealAskedAt ?? .now
        sealsOnceBoardsStop = true
        // Each board's last chunk, sealed as its stop detaches it, goes into the session end's
        // one commit.
        controller.holdSealsForTheStop()
        // The seal waits for the boards' last samples, not for their readouts' pages.
        leaveReadoutsToTheNextRun()
        boardEventsWake = true
        letTicksTakeHeldEvents(false)
        sealIfTheBoardsStopped()
    }

    /// Seals if ``sealOnceBoardsStop()`` asked for it and no board streams into the session any more.
    func sealIfTheBoardsStopped() {
        guard sealsOnceBoardsStop, !isShutDown, !boardsStreamIntoTheSession else { return }
        if let asked = sealAskedAt {
            // Where a stop's time goes (issue 18: within 2 s): the boards' stop plus the
            // pipeline's work on what they delivered before it.
            logger.debug("recording: the boards' last samples were in \((ContinuousClock.now - asked).roundedMilliseconds) ms after the seal began")
        }
        shutdown()
    }

    /// Whether the ticks take the held board events (while they come every ``tickInterval``)
    /// or each event wakes the pipeline; taking them away from the ticks takes what is held.
    func letTicksTakeHeldEvents(_ taken: Bool) {
        handle(batches: heldEvents.setTakenByTicks(taken))
    }

    private func boardEventsEnded() {
        takeHeldEvents()
        // Only a session's own samples are a loss: a seal that waited for the boards' stop
        // leaves none, and a board streaming between sessions goes on until its stop.
        if sessionSamplesAfterShutdown > 0 {
            logger.warning("\(sessionSamplesAfterShutdown) gyro samples of the sealed session arrived after the shutdown's seal and were not recorded")
        }
        if otherSamplesAfterShutdown > 0 {
            logger.debug("\(otherSamplesAfterShutdown) gyro samples streamed outside a session arrived after the shutdown")
        }
        boardEventsHaveEnded = true
        streamingBoardsChangedContinuation.yield()
        sealIfTheBoardsStopped()
    }
}
