import BlueZ
import MetaWear

/// One link's work queues, fed by the session and drained by the link's child tasks.
struct LinkWork {
    let link: any BoardLink
    /// Writes and handshake actions, performed in order (a pause delays what follows).
    let operations: AsyncStream<LinkOperation>.Continuation
    /// Reply timeouts, armed in time order.
    let replyTimers: AsyncStream<ReplyTimer>.Continuation
    /// Wakes the stream watchdog when the sensors start.
    let watch: AsyncStream<Void>.Continuation
    /// Wakes the readout watchdog when a flash-log readout starts or goes on after a confirm.
    let readoutWatch: AsyncStream<Void>.Continuation
    var sequencer: HandshakeSequencer?
    /// The flash log's start while its replies are awaited.
    var flashStart: FlashLogStart?
    /// Whether this link started the flash log (its stop then ends logging).
    var flashLogging = false
    /// Whether logging was stopped to finish a session's download (``BoardSession/finishFlashLog()``):
    /// downloads then leave it stopped, and the next sensor start starts it again.
    var flashLogStopped = false
    /// The flash log's download in progress on this link, with the gyro samples so far.
    var download: LogDownloader?
    var downloaded: [LoggedSample] = []
    var downloadedAccelerometer: [LoggedSample] = []
    /// When the download last heard from the board (or was started or confirmed).
    var downloadActivityAt: ContinuousClock.Instant?
    /// When a download asked for while the board logs on (a MetaMotion S) starts: once the
    /// page open at the request has filled (``BoardSession/downloadFlashLog()``).
    var readoutStartsAt: ContinuousClock.Instant?
    /// The download in progress reads only the log's streamed part, leaving this much of its
    /// newest entries (``BoardSession/readStreamedFlashLog(leaving:)``); nil for a full one.
    var streamedPartLeaves: Duration?
    /// Of such a download, the board's length count's arrival less what it leaves: its
    /// entries were logged before then.
    var streamedPartLoggedBefore: ContinuousClock.Instant?
    /// The link's dropped notifications as last seen (``BoardLink/droppedNotifications``).
    var droppedNotificationsSeen = 0
    /// Entries the log held at the last mark (``BoardSession/markFlashLogForTrim()``), and
    /// whether its length read is awaited.
    var trimMark: UInt32?
    var awaitingTrimLength = false
    /// When the recorder asked for the mark its stored stretch is measured from.
    var trimMarkAskedAt: ContinuousClock.Instant?
    /// When the handshake ended.
    var handshakeEndedAt: ContinuousClock.Instant?
    /// The handshake's end has queued the link's own setup (the flash log's start, the
    /// sensors' start, the button, the LED): the flash log's other work goes behind it.
    var setupQueued = false
    /// A motion sample arrived on this link: the board streams again.
    var streamLive = false
    /// The stream watchdog's register read after a silence, and the replies it still awaits.
    var probe = StreamProbe()
    /// When the board clock's reply (`0B 84`) arrived: its tick was the board's then. The
    /// handshake may go on for a second after it (battery, cleanup) on a loaded host.
    var clockReadAt: ContinuousClock.Instant?
    /// Tells the current reply timer from superseded ones.
    var replyTimer = 0
    /// The board was announced streaming when this link came back (a resumed stream): its
    /// handshake's end does not announce it again.
    var announcedStreaming = false
    /// The session gave up on this link; it is being dropped.
    var failed = false
}

/// Something to do on the link, in order.
enum LinkOperation: Sendable {
    case handshake(HandshakeSequencer.Action)
    case write(Packet)
    /// Writes that go out as one batch (``BoardLink/writeInOrder(_:)``).
    case writeTogether([Packet])
    /// The handshake's request-and-reply exchange is over: group notifications.
    case groupNotifications
    /// Hand on every notification at once again (a request-and-reply exchange on a grouped link).
    case ungroupNotifications
    /// Read notifications as they arrive while a flash-log readout runs, or rest between
    /// reads again (``BoardLink/readPromptly(_:)``).
    case readPromptly(Bool)
}

/// A reply timeout for one handshake step or the flash log's start.
struct ReplyTimer: Sendable {
    enum Wait: Sendable {
        case handshake(HandshakeSequencer.Step)
        case flashLog
    }

    var wait: Wait
    var id: Int
    var deadline: ContinuousClock.Instant
}

