import DBus
import MetaWearBoardModel

/// Connections and the BLE link: connect/disconnect, connection events that release queued
/// notifications in batches, the rate cap, and link loss.
extension BlueZSimulator {
    // MARK: Connect / Disconnect

    /// `Connect` on board `index`'s device object as bluetoothd `daemon` (its
    /// ``daemonGeneration``) exported it. A call that bluetoothd received just before it went
    /// away is never carried out: the process that would have made the link is gone (a stale
    /// `Connect` handled during the restart left the board linked to no one, not advertising,
    /// and so never found again: soak seed 12, board 0 lost from the bluetoothd restart on).
    func connect(_ index: Int, daemon: Int) async throws {
        let device = try device(index)
        guard daemon == daemonGeneration else { throw BlueZError.failed("bluetoothd went away") }
        log("mwsim: board \(index) \(device.address) Connect asked")
        guard powered else { throw BlueZError.notReady() }
        if device.connected { return }
        guard !device.connecting else { throw BlueZError.inProgress() }
        device.connecting = true
        device.lastSeen = clock.now
        let generation = device.linkGeneration
        if let refusal = device.refuseNextConnect {
            device.refuseNextConnect = nil
            log("mwsim: board \(index) \(device.address) refuses Connect: \(refusal)")
            try? await Task.sleep(for: .milliseconds(30))
            device.connecting = false
            let error = BlueZError.refusal(refusal)
            if error.message == "le-connection-abort-by-local" {
                // BlueZ briefly shows the link before the abort (bluez-dbus.md §1.6 item 7).
                update(device.path, Self.deviceInterface, ["Connected": .boolean(true)])
                update(device.path, Self.deviceInterface, ["Connected": .boolean(false)])
            }
            throw error
        }
        // Link establishment takes a few connection intervals.
        try? await Task.sleep(for: .milliseconds(20))
        guard device.connecting, generation == device.linkGeneration, daemon == daemonGeneration, powered, !device.vanished,
              !stopped else {
            device.connecting = false
            throw BlueZError.failed("le-connection-abort-by-local")
        }
        device.connecting = false
        linkUp(device)
    }

    func disconnect(_ index: Int) async throws {
        let device = try device(index)
        log("mwsim: board \(index) \(device.address) Disconnect asked")
        if device.connecting {
            // Disconnect cancels a pending Connect.
            device.connecting = false
            device.linkGeneration += 1
            return
        }
        guard device.connected else { throw BlueZError.notConnected() }
        if configuration.disconnectReplyDelay > .zero {
            let generation = device.linkGeneration
            try? await Task.sleep(for: configuration.disconnectReplyDelay)
            guard device.connected, generation == device.linkGeneration else { return }
        }
        linkLost(device, reason: "local disconnect")
    }

    func linkUp(_ device: SimulatedDevice) {
        device.connected = true
        device.linkGeneration += 1
        device.connectedAt = clock.now
        device.lastEvent = nil
        device.linkQueue = []
        device.heldBacklog = 0
        device.tokens = 0
        device.releases = []
        device.stats.connections += 1
        // Samples made while the link was down never left the board.
        _ = device.model.advance(to: nanosecondsSinceStart(clock.now))
        if configuration.connectedSignalMissed.contains(device.index) {
            properties[device.path, default: [:]][Self.deviceInterface, default: [:]]["Connected"] = .boolean(true)
        } else {
            update(device.path, Self.deviceInterface, ["Connected": .boolean(true)])
        }
        log("mwsim: board \(device.index) \(device.address) connected")
        let generation = device.linkGeneration
        let index = device.index
        // A tree kept from an earlier link is checked (DB Hash) or rediscovered, not exported anew.
        let resolveDelay = device.gattExported
            ? configuration.keptServicesResolveDelay ?? configuration.servicesResolveDelay
            : configuration.servicesResolveDelay
        let started = spawn("board \(index)'s link") { [self] in
            await linkTimeline(index, generation, resolveDelay: resolveDelay)
        }
        if !started { tearDownLink(device, announce: true) }
    }

