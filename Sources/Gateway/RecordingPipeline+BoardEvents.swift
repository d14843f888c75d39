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

    /// From now on each board event is handled as it arrives instead of at the next tick (up
    /// to ``tickInterval`` later): a shutdown's seal waits for the boards' final state changes,
    /// and every tick it waited for one counted in a SIGTERM's 2 s (issue 18).
    public func handleBoardEventsAsTheyArrive() {
        boardEventsWake = true
        letTicksTakeHeldEvents(false)
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
    }
}