extension BoardSession {
    /// Runs one link until it ends (lost, dropped after a failure, or closed by a stop): the
    /// handshake, then the stream. Returns once its notifications are all handed on.
    func run(_ link: any BoardLink) async {
        let (operations, operationInput) = AsyncStream.makeStream(of: LinkOperation.self, bufferingPolicy: .bufferingOldest(1024))
        let (timers, timerInput) = AsyncStream.makeStream(of: ReplyTimer.self, bufferingPolicy: .bufferingOldest(64))
        let (watch, watchInput) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let (readoutWatch, readoutWatchInput) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        current = LinkWork(link: link, operations: operationInput, replyTimers: timerInput, watch: watchInput,
                           readoutWatch: readoutWatchInput)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.perform(operations, on: link) }
            group.addTask { await self.runReplyTimers(timers) }
            group.addTask { await self.watchStream(watch) }
            group.addTask { await self.watchReadout(readoutWatch) }
            if let interval = options.batteryInterval {
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        if !Task.isCancelled { await self.readBattery() }
                    }
                }
            }
            beginHandshake()
            for await batch in link.notifications { receive(batch) }
            group.cancelAll()
        }
        current = nil
        plan = nil
        tap.deactivate()
        streamRestarts = 0
    }

    /// Queues writes on the current link.
    func write(_ packets: [Packet]) {
        for packet in packets { current?.operations.yield(.write(packet)) }
    }

    /// Queues `packets` on the current link as one batch, for a sequence the board must get
    /// back to back.
    func writeTogether(_ packets: [Packet]) {
        guard !packets.isEmpty else { return }
        current?.operations.yield(.writeTogether(packets))
    }

    /// Gives up on the current link: the transport drops it and connects again.
    func failLink(_ reason: String) async {
        guard current?.failed == false else { return }
        current?.failed = true
        await transport.linkFailed(reason)
    }

    // MARK: Handshake

    private func beginHandshake() {
        guard !isStopping else { return }
        emit(.state(.handshaking))
        // A board whose configuration is known keeps its samples through the shortened
        // handshake (it may still stream from before the link dropped): it is streaming again
        // from the moment the link is back.
        if sensorsOn, knownPlan != nil, let description {
            emit(.state(.streaming(description)))
            current?.announcedStreaming = true
        }
        var handshake = options.handshake
        // The settle pause after the connection-parameter request is MbientLab's example
        // practice for a board's first connection; a reconnect must not pay it again
        // (link-drop recovery has a 2 s budget).
        if completedHandshakes > 0 { handshake.pauseAfterConnectionParametersMilliseconds = 0 }
        // A board known from an earlier handshake is not probed again (module info and DIS);
        // one that streams our plan from before the drop keeps streaming (no cleanup).
        var sequencer = HandshakeSequencer(configuration: options.configuration, options: handshake, known: description,
                                           resuming: sensorsOn && knownPlan != nil)
        let actions = sequencer.start()
        current?.sequencer = sequencer
        queue(actions)
    }

    private func queue(_ actions: [HandshakeSequencer.Action]) {
        for action in actions { current?.operations.yield(.handshake(action)) }
    }

    /// Performs the link's operations in order until the link ends.
    private func perform(_ operations: AsyncStream<LinkOperation>, on link: any BoardLink) async {
        for await operation in operations {
            // A stop abandons the rest (a handshake may sit in a pause or go on to start the
            // sensors): the stop commands follow whatever write is already under way.
            if isStopping { return }
            switch operation {
            case .write(let packet), .handshake(.write(let packet)):
                guard await wentOut({ try await link.write(packet) }) else { return }
            case .writeTogether(let packets):
                guard await wentOut({ try await link.writeInOrder(packets) }) else { return }
            case .handshake(.readDeviceInformation(let field)):
                deviceInformationRead(field, await link.readDeviceInformation(field))
            case .handshake(.pause(let milliseconds)):
                try? await Task.sleep(for: .milliseconds(milliseconds))
            case .handshake(.awaitReply(let step)):
                armReplyTimer(step)
            case .handshake(let outcome):
                await handshakeEnded(outcome)
            case .groupNotifications:
                await link.groupNotifications(options.notificationCoalescing, readCoalescing: options.signalReadCoalescing)
            case .ungroupNotifications:
                await link.groupNotifications(.zero, readCoalescing: .zero)
            case .readPromptly(let promptly):
                await link.readPromptly(promptly)
            }
            if Task.isCancelled { return }
        }
    }

    /// Performs one write; a failed write gives the link up. Returns whether it went out.
    private func wentOut(_ write: () async throws -> Void) async -> Bool {
        do {
            try await write()
            return true
        } catch {
            // The link's work was cancelled: its notifications ended (the link dropped) or a
            // stop runs. The write failed with the link, which is not the session's failure:
            // reported as one, it reached the transport after it had moved on and gave the next
            // link up, or, before bluetoothd's `Connected=false` arrived, asked `Disconnect` for
            // a link already gone and counted a hard failure.
            if !Task.isCancelled { await failLink("write failed: \(error)") }
            return false
        }
    }

    private func armReplyTimer(_ step: HandshakeSequencer.Step) {
        guard current?.sequencer != nil else { return }
        armReplyTimer(.handshake(step))
    }

    /// Arms the one reply timer for `wait`, superseding any earlier one.
    func armReplyTimer(_ wait: ReplyTimer.Wait) {
        current?.replyTimer += 1
        guard let id = current?.replyTimer else { return }
        let timeout = Duration.milliseconds(options.handshake.replyTimeoutMilliseconds)
        current?.replyTimers.yield(ReplyTimer(wait: wait, id: id, deadline: .now.advanced(by: timeout)))
    }

    private func runReplyTimers(_ timers: AsyncStream<ReplyTimer>) async {
        for await timer in timers {
            try? await Task.sleep(until: timer.deadline, clock: .continuous)
            if Task.isCancelled { return }
            replyTimedOut(timer)
        }
    }

    private func replyTimedOut(_ timer: ReplyTimer) {
        guard timer.id == current?.replyTimer else { return }
        guard case .handshake(let step) = timer.wait else { return flashLogTimedOut() }
        guard var sequencer = current?.sequencer else { return }
        let actions = sequencer.timedOut(step)
        current?.sequencer = sequencer
        queue(actions)
    }

    private func deviceInformationRead(_ field: DeviceInformationField, _ read: DeviceInformationRead) {
        guard var sequencer = current?.sequencer else { return }
        let actions = switch read {
        case .value(let text): sequencer.receive(field, value: text)
        case .failed: sequencer.timedOut(.deviceInformation(field))
        case .notExported: sequencer.unavailable(field)
        }
        current?.sequencer = sequencer
        queue(actions)
    }

    /// A handshake reply (or anything else) while the handshake runs.
    func handshakeReceived(_ notification: GattNotification) -> Bool {
        guard var sequencer = current?.sequencer else { return false }
        if notification.bytes.count == 7, notification.bytes[0] == ModuleID.logging.rawValue, notification.bytes[1] == 0x84 {
            current?.clockReadAt = notification.receivedAt
        }
        let actions = sequencer.receive(notification: notification.bytes)
        current?.sequencer = sequencer
        guard !actions.isEmpty else { return false }
        current?.replyTimer += 1
        queue(actions)
        return true
    }

    private func handshakeEnded(_ outcome: HandshakeSequencer.Action) async {
        current?.replyTimer += 1
        current?.sequencer = nil
        switch outcome {
        case .finished(let boardDescription, let plan):
            // What bluetoothd knows of the board (Modalias, Battery1) fills in what Device
            // Information and the settings module could not say (issue 18 defect 1).
            let host = await current?.link.hostReportedIdentity()
            guard current != nil, !isStopping else { return }
            let description = host.map(boardDescription.adopting) ?? boardDescription
            // The board still runs this plan from before the link dropped (the same boot on its
            // clock): its sensors' setup is not written again (issue 18 defect 3).
            let held = sensorsOn && boardRunsPlan && plan == knownPlan
                && Self.sameBoot(self.description?.boardClock, description.boardClock)
            current?.handshakeEndedAt = .now
            self.description = description
            self.plan = plan
            knownPlan = plan
            completedHandshakes += 1
            boardRunsPlan = sensorsOn
            // The flash log starts with the sensors, while replies are not yet grouped (a
            // grouped reply waits up to the grouping interval: a dozen of them would leave the
            // first seconds of a session unlogged).
            var commands = !sensorsOn ? sensorsOffCommands(plan, description)
                : startFlashLog(description) + (held ? [] : plan.startCommands)
            if options.watchButton, description.modules.has(.switchModule) { commands.append(Commands.subscribeButton) }
            if ledSignal != .off { commands += ledSignal.commands(ledRevision: description.ledRevision ?? 1) }
            if let battery = description.battery { emit(.battery(battery)) }
            // Once per link: each streaming state starts a new sample sequence downstream (the
            // recording pipeline seals the stream so far), and the status shows the board not
            // streaming until samples follow it, so a second one in the middle of a resumed
            // stream cut it in two and logged the board lost and connected again.
            if !sensorsOn {
                emit(.state(.idle(description)))
            } else if current?.announcedStreaming != true {
                emit(.state(.streaming(description)))
            }
            // Streaming from here on: no sample is taken for a handshake reply any more.
            tap.activate()
            write(commands)
            // After the start commands, so they are not slowed by grouped replies; after the
            // flash log's start when it waits for replies.
            if current?.flashStart == nil { current?.operations.yield(.groupNotifications) }
            if sensorsOn { current?.watch.yield() }
            current?.setupQueued = true
            startWantedReadout()
        case .failed(let error):
            // A board that cannot stream the configuration shows it on its LED.
            if case .configuration = error { write(LEDSignal.error.commands()) }
            await failLink("handshake failed: \(error)")
        default:
            break
        }
    }

    /// Whether two board clock reads come from the same boot: the reset counter changes on
    /// every reset, which also clears the sensors' setup. Unknown (a read that failed, a
    /// board without a logging module) counts as a reset.
    static func sameBoot(_ before: BoardClock?, _ after: BoardClock?) -> Bool {
        guard let before, let after else { return false }
        return before.resetUID == after.resetUID
    }

    /// The periodic battery reading: from the settings module when it has one (revision 3+),
    /// else bluetoothd's (Battery1, or the GATT battery level).
    private func readBattery() async {
        guard plan != nil, let description else { return }
        if let revision = description.settingsRevision, revision >= 3 {
            write([Commands.readBattery])
        } else if let battery = await current?.link.hostReportedIdentity().battery {
            emit(.battery(battery))
        }
    }
}
