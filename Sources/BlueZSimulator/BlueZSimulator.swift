import Basics
import DBus
import MetaWearBoardModel

/// BlueZ 5.66 as a GATT central sees it over D-Bus, with simulated MetaWear boards behind it.
///
/// Owns `org.bluez` on the configured bus, exports `/org/bluez/hci0` and one device per board,
/// runs discovery, connections, the GATT tree and streaming with BLE-like batching, and
/// serves the control interface `io.mwgate.Simulator1` (see ``SimulatorControlInterface``) on a
/// second connection so it survives a simulated bluetoothd restart.
///
/// It runs in a scope: ``withRunning(_:isolation:_:)`` (or ``run()``) owns everything it does
/// over time (scanning, housekeeping, each link's connection events, stall timers, scheduled
/// faults) as child tasks of one task group, and ends it all when the scope ends.
///
/// ```swift
/// try await BlueZSimulator.withRunning(SimulatorConfiguration(busAddress: bus, boards: 2)) { simulator in
///     // org.bluez is owned here; a central can discover and connect the boards.
/// }
/// ```
public actor BlueZSimulator {
    static let busName = "org.bluez"
    static let adapterInterface = "org.bluez.Adapter1"
    static let deviceInterface = "org.bluez.Device1"
    static let serviceInterface = "org.bluez.GattService1"
    static let characteristicInterface = "org.bluez.GattCharacteristic1"
    static let descriptorInterface = "org.bluez.GattDescriptor1"
    static let adapterPath: DBusObjectPath = "/org/bluez/hci0"
    /// ATT MTU negotiated on every simulated link.
    static let mtu: UInt16 = 247

    /// The configuration in use.
    public nonisolated let configuration: SimulatorConfiguration
    let clock = ContinuousClock()
    let epoch: ContinuousClock.Instant
    /// The wall clock (µs since the Unix epoch) at `epoch`, to give board times to other processes.
    let epochWallMicroseconds: UInt64

    var bluez: DBusConnection?
    var control: DBusConnection?
    /// Work that outlives the call that starts it (a link's timeline, a scan, a stall's end):
    /// child tasks of the running scope (see ``spawn(_:_:)``).
    let work = ChildTaskQueue()
    /// Whether ``run()`` or ``withRunning(_:isolation:_:)`` has taken this simulator (once only).
    var started = false
    var devices: [SimulatedDevice] = []
    /// Property values by path, interface and name: the single source for Get, GetAll,
    /// InterfacesAdded and PropertiesChanged.
    var properties: [DBusObjectPath: [String: [String: DBusValue]]] = [:]

    var powered = true
    var discoverySessions: [String: DiscoveryFilter] = [:]
    /// Filters set before StartDiscovery, by sender.
    var discoveryFilters: [String: DiscoveryFilter] = [:]
    /// An advertising scan runs (bluetoothd's discovery, shared by every session).
    var scanning = false
    /// Bumped when a scan ends (or bluetoothd "restarts"), so the old scan's rounds stop.
    var scanGeneration = 0
    /// Bumped when bluetoothd "restarts": what the bluetoothd before received and had not
    /// carried out dies with it (see ``connect(_:daemon:)``).
    var daemonGeneration = 0
    var random: SeededRandom
    var stopped = false
    /// How much later than at once bluetoothd handles each `WriteValue` (see
    /// ``setWriteValueDelay(_:)``).
    var writeValueDelay: Duration = .zero

    /// A simulator for `configuration`; nothing happens until ``run()``.
    public init(configuration: SimulatorConfiguration) {
        self.configuration = configuration
        let start = ContinuousClock.now
        epoch = start
        epochWallMicroseconds = DeliveredSampleLog.nowMicroseconds()
        random = SeededRandom(seed: configuration.seed, skipping: 1)
        devices = configuration.profiles.enumerated().map { index, profile in
            let device = SimulatedDevice(index: index, profile: profile, seed: configuration.seed, signal: configuration.signal,
                                         adapterPath: Self.adapterPath, now: start, flashCapacity: configuration.flashCapacity,
                                         readoutNotificationsPerSecond: configuration.readoutNotificationsPerSecond)
            device.deviceInformationHidden = configuration.deviceInformationHidden.contains(index)
            device.batteryPluginOff = configuration.batteryPluginOff
            device.advertisesServiceUUID = !configuration.advertisedWithoutServiceUUID.contains(index)
            return device
        }
    }

    /// From now on bluetoothd handles each `WriteValue` `delay` after it arrived, as a busy
    /// bluetoothd did in the real-BlueZ VM (its one main loop relaying streaming links on
    /// emulated CPUs, docs/bluez-vm.md): the calls behind a late one wait with it, so a client
    /// that waits for each write's answer before sending the next pays the delay once per write.
    public func setWriteValueDelay(_ delay: Duration) {
        writeValueDelay = delay
    }

    /// The unique bus name currently acting as bluetoothd.
    public var bluezUniqueName: String? { bluez?.uniqueName }

    // MARK: bluetoothd lifetime

    func startDaemon() async throws {
        let connection = try await DBusConnection(address: configuration.busAddress)
        connection.exportObjectManager(at: .root)
        bluez = connection
        // Its calls wait for the running scope (bounded) if it has not started yet.
        spawn("handling bluetoothd's calls") { try? await connection.serveCalls() }
        try await exportAdapter()
        guard try await connection.requestName(Self.busName) == .primaryOwner else {
            throw DBusError(name: DBusError.Name.failed, message: "org.bluez is already owned on this bus")
        }
    }

    /// bluetoothd exits (its name and objects vanish without InterfacesRemoved, as when the
    /// process dies) and starts again with only the adapter; boards must be rediscovered.
    public func restartBluetoothd() async throws {
        log("mwsim: fault restart-bluetoothd")
        daemonGeneration += 1
        for device in devices {
            tearDownLink(device, announce: false)
            device.deviceExported = false
            device.gattExported = false
            device.notifySessions = []
            device.pendingAcquireOwner = nil
            device.abandonedAcquire = false
            // Their calls end as the process does (the bus answers NoReply).
            device.releasedAcquireCallers = []
            device.modaliasKnown = false
            device.batteryInterfaceExported = false
        }
        scanning = false
        scanGeneration += 1
        discoverySessions = [:]
        discoveryFilters = [:]
        properties = [:]
        bluez?.close()
        bluez = nil
        try await Task.sleep(for: .milliseconds(300))
        guard !stopped else { return }
        try await startDaemon()
    }

    // MARK: Property store

    func property(_ path: DBusObjectPath, _ interface: String, _ name: String) throws -> DBusValue {
        guard let value = properties[path]?[interface]?[name] else {
            throw DBusError(name: DBusError.Name.unknownProperty, message: "\(interface).\(name) is not available at \(path)")
        }
        return value
    }

    /// Stores new values and announces them with PropertiesChanged.
    /// `copies` > 1 announces the change that many times back to back (see ``LinkScheduler``'s
    /// notifications: one signal per StartNotify client).
    func update(_ path: DBusObjectPath, _ interface: String, _ changes: [String: DBusValue], invalidated: [String] = [],
                copies: Int = 1) {
        for (name, value) in changes { properties[path, default: [:]][interface, default: [:]][name] = value }
        guard properties[path]?[interface] != nil else { return }
        try? bluez?.emitPropertiesChanged(path: path, interface: interface, changed: changes, invalidated: invalidated,
                                          copies: copies)
    }

    /// Builds an interface whose properties read from the store; `writable` names get a
    /// setter routed to ``setProperty(_:_:_:_:)``. `absent` properties are declared without a
    /// value: left out of GetAll until ``update(_:_:_:invalidated:copies:)`` gives them one.
    func storedInterface(_ name: String, path: DBusObjectPath, values: [(String, DBusValue)], absent: [(String, DBusType)] = [],
                         writable: Set<String> = [], methods: [DBusMethod] = [],
                         signals: [DBusSignalDescription] = []) -> DBusInterface {
        var store: [String: DBusValue] = [:]
        for (key, value) in values { store[key] = value }
        properties[path, default: [:]][name] = store
        var properties: [DBusProperty] = []
        for (key, type) in values.map({ ($0.0, $0.1.type) }) + absent {
            let getter: DBusProperty.Getter = { [weak self] in
                guard let self else { throw DBusError.disconnected() }
                return try await self.property(path, name, key)
            }
            var setter: DBusProperty.Setter?
            if writable.contains(key) {
                setter = { [weak self] newValue in try await self?.setProperty(path, name, key, newValue) }
            }
            properties.append(DBusProperty(key, type: type, get: getter, set: setter))
        }
        return DBusInterface(name, methods: methods, properties: properties, signals: signals)
    }

    /// Properties.Set for writable properties (the exporter checked the type and announces
    /// the new value itself after this returns).
    func setProperty(_ path: DBusObjectPath, _ interface: String, _ name: String, _ value: DBusValue) async throws {
        var stored = value
        switch (interface, name, value) {
        case (Self.adapterInterface, "Powered", .boolean(let on)):
            await setPowered(on, announcePowered: false)
        case (Self.adapterInterface, "Alias", .string(let alias)) where alias.isEmpty:
            stored = .string("mwsim")
        case (Self.deviceInterface, "Alias", .string(let alias)) where alias.isEmpty:
            stored = properties[path]?[interface]?["Name"] ?? .string("MetaWear")
        default:
            break
        }
        guard properties[path]?[interface] != nil else { throw DBusError(name: DBusError.Name.unknownObject, message: "\(path) is gone") }
        properties[path]?[interface]?[name] = stored
    }

    func method(_ name: String, in inSignature: DBusSignature = .empty, out outSignature: DBusSignature = .empty,
                inNames: [String] = [], outNames: [String] = [],
                _ body: @escaping @Sendable (BlueZSimulator, DBusMethodCall) async throws -> [DBusValue]) -> DBusMethod {
        answeringMethod(name, in: inSignature, out: outSignature, inNames: inNames, outNames: outNames) { simulator, call in
            .reply(try await body(simulator, call))
        }
    }

    // MARK: Helpers

    func device(_ index: Int) throws -> SimulatedDevice {
        guard devices.indices.contains(index) else {
            throw DBusError(name: DBusError.Name.invalidArgs, message: "no board \(index) (this simulator has \(devices.count))")
        }
        return devices[index]
    }

    func nanosecondsSinceStart(_ instant: ContinuousClock.Instant) -> UInt64 {
        let (seconds, attoseconds) = (instant - epoch).components
        return UInt64(max(0, seconds)) * 1_000_000_000 + UInt64(max(0, attoseconds) / 1_000_000_000)
    }

    nonisolated func log(_ line: String) { configuration.log(line) }

    /// A sender left the bus: BlueZ drops its discovery session, filter and notify sessions.
    func clientLeft(_ name: String) {
        discoveryFilters[name] = nil
        if discoverySessions.removeValue(forKey: name) != nil, discoverySessions.isEmpty { stopScanning() }
        for device in devices where device.notifySessions.remove(name) != nil {
            refreshNotifying(device)
        }
        for device in devices where device.notifyPipe != nil && device.notifyPipeOwner == name {
            // bluetoothd 5.66 frees the acquired notification's client here and uses it again
            // when it then handles the descriptor's hang-up: a use-after-free that kills
            // bluetoothd (fixed upstream after 5.66). Debian 12's bluetoothd crashes; we count.
            notifyTeardownRaces += 1
            log("mwsim: board \(device.index) client \(name) left the bus while its AcquireNotify channel was still held (bluetoothd 5.66 would crash here)")
            releaseNotifyPipe(device)
        }
        for device in devices { device.releasedAcquireCallers.remove(name) }
        for device in devices where device.pendingAcquireOwner == name {
            // 5.66 frees the caller's notify client (its disconnect watch) but keeps the
            // acquisition pointing at it: the notification is refused to every client from now
            // on, and the device object's removal uses the freed client (measured in the
            // real-BlueZ VM, docs/bluez-vm.md).
            abandonedAcquires += 1
            device.pendingAcquireOwner = nil
            device.abandonedAcquire = true
            log("mwsim: board \(device.index) client \(name) left the bus before its AcquireNotify was answered (bluetoothd 5.66 keeps the notify acquired for a freed client)")
        }
    }

    /// Clients that left the bus while their `AcquireNotify` waited for an answer: each one
    /// leaves Debian 12's bluetoothd 5.66 refusing that board's notifications to everyone
    /// until its device object goes, and that removal uses freed memory (see
    /// ``clientLeft(_:)``). A gateway gives such a call back with `StopNotify` first.
    public private(set) var abandonedAcquires = 0

    /// Clients that left the bus while bluetoothd still held their acquired notification:
    /// each one crashes Debian 12's bluetoothd 5.66 (see ``clientLeft(_:)``). A gateway must
    /// close the descriptor and wait for `NotifyAcquired` to turn false before it leaves.
    public private(set) var notifyTeardownRaces = 0

    /// Periodic work: temporary-device expiry and AcquireNotify peers that closed their fd.
    func housekeeping() async {
        while !Task.isCancelled && !stopped {
            // Held notify channels are watched closely: bluetoothd sees a hang-up at once.
            let watchingPipes = devices.contains { $0.notifyPipe != nil }
            try? await Task.sleep(for: min(watchingPipes ? .milliseconds(20) : .milliseconds(250), configuration.temporaryTimeout / 4))
            let now = clock.now
            for device in devices {
                if let pipe = device.notifyPipe, pipe.peerClosed { releaseNotifyPipe(device) }
                guard device.deviceExported, !device.connected, !device.connecting else { continue }
                let beingSeen = !device.vanished && !discoverySessions.isEmpty && matchesAnyFilter(device)
                if !beingSeen && now - device.lastSeen >= configuration.temporaryTimeout {
                    removeDevice(device)
                }
            }
        }
    }
}