    /// A link's life from Connect on: connection events that release queued notifications,
    /// and ServicesResolved after `resolveDelay`. Ends when the link does (its generation is
    /// stale by its next event) or with the running scope.
    nonisolated func linkTimeline(_ index: Int, _ generation: Int, resolveDelay: Duration) async {
        // bluetoothd's GATT client works on the link from the start, before ServicesResolved:
        // connection events carry writes and notifications (a kept notify session's or an
        // early AcquireNotify's) while the services are still being resolved.
        let resolveAt = ContinuousClock.now.advanced(by: resolveDelay)
        var resolved = false
        var nextEvent = ContinuousClock.now
        while !Task.isCancelled {
            let now = ContinuousClock.now
            if !resolved, now >= resolveAt {
                guard await resolveServices(index, generation) else { return }
                resolved = true
            }
            if now >= nextEvent {
                guard let interval = await connectionEvent(index, generation) else { return }
                nextEvent = nextEvent.advanced(by: interval)
                // After a long scheduling delay, start a fresh event train instead of bursting.
                if nextEvent < now { nextEvent = now.advanced(by: interval) }
            }
            try? await Task.sleep(until: resolved ? nextEvent : min(nextEvent, resolveAt), clock: .continuous)
        }
    }

    /// Service discovery finished: the GATT tree is there (kept from an earlier connection if
    /// cached), then ServicesResolved. Returns false if the link went away meanwhile.
    func resolveServices(_ index: Int, _ generation: Int) async -> Bool {
        guard let device = try? device(index), device.connected, generation == device.linkGeneration else { return false }
        if !device.gattExported {
            do { try await exportGATT(device) } catch { log("mwsim: cannot export GATT of \(device.path): \(error)") }
        }
        guard device.connected, generation == device.linkGeneration else { return false }
        update(device.path, Self.deviceInterface, [
            "ServicesResolved": .boolean(true),
            "UUIDs": .array(element: .string, GATTLayout.resolvedUUIDs.map { .string($0) }),
        ])
        device.servicesResolved = true
        // Sessions that outlived the last link are armed again (bluez-dbus.md §1.6 item 1).
        refreshNotifying(device)
        await runHostPlugins(device)
        return device.connected && generation == device.linkGeneration
    }

    /// The link is gone for `reason`: ServicesResolved=false, then Connected=false; the GATT
    /// objects stay (Cache=always); an AcquireNotify fd gets HUP.
    func linkLost(_ device: SimulatedDevice, reason: String) {
        guard device.connected || device.connecting else { return }
        log("mwsim: board \(device.index) \(device.address) link lost (\(reason))")
        tearDownLink(device, announce: true)
    }

    func tearDownLink(_ device: SimulatedDevice, announce: Bool) {
        let wasConnected = device.connected
        // The link's timeline sees the new generation at its next event and ends.
        device.linkGeneration += 1
        device.connecting = false
        device.connected = false
        device.connectedAt = nil
        device.linkQueue = []
        device.deliveryHeldUntil = nil
        device.heldBacklog = 0
        device.requestWriteInFlight = false
        device.stats.connectionIntervalMilliseconds = 0
        if wasConnected { device.stats.disconnections += 1 }
        // What the board was still to send is lost with the link; a log readout ends there.
        device.model.linkLost()
        device.lastSeen = clock.now
        if announce && device.servicesResolved {
            update(device.path, Self.deviceInterface, ["ServicesResolved": .boolean(false)])
        }
        device.servicesResolved = false
        if device.notifyPipe != nil { releaseNotifyPipe(device, announce: announce) }
        removeBatteryInterface(device)
        if announce && wasConnected {
            update(device.path, Self.deviceInterface, ["Connected": .boolean(false)])
        }
    }

    /// Link loss injected from a fault (supervision timeout).
    public func dropLink(_ index: Int) throws {
        let device = try device(index)
        log("mwsim: fault link-drop board \(index) \(device.address)")
        linkLost(device, reason: "supervision timeout")
    }

    /// Test hook: board `index`'s link drops (supervision timeout) as the next `WriteValue` for
    /// it reaches bluetoothd, whoever sends it: a link lost while a central's commands are on
    /// their way, such as a stop's.
    public func dropLinkAtNextWrite(_ index: Int) throws {
        try device(index).dropLinkAtNextWrite = true
    }

