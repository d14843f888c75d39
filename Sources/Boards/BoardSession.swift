import BlueZ
import DBus
import Foundation
import MetaWear

/// One MetaWear board, kept streaming: finds and connects it through BlueZ (driving the pure
/// ``ReconnectionMachine``), runs the handshake (driving MetaWear's ``HandshakeSequencer``),
/// starts the sensors, decodes notifications, supervises the stream and reconnects on its
/// own. ``stop()`` ends cleanly: sensors off, notifications off, disconnected.
///
/// Everything the session does happens in one serial loop over an inbox, so BlueZ changes,
/// call results, notifications and timers are handled in arrival order without reentrancy.
public actor BoardSession {
    /// The board's address.
    public nonisolated let address: BluetoothAddress
    /// The options in force.
    public nonisolated let options: BoardSessionOptions
    /// Events in order, in batches (see ``BoardEventStream``); finishes after ``stop()``.
    public nonisolated let events: BoardEventStream

    private let client: BlueZClient
    private let eventContinuation: AsyncStream<[BoardEvent]>.Continuation
    private let inbox: AsyncStream<Input>
    private let inboxContinuation: AsyncStream<Input>.Continuation
    private var machine: ReconnectionMachine
    private let origin = ContinuousClock.now
    private var facts: DeviceFacts?
    private var state: BoardState?
    private var runTask: Task<Void, Never>?
    private var changeTask: Task<Void, Never>?
    private var wakeTask: Task<Void, Never>?
    private var stopWaiters: [CheckedContinuation<Void, Never>] = []
    private var finished = false

    // Per-link state; `generation` tells stale callbacks from current ones.
    private var generation = 0
    private var link: GattLink?
    private var commandPath: DBusObjectPath?
    private var notifyCharacteristic: GattCharacteristicInfo?
    private var linkTasks: [Task<Void, Never>] = []
    private var actionTail: Task<Void, Never>?
    private var sequencer: HandshakeSequencer?
    private var replyTimer: Task<Void, Never>?
    /// The stream watchdog, running only while the sensors stream.
    private var streamWatch: Task<Void, Never>?
    /// Whether the sensors should stream (see ``setSensors(_:)``).
    private var sensorsOn: Bool
    private var plan: StreamingPlan?
    private var description: BoardDescription?
    private let tap: StreamingTap
    private var streamRestarts = 0
    private var ledSignal: LEDSignal = .off
    /// Handshakes that reached streaming; after the first, the settle pause is skipped.
    private var completedHandshakes = 0

    enum Input: Sendable {
        case refreshFacts
        case machine(ReconnectionMachine.Event)
        case wakeUp(Int)
        case notifications([GattNotification], Int)
        case notificationsEnded(Int)
        /// A DIS read: the text, nil when it failed; `exported` false when BlueZ has no such characteristic.
        case deviceInformation(DeviceInformationField, String?, exported: Bool, Int)
        case replyTimeout(HandshakeSequencer.Step, Int)
        case handshakeOutcome(HandshakeSequencer.Action, Int)
        case linkOpened(GattLink, Int)
        case linkFailed(String, Int)
        case watchdogTick(Int)
        case batteryTick(Int)
        case stop
    }

    /// A session for `address` on `client`; call ``start()``.
    public init(address: BluetoothAddress, client: BlueZClient, options: BoardSessionOptions) {
        self.address = address
        self.client = client
        self.options = options
        machine = ReconnectionMachine(policy: options.reconnection, seed: options.seed)
        sensorsOn = options.sensorsOnConnect
        (events, eventContinuation) = BoardEventStream.makeStream()
        (inbox, inboxContinuation) = AsyncStream.makeStream(of: Input.self, bufferingPolicy: .unbounded)
        tap = StreamingTap(board: address, events: eventContinuation)
    }

    /// Starts connecting and keeps the board connected until ``stop()``.
    public func start() async {
        guard runTask == nil else { return }
        let changes = await client.changes()
        let inbox = inboxContinuation
        changeTask = Task {
            for await change in changes {
                // Characteristic values (every StartNotify notification) never change the
                // device facts; refreshing on them cost more CPU than decoding the samples.
                if case .object(.propertiesChanged(_, BlueZNames.gattCharacteristic, _, _)) = change { continue }
                inbox.yield(.refreshFacts)
            }
        }
        runTask = Task { await self.run() }
        inboxContinuation.yield(.machine(.start))
        inboxContinuation.yield(.refreshFacts)
    }

    /// Stops the board cleanly (sensors off, notifications off, disconnect) and finishes
    /// ``events``. Returns once done.
    public func stop() async {
        if finished { return }
        if runTask == nil {
            finish()
            return
        }
        await withCheckedContinuation { continuation in
            stopWaiters.append(continuation)
            inboxContinuation.yield(.stop)
        }
    }

    /// Shows an LED signal now and after every reconnect (e.g. `.recording`, `.error`, `.off`).
    public func setLED(_ signal: LEDSignal) async {
        ledSignal = signal
        guard plan != nil, let description else { return }
        writeAll(signal.commands(ledRevision: description.ledRevision ?? 1))
    }

    /// Starts or stops the sensors, now if the board is connected and after every later
    /// handshake: on, the stream starts (fast connection parameters, stream watchdog); off, the
    /// board stays connected for its button and battery with gyro and accelerometer stopped
    /// and relaxed connection parameters (``ConnectionParameters/idle``).
    public func setSensors(_ on: Bool) {
        guard on != sensorsOn else { return }
        sensorsOn = on
        guard let plan, let description else { return }
        if on {
            emit(.state(.streaming(description)))
            tap.noteRestart()
            var commands = plan.startCommands
            if let fast = options.configuration.connectionParameters, (description.settingsRevision ?? 0) >= 1 {
                commands.append(Commands.connectionParameters(fast))
            }
            writeAll(commands)
            startStreamWatch()
        } else {
            streamWatch?.cancel()
            streamWatch = nil
            streamRestarts = 0
            writeAll(sensorsOffCommands(plan, description))
            emit(.state(.idle(description)))
        }
    }

    /// Sensors stopped (a board may still stream from before a gateway restart), then the
    /// relaxed connection parameters.
    private func sensorsOffCommands(_ plan: StreamingPlan, _ description: BoardDescription) -> [Packet] {
        var commands = plan.stopCommands
        if (description.settingsRevision ?? 0) >= 1 { commands.append(Commands.connectionParameters(.idle)) }
        return commands
    }

    /// The current state.
    public var currentState: BoardState? { state }

    /// The board as described by its last handshake.
    public var boardDescription: BoardDescription? { description }

    // MARK: Loop

    private func run() async {
        for await input in inbox {
            await handle(input)
            if finished { break }
        }
    }

    private var now: Duration { ContinuousClock.now - origin }

    private func handle(_ input: Input) async {
        switch input {
        case .refreshFacts:
            await refreshFacts()
        case .machine(let event):
            feed(event)
        case .wakeUp:
            if let due = machine.wakeUpTime, now >= due { feed(.wakeUp) }
        case .notifications(let batch, let gen):
            guard gen == generation else { return }
            // Batches queued while the tap was off; once it is on, it publishes them.
            if tap.publish(batch, generation: gen) { return }
            for notification in batch { receive(notification) }
        case .notificationsEnded(let gen):
            guard gen == generation, link != nil else { return }
            feed(.sessionFailed("notification channel closed"))
        case .deviceInformation(let field, let value, let exported, let gen):
            guard gen == generation, var sequencer else { return }
            let actions = if let value { sequencer.receive(field, value: value) }
                else if exported { sequencer.timedOut(.deviceInformation(field)) }
                else { sequencer.unavailable(field) }
            self.sequencer = sequencer
            perform(actions)
        case .replyTimeout(let step, let gen):
            guard gen == generation, var sequencer else { return }
            let actions = sequencer.timedOut(step)
            self.sequencer = sequencer
            perform(actions)
        case .handshakeOutcome(let outcome, let gen):
            guard gen == generation else { return }
            handshakeEnded(outcome)
        case .linkOpened(let opened, let gen):
            guard gen == generation else {
                Task { await opened.close() }
                return
            }
            link = opened
            beginHandshake()
        case .linkFailed(let reason, let gen):
            guard gen == generation else { return }
            feed(.sessionFailed(reason))
        case .watchdogTick(let gen):
            guard gen == generation else { return }
            checkWatchdog()
        case .batteryTick(let gen):
            guard gen == generation, plan != nil else { return }
            writeAll([Commands.readBattery])
        case .stop:
            await shutDown()
        }
    }

    /// Re-reads the mirror and feeds every difference to the machine: losses first, then the
    /// device's own facts, then rises of BlueZ and the adapter, so a board whose object is
    /// already known is connected without a needless scan.
    private func refreshFacts() async {
        let adapter = options.preferredAdapter.flatMap { try? DBusObjectPath($0) }
        let new = await client.facts(for: address, preferredAdapter: adapter)
        let old = facts
        facts = new
        let adapterUp = new.adapter != nil && new.adapterPowered
        let oldAdapterUp = old.map { $0.adapter != nil && $0.adapterPowered }
        if old?.blueZAvailable == true, !new.blueZAvailable { feed(.blueZAvailable(false)) }
        if oldAdapterUp == true, !adapterUp { feed(.adapterAvailable(false)) }
        if (old?.device != nil) != (new.device != nil) || old == nil { feed(.devicePresent(new.device != nil)) }
        if old?.connected != new.connected { feed(.connected(new.connected)) }
        if old?.servicesResolved != new.servicesResolved { feed(.servicesResolved(new.servicesResolved)) }
        if old?.blueZAvailable != true, new.blueZAvailable { feed(.blueZAvailable(true)) }
        if oldAdapterUp != true, adapterUp { feed(.adapterAvailable(true)) }
    }

    private func feed(_ event: ReconnectionMachine.Event) {
        let actions = machine.handle(event, at: now)
        for action in actions { execute(action) }
        reportMachineState()
    }

    private func reportMachineState() {
        switch machine.phase {
        case .idle, .stopped, .ready:
            return
        case .waitingForBlueZ, .waitingForAdapter, .locating, .connecting, .waitingForPendingConnect,
            .resolvingServices, .awaitingLinkDown, .backingOff:
            if machine.consecutiveFailures == 0, state == nil || state == .connecting {
                emit(.state(.connecting))
            } else if case .lost = state, machine.consecutiveFailures == 0 {
                emit(.state(.reconnecting(attempt: 1, lastFailure: machine.lastFailure)))
            } else if machine.consecutiveFailures > 0 {
                emit(.state(.reconnecting(attempt: machine.consecutiveFailures, lastFailure: machine.lastFailure)))
            }
        }
    }

    private func execute(_ action: ReconnectionMachine.Action) {
        let inbox = inboxContinuation
        let client = client
        let requester = address.rawValue
        switch action {
        case .startDiscovery:
            Task { await client.setScanning(true, requester: requester) }
        case .stopDiscovery:
            Task { await client.setScanning(false, requester: requester) }
        case .connect:
            guard let device = facts?.device else {
                inbox.yield(.machine(.connectFinished(.deviceGone)))
                return
            }
            let timeout = options.reconnection.connectTimeout
            Task {
                do {
                    try await client.connect(device, timeout: timeout)
                    inbox.yield(.machine(.connectFinished(nil)))
                } catch {
                    inbox.yield(.machine(.connectFinished(BlueZErrorClass(any: error))))
                }
            }
        case .disconnect:
            guard let device = facts?.device else { return }
            Task { try? await client.disconnect(device, timeout: .seconds(10)) }
        case .checkGATT:
            guard let device = facts?.device else {
                inbox.yield(.machine(.gattChecked(complete: false)))
                return
            }
            Task {
                let command = await client.characteristic(MetaWearGATT.command, under: device)
                let notify = await client.characteristic(MetaWearGATT.notify, under: device)
                let usable = command.map { $0.flags.contains("write-without-response") || $0.flags.contains("write") } ?? false
                    && notify.map { $0.flags.contains("notify") } ?? false
                inbox.yield(.machine(.gattChecked(complete: usable)))
            }
        case .removeDevice:
            guard let device = facts?.device, let adapter = facts?.adapter else { return }
            Task { try? await client.removeDevice(device, adapter: adapter) }
        case .powerCycleAdapter:
            guard let adapter = facts?.adapter else { return }
            Task {
                try? await client.setPowered(false, adapter: adapter)
                try? await Task.sleep(for: .seconds(1))
                try? await client.setPowered(true, adapter: adapter)
            }
        case .wakeUp(let at):
            wakeTask?.cancel()
            let delay = at - now
            wakeTask = Task {
                if delay > .zero { try? await Task.sleep(for: delay) }
                if !Task.isCancelled { inbox.yield(.wakeUp(0)) }
            }
        case .linkReady:
            openLink()
        case .linkLost(let reason):
            tearDownLink()
            emit(.state(.lost(reason: reason.description)))
        }
    }

    // MARK: Link

    private func openLink() {
        generation += 1
        let gen = generation
        let inbox = inboxContinuation
        let client = client
        let options = options
        guard let device = facts?.device else {
            inbox.yield(.linkFailed("device vanished before the link opened", gen))
            return
        }
        emit(.state(.handshaking))
        linkTasks.append(Task {
            guard let command = await client.characteristic(MetaWearGATT.command, under: device),
                  let notify = await client.characteristic(MetaWearGATT.notify, under: device)
            else {
                inbox.yield(.linkFailed("MetaWear characteristics missing", gen))
                return
            }
            do {
                let link = try await GattLink.open(busAddress: client.busAddress,
                                                   minimumWriteInterval: options.minimumWriteInterval)
                // Notifications go straight from the link's reader into the inbox (one hop),
                // held back only until the link itself is in the inbox.
                let gate = LinkInboxGate(inbox: inbox, generation: gen, tap: self.tap)
                do {
                    // Read at once during the handshake; grouped once streaming (see handshakeEnded).
                    try await link.subscribe(to: notify, delivery: options.notificationDelivery, coalescing: .zero,
                                             onBatch: { gate.deliver($0) }, onEnd: { gate.end() })
                } catch {
                    await link.close()
                    throw error
                }
                self.linkCharacteristics(command: command.path, notify: notify, gen: gen)
                gate.open(with: link)
            } catch {
                inbox.yield(.linkFailed("cannot enable notifications: \(error)", gen))
            }
        })
    }

    private func linkCharacteristics(command: DBusObjectPath, notify: GattCharacteristicInfo, gen: Int) {
        guard gen == generation else { return }
        commandPath = command
        notifyCharacteristic = notify
    }

    private func tearDownLink() {
        generation += 1
        linkTasks.forEach { $0.cancel() }
        linkTasks.removeAll()
        replyTimer?.cancel()
        replyTimer = nil
        streamWatch?.cancel()
        streamWatch = nil
        sequencer = nil
        plan = nil
        tap.deactivate()
        streamRestarts = 0
        if let link {
            Task { await link.close() }
        }
        link = nil
    }

    // MARK: Handshake

    private func beginHandshake() {
        var handshake = options.handshake
        // The settle pause after the connection-parameter request is MbientLab's example
        // practice for a board's first connection; a reconnect must not pay it again
        // (link-drop recovery has a 2 s budget).
        if completedHandshakes > 0 { handshake.pauseAfterConnectionParametersMilliseconds = 0 }
        // A board known from an earlier handshake is not probed again (module info and DIS).
        var sequencer = HandshakeSequencer(configuration: options.configuration, options: handshake, known: description)
        let actions = sequencer.start()
        self.sequencer = sequencer
        perform(actions)
    }

    /// Runs handshake actions in order on a chain, so pauses delay what follows.
    private func perform(_ actions: [HandshakeSequencer.Action]) {
        guard !actions.isEmpty, let link, let commandPath else { return }
        let gen = generation
        let inbox = inboxContinuation
        let client = client
        let device = facts?.device
        let replyTimeout = Duration.milliseconds(options.handshake.replyTimeoutMilliseconds)
        let previous = actionTail
        actionTail = Task {
            await previous?.value
            for action in actions {
                if Task.isCancelled { return }
                switch action {
                case .write(let packet):
                    do {
                        try await link.write(packet.bytes, to: commandPath, withResponse: packet.requiresWriteWithResponse)
                    } catch {
                        inbox.yield(.linkFailed("write failed: \(error)", gen))
                        return
                    }
                case .readDeviceInformation(let field):
                    var text: String?
                    let characteristic = if let device { await client.characteristic(field.uuid, under: device) } else { GattCharacteristicInfo?.none }
                    if let characteristic, let bytes = try? await link.read(characteristic.path) {
                        text = String(decoding: bytes, as: UTF8.self)
                    }
                    inbox.yield(.deviceInformation(field, text, exported: characteristic != nil, gen))
                case .pause(let milliseconds):
                    try? await Task.sleep(for: .milliseconds(milliseconds))
                case .awaitReply(let step):
                    self.armReplyTimer(step, after: replyTimeout, gen: gen)
                case .finished, .failed:
                    inbox.yield(.handshakeOutcome(action, gen))
                }
            }
        }
    }

    private func armReplyTimer(_ step: HandshakeSequencer.Step, after timeout: Duration, gen: Int) {
        guard gen == generation else { return }
        replyTimer?.cancel()
        let inbox = inboxContinuation
        replyTimer = Task {
            try? await Task.sleep(for: timeout)
            if !Task.isCancelled { inbox.yield(.replyTimeout(step, gen)) }
        }
    }

    private func handshakeEnded(_ outcome: HandshakeSequencer.Action) {
        replyTimer?.cancel()
        switch outcome {
        case .finished(let description, let plan):
            self.description = description
            self.plan = plan
            sequencer = nil
            completedHandshakes += 1
            var commands = sensorsOn ? plan.startCommands : sensorsOffCommands(plan, description)
            if options.watchButton, description.modules.has(.switchModule) { commands.append(Commands.subscribeButton) }
            if ledSignal != .off { commands += ledSignal.commands(ledRevision: description.ledRevision ?? 1) }
            // Reported before the tap is on: the reader publishes on its own thread the moment
            // the tap is on, and a sample ahead of `streaming` finds its board not attached
            // (the recording drops it; seen in the soak on a loaded machine).
            if let battery = description.battery { emit(.battery(battery)) }
            emit(.state(sensorsOn ? .streaming(description) : .idle(description)))
            // On before the start commands: no sample can be queued in the inbox ahead of it.
            tap.activate(decoder: plan.decoder, generation: generation)
            writeAll(commands)
            if let link {
                let grouping = options.notificationCoalescing
                let reads = options.signalReadCoalescing
                let previous = actionTail
                // After the start commands, so they are not slowed by delayed replies.
                actionTail = Task {
                    await previous?.value
                    await link.groupNotifications(grouping)
                    if reads > .zero { await link.coalesceNotificationReads(reads) }
                }
            }
            startBatteryReads()
            if sensorsOn { startStreamWatch() }
        case .failed(let error):
            sequencer = nil
            // A board that cannot stream the configuration shows it on its LED.
            if case .configuration = error { writeAll(LEDSignal.error.commands()) }
            feed(.sessionFailed("handshake failed: \(error)"))
        default:
            break
        }
    }

    private func writeAll(_ packets: [Packet]) {
        guard let link, let commandPath, !packets.isEmpty else { return }
        let gen = generation
        let inbox = inboxContinuation
        let previous = actionTail
        actionTail = Task {
            await previous?.value
            for packet in packets {
                do {
                    try await link.write(packet.bytes, to: commandPath, withResponse: packet.requiresWriteWithResponse)
                } catch {
                    inbox.yield(.linkFailed("write failed: \(error)", gen))
                    return
                }
            }
        }
    }

    // MARK: Streaming

    /// A notification while the tap is off: handshake replies go to the sequencer; anything
    /// else (e.g. data still streaming from before a reconnect) is not for anyone yet.
    private func receive(_ notification: GattNotification) {
        guard var sequencer else { return }
        let actions = sequencer.receive(notification: notification.bytes)
        self.sequencer = sequencer
        perform(actions)
    }

    private func startStreamWatch() {
        streamWatch?.cancel()
        let gen = generation
        let inbox = inboxContinuation
        let timeout = options.watchdogTimeout
        let tap = tap
        streamWatch = Task {
            // Sleeps until the stream would be overdue and wakes the session only then, so a
            // healthy stream costs one timer wake-up per timeout rather than several session
            // hops; the session's check also resets the restart count once data flowed again.
            while !Task.isCancelled {
                let overdue = tap.lastNotificationTime.map { $0.advanced(by: timeout) } ?? .now.advanced(by: timeout)
                let wake = max(overdue, ContinuousClock.now.advanced(by: timeout / 8)).advanced(by: .milliseconds(1))
                try? await Task.sleep(until: wake, clock: .continuous)
                guard !Task.isCancelled else { return }
                if let last = tap.lastNotificationTime, ContinuousClock.now - last <= timeout { continue }
                inbox.yield(.watchdogTick(gen))
                try? await Task.sleep(for: timeout / 4)
            }
        }
    }

    private func startBatteryReads() {
        let gen = generation
        let inbox = inboxContinuation
        if let interval = options.batteryInterval {
            linkTasks.append(Task {
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    inbox.yield(.batteryTick(gen))
                }
            })
        }
    }

    /// No data for several expected intervals: restart the stream, then reconnect (reference
    /// metawear-protocol §9.1, bluez-dbus §2.3 step 11).
    private func checkWatchdog() {
        guard sensorsOn else { return }
        let reading = tap.watchdogReading()
        if reading.motionSeen { streamRestarts = 0 }
        guard let plan, let last = reading.last, ContinuousClock.now - last > options.watchdogTimeout else { return }
        if streamRestarts < options.streamRestartsBeforeReconnect {
            streamRestarts += 1
            emit(.state(.recoveringStream(restart: streamRestarts)))
            writeAll(plan.stopCommands + plan.startCommands)
            tap.noteRestart()
            if let description { emit(.state(.streaming(description))) }
            return
        }
        feed(.sessionFailed("no data for \(options.watchdogTimeout) after \(streamRestarts) stream restart(s)"))
    }

    // MARK: Shutdown

    /// Every step is bounded, so a stop ends within 2 s in any state (connecting, handshake,
    /// streaming) even when bluetoothd is slow to answer `Disconnect` (2.4-3.5 s measured on
    /// the real stack, real-bluez-vm.md).
    private func shutDown() async {
        // A handshake chain may sit in a pause or wait for replies: it is abandoned, not awaited.
        actionTail?.cancel()
        if let link, let commandPath {
            let commands = stopCommands()
            await link.coalesceNotificationReads(.zero)
            await withinTimeLimit(Self.stopCommandsLimit) {
                for packet in commands {
                    do {
                        try await link.write(packet.bytes, to: commandPath, withResponse: packet.requiresWriteWithResponse)
                    } catch { break }
                }
            }
        } else if facts?.connected == true, let device = facts?.device {
            // Connected but the link is still being opened (early handshake): the commands go
            // through the shared connection instead.
            let commands = stopCommands()
            let client = client
            await withinTimeLimit(Self.stopCommandsLimit) {
                guard let command = await client.characteristic(MetaWearGATT.command, under: device) else { return }
                for packet in commands {
                    do { try await client.writeCommand(packet.bytes, to: command.path, timeout: Self.stopCommandsLimit) } catch { break }
                }
            }
        }
        let openLink = link
        let actions = machine.handle(.stop, at: now)
        tearDownLink()
        await openLink?.close()
        for action in actions where action == .disconnect {
            if let device = facts?.device { try? await client.disconnect(device, timeout: Self.disconnectLimit) }
        }
        await client.setScanning(false, requester: address.rawValue)
        wakeTask?.cancel()
        changeTask?.cancel()
        emit(.state(.stopped))
        finish()
    }

    /// Time allowed for the stop commands, and for bluetoothd's answer to `Disconnect` (the
    /// board was already asked to end the link itself).
    static let stopCommandsLimit = Duration.milliseconds(700)
    static let disconnectLimit = Duration.milliseconds(800)

    /// What a stop writes: the plan's stop commands while streaming, the full sensor cleanup
    /// of a board known from an earlier handshake otherwise (its sensors may still run from
    /// before this link), then `FE 06` so the board ends the link even if bluetoothd's
    /// `Disconnect` is late.
    private func stopCommands() -> [Packet] {
        var commands: [Packet] = []
        if let plan {
            commands = plan.stopCommands
        } else if let description {
            commands = Commands.cleanup(chip: description.chip, modules: description.modules)
        }
        if options.watchButton, description?.modules.has(.switchModule) == true { commands.append(Commands.unsubscribeButton) }
        if ledSignal != .off, description != nil { commands.append(LEDSignal.stopAndClear) }
        commands.append(Commands.disconnect)
        return commands
    }

    private func withinTimeLimit(_ limit: Duration, _ work: @escaping @Sendable () async -> Void) async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await work() }
            group.addTask { try? await Task.sleep(for: limit) }
            await group.next()
            group.cancelAll()
        }
    }

    private func finish() {
        finished = true
        eventContinuation.finish()
        inboxContinuation.finish()
        for waiter in stopWaiters { waiter.resume() }
        stopWaiters.removeAll()
    }

    private func emit(_ kind: BoardEvent.Kind, at notification: GattNotification? = nil) {
        if case .state(let new) = kind {
            guard new != state else { return }
            state = new
        }
        eventContinuation.yield([BoardEvent(board: address, kind: kind, receivedAt: notification?.receivedAt ?? .now,
                                            wallClock: notification?.wallClock ?? Date())])
    }
}

