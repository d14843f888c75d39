import Basics
import DBus

/// A change seen on BlueZ, fanned out to every subscriber of ``BlueZClient/changes(for:backlogLimit:)``.
public enum BlueZChange: Hashable, Sendable {
    /// `org.bluez` got (true) or lost (false) an owner.
    case serviceAvailable(Bool)
    /// An object or property changed (the mirror is already updated when this arrives).
    case object(DBusObjectManagerClient.Event)
    /// This reader fell behind: changes after this point, until it took this, were left out
    /// (``BlueZChanges``). The mirror holds their result: re-read what you follow.
    case missedChanges
}

/// A typed client of `org.bluez` on one D-Bus connection: a live mirror of BlueZ's objects
/// (subscribed before the snapshot, re-taken after a bluetoothd restart), adapter power,
/// shared discovery, device connect/disconnect and GATT lookups by UUID.
///
/// GATT I/O (writes, notifications) runs on a ``GattLink``, which opens a fresh D-Bus
/// connection per BLE session as the reference advises (§1.6.1).
///
/// Changes flow while ``run()`` runs: following bluetoothd and the mirror, and every follow-up
/// call, are child tasks of it, ended by ``close()``.
public actor BlueZClient {
    /// The connection used for observation and device calls.
    public nonisolated let connection: DBusConnection
    /// Bus address for fresh per-link connections (nil: the system bus).
    public nonisolated let busAddress: String?
    /// Timeout of ordinary calls.
    public let callTimeout: Duration
    /// Service UUIDs put in the discovery filter.
    public let discoveryUUIDs: [String]

    private let mirror: DBusObjectManagerClient
    private var serviceAvailable = false
    private var subscribers: [Int: CoalescingBacklog<BlueZChange>] = [:]
    private let lapseContinuation: AsyncStream<BlueZChangesLapse>.Continuation
    private var nextSubscriber = 0
    private let work = ChildTaskQueue()
    /// `org.bluez`'s owner changes, subscribed before the mirror's snapshot; read by ``run()``.
    private var owners: AsyncThrowingStream<DBusNameOwnerChanged, any Error>?
    /// Who currently wants discovery (board sessions, auto-discovery).
    private var scanRequesters: Set<String> = []
    /// The adapter on which this connection's discovery session runs, if any.
    private var scanningAdapter: DBusObjectPath?
    private var started = false

    /// Readers of ``changes(for:backlogLimit:)`` falling behind and catching up, for the
    /// journal and the status (the newest 64 when nobody reads them). Ends at ``close()``.
    public nonisolated let lapses: AsyncStream<BlueZChangesLapse>

    /// How many changes may wait unread for one reader of ``changes(for:backlogLimit:)``: a
    /// board's transport reads each at once (a mirror read), so even a burst of discovery's
    /// RSSI updates for a crowded room stays far below it, and each waiting change is small.
    public static let changesBacklogLimit = 1024

    /// Opens a connection to `busAddress` (nil: the system bus, honouring
    /// `DBUS_SYSTEM_BUS_ADDRESS`) and takes the mirror's snapshot; ``run()`` follows BlueZ from
    /// then on. BlueZ need not be running yet.
    public static func open(busAddress: String? = nil, callTimeout: Duration = .seconds(25),
                            discoveryUUIDs: [String]) async throws -> BlueZClient {
        let connection = try await openConnection(busAddress)
        let client = BlueZClient(connection: connection, busAddress: busAddress, callTimeout: callTimeout,
                                 discoveryUUIDs: discoveryUUIDs)
        try await client.start()
        return client
    }

    /// A new connection to `busAddress`, or the system bus when nil.
    static func openConnection(_ busAddress: String?) async throws -> DBusConnection {
        if let busAddress { return try await DBusConnection(address: busAddress) }
        return try await DBusConnection.system()
    }

    init(connection: DBusConnection, busAddress: String?, callTimeout: Duration, discoveryUUIDs: [String]) {
        self.connection = connection
        self.busAddress = busAddress
        self.callTimeout = callTimeout
        self.discoveryUUIDs = discoveryUUIDs.map { $0.lowercased() }
        // Only adapter, device and battery (Battery1) properties are state; characteristic
        // values (every StartNotify notification) are not routed to this connection at all.
        let (lapses, lapseContinuation) = AsyncStream.makeStream(of: BlueZChangesLapse.self, bufferingPolicy: .bufferingNewest(64))
        (self.lapses, self.lapseContinuation) = (lapses, lapseContinuation)
        let limit = DBusObjectManagerClient.eventBacklogLimit
        mirror = DBusObjectManagerClient(connection: connection, service: BlueZNames.service, timeout: callTimeout,
                                         followedInterfaces: [BlueZNames.adapter, BlueZNames.device, BlueZNames.battery]) { leftOut in
            lapseContinuation.yield(BlueZChangesLapse(subscriber: "the BlueZ client's mirror", limit: limit, leftOut: leftOut))
        }
    }

    private func start() async throws {
        guard !started else { return }
        started = true
        // Owner changes first, then the mirror (which itself subscribes before its snapshot).
        owners = try await connection.nameOwnerChanged(name: BlueZNames.service)
        do {
            try await mirror.start()
        } catch let error as DBusError where BlueZErrorClass(error) == .noReply {
            // BlueZ is not on the bus yet; the mirror stays subscribed and snapshots when it comes.
        }
        serviceAvailable = try await connection.nameOwner(BlueZNames.service) != nil
    }

    /// Follows BlueZ (owner changes, the mirror's changes, discovery restarts) until
    /// ``close()`` or cancellation. Call once, beside whatever uses the client.
    public func run() async {
        if let owners {
            self.owners = nil
            work.spawn { [weak self] in
                do {
                    for try await change in owners { await self?.ownerChanged(!change.newOwner.isEmpty) }
                } catch {}
            }
        }
        let (mirror, events) = (mirror, mirror.events)
        work.spawn { await mirror.run() }
        work.spawn { [weak self] in
            // Events the mirror's reader left out (it fell behind) are every reader's to re-read.
            for await event in events { await self?.forward(event == .missedEvents ? .missedChanges : .object(event)) }
        }
        await work.run()
    }

    /// Stops mirroring, stops discovery, ends ``run()`` and closes the connection.
    public func close() async {
        // Not waited for: bluetoothd ends a client's discovery when the client leaves the bus
        // anyway, and its answer comes only once the controller stopped scanning.
        if let adapter = scanningAdapter {
            try? connection.send(.methodCall(destination: BlueZNames.service, path: adapter, interface: BlueZNames.adapter,
                                             member: "StopDiscovery"))
        }
        scanningAdapter = nil
        work.finish()
        await mirror.stop()
        for backlog in subscribers.values { backlog.finish() }
        subscribers.removeAll()
        lapseContinuation.finish()
        connection.close()
    }

    // MARK: Changes

    /// Every change from now on, in order, for `subscriber` (named in ``lapses``). At most
    /// `backlogLimit` wait unread; a reader that falls further behind gets one
    /// ``BlueZChange/missedChanges`` instead of the rest (``BlueZChanges``). The stream ends
    /// when the client closes.
    public func changes(for subscriber: String, backlogLimit: Int = BlueZClient.changesBacklogLimit) -> BlueZChanges {
        let lapses = lapseContinuation, limit = max(backlogLimit, 1)
        let backlog = CoalescingBacklog<BlueZChange>(limit: limit, mark: .missedChanges) { leftOut in
            lapses.yield(BlueZChangesLapse(subscriber: subscriber, limit: limit, leftOut: leftOut))
        }
        let id = nextSubscriber
        nextSubscriber += 1
        subscribers[id] = backlog
        let work = work
        backlog.onTermination { [weak self] in
            work.spawn { [weak self] in await self?.unsubscribe(id) }
        }
        return backlog.changes
    }

    private func unsubscribe(_ id: Int) { subscribers.removeValue(forKey: id)?.finish() }

    private func forward(_ change: BlueZChange) {
        for backlog in subscribers.values { backlog.offer(change) }
        if change == .missedChanges {
            // A Powered change or the scanning adapter's removal may be among the ones left out.
            work.spawn { [self] in await recheckDiscovery() }
        }
        if case .object(.propertiesChanged(_, BlueZNames.adapter, let changed, _)) = change,
           changed["Powered"] != nil
        {
            work.spawn { [self] in await resumeDiscoveryIfNeeded() }
        }
        if case .object(.interfacesAdded(_, let interfaces)) = change, interfaces[BlueZNames.adapter] != nil {
            // A new adapter may come first among the powered ones.
            work.spawn { [self] in await resumeDiscoveryIfNeeded() }
        }
        if case .object(.interfacesRemoved(let path, let interfaces)) = change, interfaces.contains(BlueZNames.adapter),
           path == scanningAdapter
        {
            scanningAdapter = nil
            work.spawn { [self] in await resumeDiscoveryIfNeeded() }
        }
    }

    private func recheckDiscovery() async {
        if let adapter = scanningAdapter, await !adapters().contains(where: { $0.path == adapter }) { scanningAdapter = nil }
        await resumeDiscoveryIfNeeded()
    }

    private func ownerChanged(_ available: Bool) async {
        serviceAvailable = available
        // A new bluetoothd knows nothing of our discovery session.
        scanningAdapter = nil
        forward(.serviceAvailable(available))
        if available {
            // Give the mirror its fresh snapshot before asking for discovery again.
            try? await mirror.refresh()
            await resumeDiscoveryIfNeeded()
        }
    }

    // MARK: Queries

    /// Whether `org.bluez` has an owner.
    public var isServiceAvailable: Bool { serviceAvailable }

    /// All adapters, sorted by path.
    public func adapters() async -> [AdapterInfo] {
        await mirror.objects.compactMap { $0.value.adapterInfo(at: $0.key) }.sorted { $0.path < $1.path }
    }

    /// The preferred adapter when present and powered, else the first powered adapter.
    public func poweredAdapter(preferring preferred: DBusObjectPath? = nil) async -> AdapterInfo? {
        let all = await adapters()
        if let preferred, let match = all.first(where: { $0.path == preferred }) { return match.powered ? match : nil }
        return all.first { $0.powered }
    }

    /// All devices, sorted by path.
    public func devices() async -> [DeviceInfo] {
        await mirror.objects.compactMap { $0.value.deviceInfo(at: $0.key) }.sorted { $0.path < $1.path }
    }

    /// The device with `address`, on `adapter` when given.
    public func device(_ address: BluetoothAddress, on adapter: DBusObjectPath? = nil) async -> DeviceInfo? {
        await devices().first { $0.address == address && (adapter == nil || $0.adapter == adapter || $0.path.isDescendant(of: adapter ?? .root)) }
    }

    /// Everything a board session tracks about `address`, in one consistent read.
    public func facts(for address: BluetoothAddress, preferredAdapter: DBusObjectPath? = nil) async -> DeviceFacts {
        let adapter = await poweredAdapter(preferring: preferredAdapter)
        let device = if let adapter { await device(address, on: adapter.path) } else { DeviceInfo?.none }
        return DeviceFacts(blueZAvailable: serviceAvailable, adapter: adapter?.path, adapterPowered: adapter?.powered ?? false,
                           device: device?.path, connected: device?.connected ?? false,
                           servicesResolved: device?.servicesResolved ?? false)
    }

    /// The characteristic with `uuid` below `device` (any service), found by UUID as the
    /// reference requires (handles change with firmware).
    public func characteristic(_ uuid: String, under device: DBusObjectPath) async -> GattCharacteristicInfo? {
        let wanted = uuid.lowercased()
        return await mirror.objects
            .filter { $0.key.isDescendant(of: device, includingSelf: false) }
            .compactMap { $0.value.characteristicInfo(at: $0.key) }
            .sorted { $0.path < $1.path }
            .first { $0.uuid == wanted }
    }

    // MARK: Adapter

    /// Sets `Adapter1.Powered`.
    public func setPowered(_ powered: Bool, adapter: DBusObjectPath) async throws {
        _ = try await connection.call(destination: BlueZNames.service, path: adapter,
                                      interface: DBusStandardInterface.properties, member: "Set",
                                      arguments: [.string(BlueZNames.adapter), .string("Powered"), .variant(.boolean(powered))],
                                      timeout: callTimeout)
    }

    /// Adds or removes `requester` from the discovery users. Discovery (LE, not filtered by
    /// UUID) runs while anybody wants it, on the first powered adapter (as ``facts(for:preferredAdapter:)``
    /// reads it, moving when another one comes first), and is restarted after bluetoothd or
    /// the adapter came back. Idempotent per requester.
    public func setScanning(_ wanted: Bool, requester: String) async {
        if wanted { scanRequesters.insert(requester) } else { scanRequesters.remove(requester) }
        await resumeDiscoveryIfNeeded()
    }

    private func resumeDiscoveryIfNeeded() async {
        if scanRequesters.isEmpty {
            guard let adapter = scanningAdapter else { return }
            scanningAdapter = nil
            do {
                _ = try await connection.call(destination: BlueZNames.service, path: adapter, interface: BlueZNames.adapter,
                                              member: "StopDiscovery", timeout: callTimeout)
            } catch {
                // NotReady or "No discovery started": nothing to stop.
            }
            return
        }
        if let scanning = scanningAdapter {
            // Sessions look for their board on the first powered adapter (``facts(for:preferredAdapter:)``).
            // After bluetoothd restarts, an adapter it powers itself can come up before that one
            // (the VM's hci3 before hci0): discovery started there found nothing the sessions
            // waited for until their scan restart, 30 s later. It moves to the one they read.
            guard serviceAvailable, let first = await poweredAdapter(), first.path != scanning,
                  scanningAdapter == scanning else { return }
            scanningAdapter = nil
            _ = try? await connection.call(destination: BlueZNames.service, path: scanning, interface: BlueZNames.adapter,
                                           member: "StopDiscovery", timeout: callTimeout)
        }
        guard scanningAdapter == nil, !scanRequesters.isEmpty, serviceAvailable, let adapter = await poweredAdapter() else { return }
        scanningAdapter = adapter.path
        do {
            // No UUIDs in the filter: BlueZ would then drop every advertisement that does not
            // list one, and some boards advertise without their service UUID (real-bluez-vm.md,
            // issue 18). Filters of all clients are merged anyway, so results are always
            // filtered here (`advertisements`, and each session by its address).
            let filter: [String: DBusValue] = [
                "Transport": .string("le"),
                "DuplicateData": .boolean(false),
            ]
            _ = try await connection.call(destination: BlueZNames.service, path: adapter.path, interface: BlueZNames.adapter,
                                          member: "SetDiscoveryFilter", arguments: [filter.dbusValue], timeout: callTimeout)
            // Moved to another adapter while the filter was set (its StopDiscovery here went
            // first): starting now would leave this adapter scanning for nobody.
            guard scanningAdapter == adapter.path else { return }
            _ = try await connection.call(destination: BlueZNames.service, path: adapter.path, interface: BlueZNames.adapter,
                                          member: "StartDiscovery", timeout: callTimeout)
        } catch let error as DBusError where BlueZErrorClass(error) == .inProgress {
            // "Operation already in progress": this connection already scans.
        } catch {
            // Unless a move to another adapter took over meanwhile.
            if scanningAdapter == adapter.path { scanningAdapter = nil }
        }
    }

    /// Whether discovery is running for this client.
    public var isScanning: Bool { scanningAdapter != nil }

    /// Advertisements of devices that offer one of ``discoveryUUIDs``, whose name starts with
    /// `namePrefix` or whose address is one of `addresses` (boards that advertise without a
    /// service UUID), starting with the devices already known; discovery runs while the
    /// stream is iterated.
    public func advertisements(namePrefix: String? = nil, addresses: Set<BluetoothAddress> = []) async -> AsyncStream<Advertisement> {
        let requester = "advertisements-\(nextSubscriber)"
        let subscription = nextSubscriber
        let changes = changes(for: "discovery (\(requester))")
        let known = await devices()
        let wanted = Set(discoveryUUIDs)
        let (stream, continuation) = AsyncStream.makeStream(of: Advertisement.self, bufferingPolicy: .bufferingNewest(1024))
        @Sendable func matches(_ device: DeviceInfo) -> Bool {
            !wanted.isDisjoint(with: device.uuids) || addresses.contains(device.address)
                || (namePrefix.map { device.name?.hasPrefix($0) ?? false } ?? false)
        }
        @Sendable func advertisement(_ device: DeviceInfo) -> Advertisement {
            Advertisement(address: device.address, name: device.name, rssi: device.rssi, devicePath: device.path, uuids: device.uuids)
        }
        for device in known where matches(device) { continuation.yield(advertisement(device)) }
        // A child of run(); it ends when the consumer goes (its subscription is finished then).
        work.spawn { [weak self] in
            for await change in changes {
                guard let self else { break }
                switch change {
                case .missedChanges:
                    // Fell behind: every device the left-out changes added or renamed is in
                    // the mirror, so all that match are announced again.
                    for device in await self.devices() where matches(device) { continuation.yield(advertisement(device)) }
                case .object(.interfacesAdded(let path, let interfaces)) where interfaces[BlueZNames.device] != nil:
                    if let device = await self.deviceInfo(at: path), matches(device) { continuation.yield(advertisement(device)) }
                case .object(.propertiesChanged(let path, BlueZNames.device, let changed, _))
                    where changed["RSSI"] != nil || changed["Name"] != nil || changed["UUIDs"] != nil:
                    if let device = await self.deviceInfo(at: path), matches(device) { continuation.yield(advertisement(device)) }
                default:
                    break
                }
            }
            continuation.finish()
        }
        let work = work
        continuation.onTermination = { [weak self] _ in
            work.spawn { [weak self] in
                await self?.unsubscribe(subscription)
                await self?.setScanning(false, requester: requester)
            }
        }
        await setScanning(true, requester: requester)
        return stream
    }

    private func deviceInfo(at path: DBusObjectPath) async -> DeviceInfo? {
        await mirror.object(at: path)?.deviceInfo(at: path)
    }

    /// The device at `path` as currently mirrored (with its Modalias and Battery1 reading).
    public func device(at path: DBusObjectPath) async -> DeviceInfo? {
        await deviceInfo(at: path)
    }

    // MARK: Device

    /// `Device1.Connect`, giving up after `timeout` (the caller then disconnects to cancel).
    public func connect(_ device: DBusObjectPath, timeout: Duration) async throws {
        _ = try await connection.call(destination: BlueZNames.service, path: device, interface: BlueZNames.device,
                                      member: "Connect", timeout: timeout)
    }

    /// `GattCharacteristic1.WriteValue` with `type=command` on this client's own connection,
    /// for the few writes made without a ``GattLink`` (a stop while the link is being opened):
    /// sent in order, asking for no answer (see ``GattLink/sendCommandsInOrder(_:to:)``); the
    /// calls sent after them on this connection (the stop's `Disconnect`) are handled after them.
    public func sendCommandsInOrder(_ values: [[UInt8]], to characteristic: DBusObjectPath) throws {
        for value in values { try connection.send(Self.writeCommandMessage(value, to: characteristic)) }
    }

    /// `GattCharacteristic1.WriteValue(bytes, {type: command})`: write without response.
    static func writeCommandMessage(_ bytes: [UInt8], to characteristic: DBusObjectPath) -> DBusMessage {
        let options: [String: DBusValue] = ["type": .string("command")]
        return .methodCall(destination: BlueZNames.service, path: characteristic, interface: BlueZNames.gattCharacteristic,
                           member: "WriteValue", body: [.array(element: .byte, bytes.map { .byte($0) }), options.dbusValue])
    }

    /// `Device1.Disconnect`; also cancels a pending `Connect`.
    public func disconnect(_ device: DBusObjectPath, timeout: Duration? = nil) async throws {
        _ = try await connection.call(destination: BlueZNames.service, path: device, interface: BlueZNames.device,
                                      member: "Disconnect", timeout: timeout ?? callTimeout)
    }

    /// `Device1.Disconnect` without waiting for its answer (a stop's): bluetoothd carries it
    /// out whether or not anyone waits, and answers only once the link is down, which 5.66
    /// brings about for an LE link from a 2 s timer (`src/device.c` `DISCONNECT_TIMER`)
    /// unless the board ends the link first. Calls sent after it on this connection are still
    /// handled after it.
    public func requestDisconnect(_ device: DBusObjectPath) {
        try? connection.send(Self.disconnectMessage(device))
    }

    /// `Device1.Disconnect()` of `device`.
    static func disconnectMessage(_ device: DBusObjectPath) -> DBusMessage {
        .methodCall(destination: BlueZNames.service, path: device, interface: BlueZNames.device, member: "Disconnect")
    }

    /// `Adapter1.RemoveDevice`: deletes the device object and its cached GATT data.
    public func removeDevice(_ device: DBusObjectPath, adapter: DBusObjectPath) async throws {
        _ = try await connection.call(destination: BlueZNames.service, path: adapter, interface: BlueZNames.adapter,
                                      member: "RemoveDevice", arguments: [.objectPath(device)], timeout: callTimeout)
    }

    /// Waits until `ServicesResolved` is true, failing as soon as the link drops or the device
    /// object is removed (reference §2.3 step 7), or after `timeout`.
    public func waitForServicesResolved(_ device: DBusObjectPath, timeout: Duration) async throws {
        let changes = changes(for: "the wait for \(device)'s services")
        if let info = await deviceInfo(at: device) {
            if info.servicesResolved { return }
        } else {
            throw DBusError(name: DBusError.Name.unknownObject, message: "device \(device) is gone")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await change in changes {
                    switch change {
                    case .object(.propertiesChanged(device, BlueZNames.device, let changed, _)):
                        if (try? changed["ServicesResolved"]?.as(Bool.self)) == true { return }
                        if (try? changed["Connected"]?.as(Bool.self)) == false {
                            throw DBusError(name: "org.bluez.Error.NotConnected", message: "link lost during service discovery")
                        }
                    case .object(.interfacesRemoved(device, let interfaces)) where interfaces.contains(BlueZNames.device):
                        throw DBusError(name: DBusError.Name.unknownObject, message: "device \(device) was removed")
                    case .serviceAvailable(false):
                        throw DBusError(name: DBusError.Name.serviceUnknown, message: "org.bluez left the bus")
                    case .missedChanges:
                        // The changes left out are in the mirror: read their result.
                        guard await self.isServiceAvailable else {
                            throw DBusError(name: DBusError.Name.serviceUnknown, message: "org.bluez left the bus")
                        }
                        guard let info = await self.deviceInfo(at: device) else {
                            throw DBusError(name: DBusError.Name.unknownObject, message: "device \(device) was removed")
                        }
                        if info.servicesResolved { return }
                        if !info.connected {
                            throw DBusError(name: "org.bluez.Error.NotConnected", message: "link lost during service discovery")
                        }
                    default:
                        break
                    }
                }
                throw CancellationError()
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw DBusError(name: DBusError.Name.timeout, message: "services of \(device) not resolved within \(timeout)")
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }
}