    // MARK: Connection events

    /// The connection interval for this link in ms: the board's `11 09` request or the
    /// configured one, with seeded jitter, always within BLE's 7.5…30 ms used here.
    func nextInterval(_ device: SimulatedDevice) -> Duration {
        var base = configuration.connectionIntervalMilliseconds
        if let request = device.model.requestedConnectionParameters, request.count >= 2 {
            base = Double(UInt16(request[0]) | UInt16(request[1]) << 8) * 1.25
        }
        let jitter = (device.random.unit() * 2 - 1) * configuration.connectionIntervalJitter
        let milliseconds = min(30, max(7.5, base * (1 + jitter)))
        device.stats.connectionIntervalMilliseconds = min(30, max(7.5, base))
        return .microseconds(Int64(milliseconds * 1000))
    }

    /// Moves the board's clock to now and queues what it produced.
    func advanceBoard(_ device: SimulatedDevice) {
        let produced = device.model.advance(to: nanosecondsSinceStart(clock.now))
        guard device.connected else { return }
        for notification in produced {
            device.account(notification.bytes)
            enqueue(device, notification.bytes)
        }
        device.stats.withheldByStall = device.model.droppedNotifications
    }

    func enqueue(_ device: SimulatedDevice, _ bytes: [UInt8]) {
        if device.dropFraction > 0, device.random.unit() < device.dropFraction {
            device.stats.droppedByFault += 1
            return
        }
        if configuration.rateCap != nil, device.linkQueue.count >= configuration.linkQueueLimit {
            device.stats.droppedByRateCap += 1
            return
        }
        device.linkQueue.append(bytes)
    }