/// Orders a link's arrival in the session inbox before its notifications: the reader may
/// deliver before ``open(with:)`` has put the link there, so batches wait here until then.
private final class LinkInboxGate: @unchecked Sendable {
    private let lock = NSLock()
    private let inbox: AsyncStream<BoardSession.Input>.Continuation
    private let generation: Int
    private let tap: StreamingTap
    private var opened = false
    private var held: [BoardSession.Input] = []

    init(inbox: AsyncStream<BoardSession.Input>.Continuation, generation: Int, tap: StreamingTap) {
        self.inbox = inbox
        self.generation = generation
        self.tap = tap
    }

    func open(with link: GattLink) {
        lock.lock()
        defer { lock.unlock() }
        inbox.yield(.linkOpened(link, generation))
        for input in held { inbox.yield(input) }
        held.removeAll()
        opened = true
    }

    /// While streaming the tap publishes the batch on this thread; otherwise it goes to the
    /// session's inbox (handshake replies).
    func deliver(_ batch: [GattNotification]) {
        if tap.publish(batch, generation: generation) { return }
        pass(.notifications(batch, generation))
    }

    func end() { pass(.notificationsEnded(generation)) }

    private func pass(_ input: BoardSession.Input) {
        lock.lock()
        defer { lock.unlock() }
        if opened { inbox.yield(input) } else { held.append(input) }
    }
}
