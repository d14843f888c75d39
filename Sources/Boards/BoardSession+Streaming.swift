import BlueZ
import MetaWear

extension BoardSession {
    /// A batch from the current link: published while streaming; during the handshake,
    /// replies go to the sequencer and motion samples of a board still streaming from
    /// before a reconnect are kept when its configuration is known.
    func receive(_ batch: [GattNotification]) {
        checkLinkDrops()
        if let plan {
            // The watchdog's probe replies are not samples; they settle its probe.
            let batch = current?.probe.takeReplies(from: batch) ?? batch
            // The flash log's replies are its own, not samples.
            guard current?.flashStart != nil || current?.download != nil || current?.awaitingTrimLength == true,
                  batch.contains(where: Self.isLogging) else {
                publish(tap.events(from: batch, decoder: plan.decoder))
                return
            }
            if current?.download != nil { current?.downloadActivityAt = .now }
            var others: [GattNotification] = []
            for notification in batch {
                if Self.isLogging(notification) { flashLogReceived(notification) } else { others.append(notification) }
            }
            publish(tap.events(from: others, decoder: plan.decoder))
            return
        }
        var samples: [GattNotification] = []
        for notification in batch where !handshakeReceived(notification) { samples.append(notification) }
        // Until this link has its own plan: while its handshake runs and while it ends (it asks
        // what bluetoothd knows of the board then, and the board streams on meanwhile: 2-3
        // samples lost after some reconnects in the real-BlueZ VM). After a failed handshake
        // nothing is for anyone.
        guard sensorsOn, let knownPlan, current?.failed == false, !samples.isEmpty else { return }
        publish(tap.events(from: samples, decoder: knownPlan.decoder, onlyMotion: true))
    }

    private func publish(_ published: [BoardEvent]) {
        // One stream element per batch: the consumer wakes once for all of it.
        guard !published.isEmpty else { return }
        BoardEventStream.sessionGauge.record(eventContinuation.yield(published))
        if current?.streamLive == false, published.contains(where: \.isMotionSample) {
            current?.streamLive = true
            startWantedReadout()
        }
        if current?.probe.sentAt != nil, published.contains(where: \.isMotionSample) {
            current?.probe.samplesArrived()
        }
    }

    /// Sensors stopped (a board may still stream from before a gateway restart), then the
    /// relaxed connection parameters.
    func sensorsOffCommands(_ plan: StreamingPlan, _ description: BoardDescription) -> [Packet] {
        var commands = plan.stopCommands
        if (description.settingsRevision ?? 0) >= 1 { commands.append(Commands.connectionParameters(.idle)) }
        return commands
    }

    // MARK: Watchdog

    /// Sleeps until the stream would be overdue and checks only then, so a healthy stream
    /// costs one timer wake-up per timeout; while the sensors are off it waits to be woken.
    func watchStream(_ wakes: AsyncStream<Void>) async {
        await watch(wakes, due: { self.watchdogWakeTime() }, check: { await self.checkWatchdog() })
    }

    /// A watchdog's loop: sleeps until `due()` and runs `check` then; while `due()` is nil it
    /// waits for a wake. Ends with cancellation or the end of `wakes`.
    func watch(_ wakes: AsyncStream<Void>, due: () -> ContinuousClock.Instant?, check: () async -> Void) async {
        var woken = wakes.makeAsyncIterator()
        while !Task.isCancelled {
            guard let wake = due() else {
                if await woken.next() == nil { return }
                continue
            }
            try? await Task.sleep(until: wake, clock: .continuous)
            if Task.isCancelled { return }
            await check()
        }
    }

    private func watchdogWakeTime() -> ContinuousClock.Instant? {
        // A board that logs every sensor instead of streaming sends nothing to watch.
        guard sensorsOn, plan != nil, current?.failed == false, options.configuration.notificationsPerSecond > 0 else { return nil }
        let timeout = options.watchdogTimeout
        // While a probe is out its reply (or the samples ahead of it) is looked for often.
        if let probeSent = current?.probe.sentAt {
            let bound = probeSent.advanced(by: options.watchdogProbeTimeout)
            return min(bound, ContinuousClock.now.advanced(by: timeout / 8)).advanced(by: .milliseconds(1))
        }
        let overdue = (tap.lastNotification ?? .now).advanced(by: timeout)
        return max(overdue, ContinuousClock.now.advanced(by: timeout / 8)).advanced(by: .milliseconds(1))
    }

    /// No data for several expected intervals (reference metawear-protocol §9.1): first asks
    /// the board (``StreamProbe``), and acts only on its answer. Samples before or with the
    /// reply: only late, nothing is done. The reply alone: the stream is restarted, and after
    /// ``BoardSessionOptions/streamRestartsBeforeReconnect`` restarts the link given up
    /// (bluez-dbus §2.3 step 11). No reply and no sample within
    /// ``BoardSessionOptions/watchdogProbeTimeout``: the link is dead and given up.
    private func checkWatchdog() async {
        guard sensorsOn, let plan, let probe = current?.probe else { return }
        let reading = tap.watchdogReading()
        if reading.motionSeen { streamRestarts = 0 }
        switch probe.verdict(bound: options.watchdogProbeTimeout) {
        case .waiting?:
            return
        case .answeredWithoutSamples?:
            current?.probe.settle()
            await restartStream(plan)
        case .unanswered?:
            current?.probe.settle()
            await failLink("no data and no reply to a register read for \(options.watchdogTimeout + options.watchdogProbeTimeout)")
        case nil:
            guard let last = reading.last, ContinuousClock.now - last > options.watchdogTimeout else { return }
            current?.probe.sent()
            write([StreamProbe.request])
        }
    }

    /// The board answers but does not stream: the start sequence again (§9.1), on the same
    /// link while restarts are left.
    private func restartStream(_ plan: StreamingPlan) async {
        if streamRestarts < options.streamRestartsBeforeReconnect {
            streamRestarts += 1
            emit(.state(.recoveringStream(restart: streamRestarts)))
            write(plan.stopCommands + plan.startCommands)
            tap.noteRestart()
            if let description { emit(.state(.streaming(description))) }
            return
        }
        await failLink("the board answers but sends no data after \(streamRestarts) stream restart(s)")
    }
}

private extension BoardEvent {
    /// Gyro or accelerometer samples.
    var isMotionSample: Bool {
        switch kind {
        case .sample(.gyro), .sample(.accelerometer): true
        default: false
        }
    }
}
