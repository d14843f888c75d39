import Basics
import BlueZ
import DBus
import MetaWear

/// The D-Bus ``BoardTransport``: finds and connects one board through BlueZ and reconnects
/// it on its own, driving the pure ``ReconnectionMachine`` with what the ``BlueZClient``'s
/// mirror shows, and opens a ``GattBoardLink`` whenever the machine says the link is ready.
///
/// With ``NotificationDelivery/sessionKeptOverDrops`` the link's notify session (its D-Bus
/// connection and `StartNotify`) outlives a link drop: bluetoothd turns the board's
/// notifications on again itself as the link comes back, so the board's samples flow before
/// `Connect` returns, and the next link takes the session over without a call.
///
/// One ``run()`` holds everything: the mirror's changes and every BlueZ call and timer the
/// machine asks for are child tasks of its group, ended by ``stop(writing:)`` or cancellation.
public actor BlueZBoardTransport: BoardTransport {
    public nonisolated let events: AsyncStream<BoardTransportEvent>
    private let continuation: AsyncStream<BoardTransportEvent>.Continuation
    private let address: BluetoothAddress
    private let client: BlueZClient
    private let options: BoardSessionOptions
    private let work = ChildTaskQueue()
    private let origin = ContinuousClock.now
    private var machine: ReconnectionMachine
    private var facts: DeviceFacts?
    private var link: GattBoardLink?
    /// The link being opened for an attempt, from its connection's opening until it is
    /// handed on or failed: its `AcquireNotify` may be waiting for bluetoothd's GATT client.
    private var opening: (attempt: Int, link: GattLink)?
    /// The next link's own D-Bus connection, opened ahead and not used yet: once the machine
    /// says the link is ready, the link's first message is its `AcquireNotify`. Opened then
    /// (connect, authenticate, `Hello`, its I/O thread), it was most of the 0.02-0.19 s between
    /// bluetoothd's answer to `Connect` and our `AcquireNotify` in the real-BlueZ VM, and
    /// bluetoothd writes the board's CCCD only after that call (without its GAP, Device
    /// Information and Battery plugins' reads, the call was the last step before it in 6 of 8
    /// reconnects). Nil while one is being opened or in use.
    private var nextLinkConnection: GattLink?
    private var openingNextLinkConnection = false
    /// The notify session held through link drops (``NotificationDelivery/sessionKeptOverDrops``),
    /// nil until the first link opens one and after anything that ends it in bluetoothd.
    private var keptSession: BoardNotifySession?
    /// Tells a link opened for an attempt that has since ended from the current one.
    private var linkAttempt = 0
    /// Tells the current wake-up from superseded ones.
    private var wakeUp = 0
    private var reportedProgress: Progress?
    private var stopped = false

    private struct Progress: Equatable {
        var failures: Int
        var lastFailure: String?
    }

    /// A transport for the board at `address` on `client`.
    public init(address: BluetoothAddress, client: BlueZClient, options: BoardSessionOptions) {
        self.address = address
        self.client = client
        self.options = options
        machine = ReconnectionMachine(policy: options.reconnection, seed: options.seed)
        (events, continuation) = AsyncStream.makeStream(of: BoardTransportEvent.self, bufferingPolicy: .bufferingOldest(256))
    }

    public func run() async {
        guard !stopped else { return }
        let changes = await client.changes(for: "board \(address.rawValue)")
        work.spawn { [self] in
            await refreshFacts()
            // Every other change, and the mark of changes left out while this fell behind
            // (BlueZChange.missedChanges), re-reads the facts: they hold the changes' result.
            for await change in changes {
                // Characteristic values (every StartNotify notification) never change the
                // device facts; refreshing on them cost more CPU than decoding the samples.
                if case .object(.propertiesChanged(_, BlueZNames.gattCharacteristic, _, _)) = change { continue }
                await refreshFacts()
            }
        }
        prepareNextLinkConnection()
        feed(.start)
        await work.run()
    }

    public func linkFailed(_ reason: String) {
        // The session gave up on the link (handshake failed, silent stream): the next link
        // starts from a fresh notify session rather than trusting the kept one.
        forgetKeptSession()
        feed(.sessionFailed(reason))
    }

    /// Every step is bounded, so a stop ends within 2 s in any state (connecting, handshake,
    /// streaming) even when bluetoothd is slow to answer `Disconnect` (2.4-3.5 s measured on
    /// the real stack, real-bluez-vm.md).
    public func stop(writing commands: [Packet], linkEnding: @escaping @Sendable () -> Void) async {
        guard !stopped else { return linkEnding() }
        stopped = true
        // The machine is stopped first, before anything here waits: the stop's own steps bring
        // events (closing a link still opening fails its `AcquireNotify`, `FE 06` ends the
        // link), and fed to a running machine they moved it on mid-stop, to a failed session
        // and a backoff in which no link "may be up" any more, so the stop then wrote no
        // `FE 06` and asked no `Disconnect`, and the machine's own `Disconnect` and next
        // `Connect` were cancelled or left to outlive the stop (1 in 10 stops after the
        // connect race at load 5, UnannouncedLinkStopTests). Every decision below is the one
        // for the link as the stop found it.
        linkAttempt += 1
        let actions = machine.handle(.stop, at: now)
        let linkMayBeUp = actions.contains(.disconnect)
        if let opening {
            // A link still opening (typically its `AcquireNotify` waiting for bluetoothd's
            // GATT client after a reconnect) is closed first, while the link is up: its close
            // gives the unanswered call back with `StopNotify`. Ended by `FE 06` or left to the
            // process's exit instead, bluetoothd 5.66 keeps the board's notifications acquired
            // for a freed client (GattLink.close(), docs/bluez-vm.md).
            self.opening = nil
            await opening.link.close()
        }
        if let link {
            // Sent in order once the link's write slot is free (however long a write before
            // them holds it: given up unsent under a time limit, the sensors-off commands were
            // lost on a starved VM while `FE 06` still went), `FE 06` last, without waiting for
            // bluetoothd's answers: it handles one connection's calls in the order sent and
            // queues each as an ATT Write Command, sent in that order (src/gatt-client.c
            // `characteristic_write_value`; an answer only says the write was queued), so the
            // board turns its sensors and log off before it ends the link. Waiting for the
            // answers, in two round trips, held the board's stop, and with it the seal, for
            // bluetoothd's busy main loop on the loaded real-BlueZ VM (issue 18 §2.7).
            await link.prepareForStop()
            try? await link.sendStopCommands(commands)
        } else if facts?.connected == true || linkMayBeUp, let device = facts?.device {
            // A link that is or may be up but not yet opened here (the early handshake; after
            // 5.66's connect race, where `Connected=true` never comes; a `Connect` that may
            // just have completed): the commands go through the shared connection instead, so
            // the board's `FE 06` ends the link at once. `Disconnect` alone ends it only from
            // bluetoothd's 2 s timer. Where there is no link bluetoothd refuses the writes at
            // once ("Not connected").
            if let command = await client.characteristic(MetaWearGATT.command, under: device) {
                try? await client.sendCommandsInOrder(commands.map(\.bytes), to: command.path)
            }
        }
        let closing: BoardNotifySession? = link?.session ?? keptSession
        // Disconnect goes after the commands on the connection they went on (the shared one
        // where the link's has ended), so bluetoothd takes it after them (one connection's
        // calls reach it in the order sent), and is not waited for: bluetoothd answers it only
        // once the link is down (the board's `FE 06` ends it sooner than 5.66's 2 s timer),
        // and handles it while the notify is held as any link drop. Then the link's close (its
        // notifications drained, an acquired notify released before its connection leaves the
        // bus: the 5.66 crash).
        if linkMayBeUp, let device = facts?.device, (try? link?.requestDisconnect(device)) == nil {
            await client.requestDisconnect(device)
        }
        link = nil
        keptSession = nil
        linkEnding()
        await closing?.close()
        let unused = nextLinkConnection
        nextLinkConnection = nil
        await unused?.close()
        await client.setScanning(false, requester: address.rawValue)
        continuation.finish()
        work.finish()
    }

    // MARK: Machine

    private var now: Duration { ContinuousClock.now - origin }

    /// Re-reads the mirror and feeds every difference to the machine: losses first, then the
    /// device's own facts, then rises of BlueZ and the adapter, so a board whose object is
    /// already known is connected without a needless scan.
    private func refreshFacts() async {
        let adapter = options.preferredAdapter.flatMap { try? DBusObjectPath($0) }
        let new = await client.facts(for: address, preferredAdapter: adapter)
        let old = facts
        facts = new
        // bluetoothd restarted, or the device object went: its notify sessions went with them.
        if keptSession != nil, !new.blueZAvailable || new.device != keptSession?.device { forgetKeptSession() }
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
        reportProgress()
    }

    /// A machine event that must not be fed while the machine's previous actions are being
    /// executed: it is fed from a child task, after them.
    private func feedLater(_ event: ReconnectionMachine.Event) {
        work.spawn { [self] in await feed(event) }
    }

    private func reportProgress() {
        switch machine.phase {
        case .idle, .stopped, .ready:
            return
        case .waitingForBlueZ, .waitingForAdapter, .locating, .connecting, .waitingForPendingConnect,
            .resolvingServices, .awaitingLinkDown, .backingOff:
            let progress = Progress(failures: machine.consecutiveFailures, lastFailure: machine.lastFailure)
            guard progress != reportedProgress else { return }
            reportedProgress = progress
            continuation.yield(.connecting(failures: progress.failures, lastFailure: progress.lastFailure))
        }
    }

    private func execute(_ action: ReconnectionMachine.Action) {
        let client = client
        let requester = address.rawValue
        switch action {
        case .startDiscovery:
            work.spawn { await client.setScanning(true, requester: requester) }
        case .stopDiscovery:
            work.spawn { await client.setScanning(false, requester: requester) }
        case .connect:
            guard let device = facts?.device else { return feedLater(.connectFinished(.deviceGone)) }
            let timeout = options.reconnection.connectTimeout
            work.spawn { [self] in
                do {
                    try await client.connect(device, timeout: timeout)
                    await feed(.connectFinished(nil))
                } catch {
                    await feed(.connectFinished(BlueZErrorClass(any: error)))
                }
            }
        case .disconnect:
            guard let device = facts?.device else { return }
            work.spawn { try? await client.disconnect(device, timeout: .seconds(10)) }
        case .checkGATT:
            guard let device = facts?.device else { return feedLater(.gattChecked(complete: false)) }
            work.spawn { [self] in
                let command = await client.characteristic(MetaWearGATT.command, under: device)
                let notify = await client.characteristic(MetaWearGATT.notify, under: device)
                let usable = command.map { $0.flags.contains("write-without-response") || $0.flags.contains("write") } ?? false
                    && notify.map { $0.flags.contains("notify") } ?? false
                await feed(.gattChecked(complete: usable))
            }
        case .removeDevice:
            guard let device = facts?.device, let adapter = facts?.adapter else { return }
            work.spawn { try? await client.removeDevice(device, adapter: adapter) }
        case .powerCycleAdapter:
            guard let adapter = facts?.adapter else { return }
            work.spawn {
                try? await client.setPowered(false, adapter: adapter)
                try? await Task.sleep(for: .seconds(1))
                try? await client.setPowered(true, adapter: adapter)
            }
        case .wakeUp(let at):
            wakeUp += 1
            let current = wakeUp
            let delay = at - now
            work.spawn { [self] in
                if delay > .zero { try? await Task.sleep(for: delay) }
                if !Task.isCancelled { await wake(current) }
            }
        case .linkReady:
            reportedProgress = nil
            openLink()
        case .linkLost(let reason):
            reportedProgress = nil
            linkAttempt += 1
            let closing = link
            link = nil
            // Reported now, in order; the session hands on what the link still delivers
            // (its notification stream ends after the close has drained it) before it
            // reports the loss.
            continuation.yield(.linkLost(reason: reason.description))
            guard let closing else { return }
            if let keptSession, closing.session === keptSession {
                work.spawn { await keptSession.detach() }
            } else {
                work.spawn { await closing.close() }
            }
        }
    }

    private func wake(_ requested: Int) {
        guard requested == wakeUp, let due = machine.wakeUpTime, now >= due else { return }
        feed(.wakeUp)
    }

    // MARK: Link

    private func openLink() {
        linkAttempt += 1
        let attempt = linkAttempt
        guard let device = facts?.device else { return feedLater(.sessionFailed("device vanished before the link opened")) }
        let client = client
        let options = options
        let work = work
        if let keptSession, keptSession.device == device {
            // bluetoothd re-enabled the kept session when the link came back: no call needed.
            work.spawn { [self] in
                await keptSession.prepareForNewLink()
                await linkOpened(GattBoardLink(session: keptSession, client: client), attempt: attempt)
            }
            return
        }
        let connection = nextLinkConnection
        nextLinkConnection = nil
        work.spawn { [self] in
            do {
                let session = try await BoardNotifySession.open(
                    id: attempt, device: device, client: client, options: options, connection: connection,
                    opening: { [self] link in await noteOpening(link, attempt: attempt) },
                    onEnd: { work.spawn { [self] in await notificationsEnded(session: attempt) } })
                await sessionOpened(session, attempt: attempt)
            } catch {
                await linkOpeningFailed("\(error)", attempt: attempt)
            }
        }
    }

    private func noteOpening(_ opened: GattLink, attempt: Int) async {
        guard !stopped else {
            // The stop has passed its look at links being opened: this one closes itself.
            await opened.close()
            return
        }
        opening = (attempt, opened)
    }

    private func sessionOpened(_ session: BoardNotifySession, attempt: Int) async {
        if opening?.attempt == attempt { opening = nil }
        // Only now that the link has its notifications: opened sooner, the next link's
        // connection would take the CPU from this one's `AcquireNotify` (a reconnect's waits
        // for bluetoothd's GATT client).
        prepareNextLinkConnection()
        guard attempt == linkAttempt, !stopped else {
            await session.close()
            return
        }
        if options.notificationDelivery == .sessionKeptOverDrops { keptSession = session }
        await linkOpened(GattBoardLink(session: session, client: client), attempt: attempt)
    }

    private func linkOpened(_ opened: GattBoardLink, attempt: Int) async {
        guard attempt == linkAttempt, !stopped else {
            if opened.session !== keptSession { await opened.close() } else { await opened.session.detach() }
            return
        }
        link = opened
        continuation.yield(.linkReady(opened))
    }

    /// Opens the next link's connection ahead, unless one is open or being opened. A failure
    /// (the bus gone) is left to the next link, which then opens its own.
    private func prepareNextLinkConnection() {
        guard !stopped, nextLinkConnection == nil, !openingNextLinkConnection else { return }
        openingNextLinkConnection = true
        let client = client
        let options = options
        work.spawn { [self] in
            let opened = try? await BoardNotifySession.openConnection(client: client, options: options)
            await nextLinkConnectionOpened(opened)
        }
    }

    private func nextLinkConnectionOpened(_ opened: GattLink?) async {
        openingNextLinkConnection = false
        guard let opened else { return }
        guard !stopped, nextLinkConnection == nil else {
            await opened.close()
            return
        }
        nextLinkConnection = opened
    }

    /// Stops keeping the notify session; a link still using it closes it when it goes.
    private func forgetKeptSession() {
        guard let session = keptSession else { return }
        keptSession = nil
        if link?.session !== session { work.spawn { await session.close() } }
    }

    /// The notifications of the session opened for link attempt `id` ended. Links we close
    /// are let go (``link`` cleared) before they are closed; the current link's ending means
    /// bluetoothd shut the channel, which it does when the link drops, even when it never
    /// signals `Connected` (5.66's connect race): without this the session waited for the
    /// device object to be removed (31 s in the real-BlueZ VM). A kept session's
    /// notifications end only when its connection does; the next link then opens a new one.
    private func notificationsEnded(session id: Int) {
        if keptSession?.id == id { keptSession = nil }
        guard link?.session.id == id, !stopped else { return }
        feed(.notificationsClosed)
    }

    private func linkOpeningFailed(_ reason: String, attempt: Int) {
        if opening?.attempt == attempt { opening = nil }
        prepareNextLinkConnection()
        guard attempt == linkAttempt else { return }
        feed(.sessionFailed(reason))
    }
}