    /// One connection event: release what the link allows. Returns the time to the next
    /// event, or nil when this link is over.
    func connectionEvent(_ index: Int, _ generation: Int) -> Duration? {
        guard let device = try? device(index), device.connected, generation == device.linkGeneration, let connectedAt = device.connectedAt else { return nil }
        let now = clock.now
        advanceBoard(device)
        if let held = device.deliveryHeldUntil {
            guard now >= held else { return nextInterval(device) }
            device.deliveryHeldUntil = nil
            device.heldBacklog = device.linkQueue.count
        }
        var allowed = device.linkQueue.count
        // A delay's backlog goes out as fast as the link carries, not in one burst that the
        // AcquireNotify socket could not take.
        if device.heldBacklog > 0 { allowed = min(allowed, Self.heldBacklogPerEvent) }
        if let cap = configuration.rateCap {
            let elapsed = device.lastEvent.map { now - $0 } ?? .zero
            let (seconds, attoseconds) = elapsed.components
            let elapsedSeconds = Double(seconds) + Double(attoseconds) / 1e18
            // A burst may use at most one event's worth plus one notification.
            let ceiling = Double(cap) * 0.03 + 1
            device.tokens = min(ceiling, device.tokens + Double(cap) * elapsedSeconds)
            allowed = min(allowed, Int(device.tokens))
            device.tokens -= Double(allowed)
        }
        device.lastEvent = now
        device.heldBacklog = max(0, device.heldBacklog - allowed)
        let interval = nextInterval(device)
        if allowed > 0 {
            let batch = device.linkQueue.prefix(allowed)
            device.linkQueue.removeFirst(allowed)
            for bytes in batch { deliver(device, bytes) }
            let (seconds, attoseconds) = (now - connectedAt).components
            device.releases.append(LinkRelease(nanoseconds: UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000),
                                               count: allowed,
                                               plannedIntervalMilliseconds: Double(interval.components.seconds) * 1000
                                                   + Double(interval.components.attoseconds) / 1e15))
            if device.releases.count > 4096 { device.releases.removeFirst(device.releases.count - 4096) }
        }
        return interval
    }

    /// Sends one notification to every armed subscriber.
    func deliver(_ device: SimulatedDevice, _ bytes: [UInt8]) {
        var reached = false
        if !device.notifySessions.isEmpty {
            let path = device.notifyCharacteristicPath
            // Every notification is signalled, even with repeated bytes (bluez-dbus.md §1.6 item 2),
            // and once per StartNotify client, back to back: bluetoothd 5.66 registers each
            // client's session with its GATT client separately and each one's callback emits
            // the value (src/gatt-client.c notify_cb), so every subscriber receives N copies.
            update(path, Self.characteristicInterface, ["Value": .array(element: .byte, bytes.map { .byte($0) })],
                   copies: device.notifySessions.count)
            reached = true
        }
        if let pipe = device.notifyPipe {
            switch pipe.send(bytes) {
            case .sent: reached = true
            case .full: device.stats.droppedByRateCap += 1
            case .closed: releaseNotifyPipe(device)
            }
        }
        if reached {
            device.stats.notificationsDelivered += 1
            let model = device.model
            device.delivered.record(bytes) { sensor in
                let next = model.state(sensor).nextSampleIndex
                return next > 0 ? next - 1 : nil
            }
        } else {
            device.stats.undeliveredNoSubscriber += 1
        }
    }

    // MARK: Faults

    /// Runs one scheduled fault.
    func apply(_ step: FaultPlan.Step) async {
        do {
            switch step.kind {
            case .linkDrop: try dropLink(step.board)
            case .stall: try stall(step.board, seconds: step.seconds)
            case .refuseConnect: try refuseNextConnect(step.board, error: step.error)
            case .vanish: try vanishDevice(step.board)
            case .restartBluetoothd: try await restartBluetoothd()
            case .powerCycle: await powerCycleAdapter()
            case .dropNotifications: try dropNotifications(step.board, fraction: step.fraction)
            case .pressButton: try pressButton(step.board)
            case .boardReset: try resetBoard(step.board)
            }
        } catch {
            log("mwsim: fault \(step.kind.rawValue) failed: \(error)")
        }
    }

    /// Notifications a connection event hands on from a delay's backlog (about 4,000/s at the
    /// fastest connection interval, 40 times a 100 Hz stream).
    static let heldBacklogPerEvent = 32

    /// bluetoothd hands on nothing from board `index` for `seconds`, replies and samples alike,
    /// then everything it held, in order: late, nothing lost (a loaded host, a second notify
    /// client: the real-BlueZ VM's startnotify group). The board streams, answers and logs on.
    public func delay(_ index: Int, seconds: Double) throws {
        let device = try device(index)
        guard seconds > 0, seconds.isFinite else { throw DBusError(name: DBusError.Name.invalidArgs, message: "delay needs seconds > 0") }
        log("mwsim: fault delay board \(index) for \(seconds) s")
        device.deliveryHeldUntil = clock.now + .milliseconds(Int64(seconds * 1000))
    }

    /// The board withholds stream notifications for `seconds` (samples still advance).
    public func stall(_ index: Int, seconds: Double) throws {
        let device = try device(index)
        guard seconds > 0, seconds.isFinite else { throw DBusError(name: DBusError.Name.invalidArgs, message: "stall needs seconds > 0") }
        log("mwsim: fault stall board \(index) for \(seconds) s")
        advanceBoard(device)
        device.model.faults.streamStalled = true
        // A new stall replaces the one running: the old one's end finds a newer generation.
        device.stallGeneration += 1
        let generation = device.stallGeneration
        spawn("the end of board \(index)'s stall") { [self] in
            try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000)))
            guard !Task.isCancelled else { return }
            await endStall(index, generation)
        }
    }

    func endStall(_ index: Int, _ generation: Int) {
        guard let device = try? device(index), generation == device.stallGeneration else { return }
        advanceBoard(device)
        device.model.faults.streamStalled = false
        device.stats.withheldByStall = device.model.droppedNotifications
    }

    /// The next Connect fails with `error` (a reason for org.bluez.Error.Failed, or a full
    /// error name).
    public func refuseNextConnect(_ index: Int, error: String) throws {
        let device = try device(index)
        log("mwsim: fault refuse-connect board \(index): \(error)")
        device.refuseNextConnect = error.isEmpty ? "le-connection-abort-by-local" : error
    }

    /// Drops `fraction` of the board's notifications on the link (seeded, so repeatable).
    public func dropNotifications(_ index: Int, fraction: Double) throws {
        let device = try device(index)
        guard (0...1).contains(fraction) else { throw DBusError(name: DBusError.Name.invalidArgs, message: "fraction must be within 0…1") }
        log("mwsim: fault drop-notifications board \(index) fraction \(fraction)")
        device.dropFraction = fraction
    }

    /// Paces board `index`'s flash-log readouts at `notificationsPerSecond` from now on, the
    /// readout under way too (benchmarks: a board that reads out faster than the central takes
    /// the entries measures the central, not the simulated link).
    public func setReadoutRate(_ index: Int, notificationsPerSecond: Int) throws {
        let device = try device(index)
        guard (1...10_000).contains(notificationsPerSecond) else {
            throw DBusError(name: DBusError.Name.invalidArgs,
                            message: "readout rate \(notificationsPerSecond) must be within 1…10000 notifications/s")
        }
        log("mwsim: board \(index) reads its flash log out at \(notificationsPerSecond) notifications/s")
        advanceBoard(device)
        device.model.flashLog.readoutInterval = 1_000_000_000 / UInt64(notificationsPerSecond)
    }

    /// The board resets by itself: what it measured so far stays in its flash log, the link
    /// drops, and it advertises again (sensors off until a central starts them).
    public func resetBoard(_ index: Int) throws {
        let device = try device(index)
        log("mwsim: fault board-reset board \(index) \(device.address)")
        advanceBoard(device)
        device.model.resetItself()
        linkLost(device, reason: "board reset")
    }

    /// The user presses and releases the button (notifications only if `01 01 01` was sent).
    public func pressButton(_ index: Int) throws {
        let device = try device(index)
        log("mwsim: button pressed on board \(index)")
        advanceBoard(device)
        guard device.connected else { return }
        for bytes in device.model.pressButton() + device.model.releaseButton() {
            device.stats.notificationsEmitted += 1
            enqueue(device, bytes)
        }
    }

    // MARK: Observation

    /// Counters for board `index`.
    public func stats(_ index: Int) throws -> BoardStats {
        let device = try device(index)
        advanceBoard(device)
        let log = device.model.flashLog
        device.stats.flashEntriesStored = log.storedCount
        device.stats.flashEntriesRefused = log.refusedWhenFull
        device.stats.flashEntriesOverwritten = log.overwritten
        device.stats.resetUID = Int(device.model.resetUID)
        return device.stats
    }

    /// Every byte string the central wrote to board `index`, in order.
    public func commandLog(_ index: Int) throws -> [[UInt8]] { try device(index).model.commandLog }

    /// Board `index`'s flash log as of now (entries, triggers, counters).
    public func flashLog(_ index: Int) throws -> SimulatedFlashLog {
        let device = try device(index)
        advanceBoard(device)
        return device.model.flashLog
    }

    /// The runs of `sensor` samples board `index` handed to a subscriber, oldest first.
    public func deliveredRuns(_ index: Int, sensor: SimulatedSensorKind) throws -> [DeliveredRun] {
        try device(index).delivered.runs[sensor] ?? []
    }

    /// The runs of `sensor` samples board `index` measured (streamed, logged, or neither: while
    /// its link was down or stalled too), oldest first, timed on the wall clock like
    /// ``deliveredRuns(_:sensor:)``.
    public func measuredRuns(_ index: Int, sensor: SimulatedSensorKind) throws -> [DeliveredRun] {
        let device = try device(index)
        advanceBoard(device)
        return (device.model.measured.runs[sensor] ?? []).map {
            DeliveredRun(first: $0.first, last: $0.last, firstMicroseconds: epochWallMicroseconds + $0.firstNanoseconds / 1_000,
                         lastMicroseconds: epochWallMicroseconds + $0.lastNanoseconds / 1_000)
        }
    }

    /// Connection events of the current link that released notifications.
    public func linkReleases(_ index: Int) throws -> [LinkRelease] { try device(index).releases }

    /// Board `index`'s Device1 path and address.
    public func boardInfo(_ index: Int) throws -> (path: DBusObjectPath, address: String) {
        let device = try device(index)
        return (device.path, device.address)
    }
}
