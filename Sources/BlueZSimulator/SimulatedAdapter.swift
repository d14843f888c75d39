import DBus
import MetaWearBoardModel

/// A client's SetDiscoveryFilter, checked like `src/adapter.c` `parse_*`.
struct DiscoveryFilter: Sendable, Hashable {
    var uuids: [String] = []
    var rssi: Int16?
    var pathloss: UInt16?
    var transport = "auto"
    var duplicateData = false
    var discoverable = false
    var pattern = ""

    init() {}

    init(_ entries: [String: DBusValue]) throws(DBusError) {
        for (key, wrapped) in entries {
            let value = wrapped.unwrappingVariants
            switch (key, value) {
            case ("UUIDs", .array(element: .string, let items)):
                uuids = items.compactMap { if case .string(let text) = $0 { text.lowercased() } else { nil } }
            case ("RSSI", .int16(let threshold)): rssi = threshold
            case ("Pathloss", .uint16(let loss)): pathloss = loss
            case ("Transport", .string(let text)) where ["auto", "bredr", "le"].contains(text): transport = text
            case ("DuplicateData", .boolean(let flag)): duplicateData = flag
            case ("Discoverable", .boolean(let flag)): discoverable = flag
            case ("Pattern", .string(let text)): pattern = text
            default:
                throw BlueZError.invalidArguments()
            }
        }
        // BlueZ rejects RSSI and Pathloss together.
        if rssi != nil && pathloss != nil { throw BlueZError.invalidArguments() }
    }

    func accepts(address: String, name: String, rssi deviceRSSI: Int16, advertisedUUIDs: [String]) -> Bool {
        if transport == "bredr" { return false }
        if !uuids.isEmpty && !advertisedUUIDs.contains(where: uuids.contains) { return false }
        if let rssi, deviceRSSI < rssi { return false }
        if !pattern.isEmpty && !address.hasPrefix(pattern) && !name.hasPrefix(pattern) { return false }
        return true
    }
}

extension BlueZSimulator {
    // MARK: Adapter object

    func exportAdapter() async throws {
        let path = Self.adapterPath
        let address = configuration.adapterAddress
        let interface = storedInterface(Self.adapterInterface, path: path, values: [
            ("Address", .string(address)),
            ("AddressType", .string("public")),
            ("Name", .string("mwsim")),
            ("Alias", .string("mwsim")),
            ("Class", .uint32(0x7C0104)),
            ("Connectable", .boolean(true)),
            ("Powered", .boolean(powered)),
            ("PowerState", .string(powered ? "on" : "off")),
            ("Discoverable", .boolean(false)),
            ("DiscoverableTimeout", .uint32(180)),
            ("Pairable", .boolean(false)),
            ("PairableTimeout", .uint32(0)),
            ("Discovering", .boolean(false)),
            ("UUIDs", .array(element: .string, [0x1800, 0x1801, 0x110E, 0x110C].map { .string(GATTLayout.uuid16($0)) })),
            ("Modalias", .string("usb:v1D6Bp0246d0542")),
            ("Roles", .array(element: .string, ["central", "peripheral"].map { .string($0) })),
            ("ExperimentalFeatures", .array(element: .string, [])),
        ], writable: ["Alias", "Connectable", "Powered", "Discoverable", "DiscoverableTimeout", "Pairable", "PairableTimeout"],
        methods: [
            method("StartDiscovery") { simulator, call in try await simulator.startDiscovery(sender: call.sender); return [] },
            method("StopDiscovery") { simulator, call in try await simulator.stopDiscovery(sender: call.sender); return [] },
            method("SetDiscoveryFilter", in: [.dictionary(key: .string, value: .variant)], inNames: ["properties"]) { simulator, call in
                let entries = try call.decode([String: DBusValue].self)
                try await simulator.setDiscoveryFilter(sender: call.sender, entries)
                return []
            },
            method("GetDiscoveryFilters", out: [.array(.string)], outNames: ["filters"]) { _, _ in
                [.array(element: .string, ["UUIDs", "RSSI", "Pathloss", "Transport", "DuplicateData", "Discoverable", "Pattern"].map { .string($0) })]
            },
            method("RemoveDevice", in: [.objectPath], inNames: ["device"]) { simulator, call in
                try await simulator.removeDevice(at: try call.decode(DBusObjectPath.self))
                return []
            },
        ])
        try await bluez?.export(DBusExportedObject(interface), at: path)
    }

    // MARK: Power

    /// Powers the adapter on or off. Off drops every link and ends discovery, like BlueZ.
    func setPowered(_ on: Bool, announcePowered: Bool = true) async {
        guard on != powered else { return }
        if !on {
            update(Self.adapterPath, Self.adapterInterface, ["PowerState": .string("on-disabling")])
            for device in devices where device.connected || device.connecting { linkLost(device, reason: "adapter powered off") }
            discoverySessions = [:]
            stopScanning()
        } else {
            update(Self.adapterPath, Self.adapterInterface, ["PowerState": .string("off-enabling")])
        }
        powered = on
        var changes: [String: DBusValue] = ["PowerState": .string(on ? "on" : "off")]
        if announcePowered { changes["Powered"] = .boolean(on) } else { properties[Self.adapterPath]?[Self.adapterInterface]?["Powered"] = .boolean(on) }
        update(Self.adapterPath, Self.adapterInterface, changes)
    }

    /// Adapter off, then on after half a second.
    public func powerCycleAdapter() async {
        log("mwsim: fault power-cycle adapter")
        await setPowered(false)
        try? await Task.sleep(for: .milliseconds(500))
        await setPowered(true)
    }

    // MARK: Discovery

    func setDiscoveryFilter(sender: String, _ entries: [String: DBusValue]) throws {
        guard powered else { throw BlueZError.notReady() }
        let filter = try DiscoveryFilter(entries)
        discoveryFilters[sender] = entries.isEmpty ? nil : filter
        if discoverySessions[sender] != nil { discoverySessions[sender] = filter }
    }

    func startDiscovery(sender: String) throws {
        guard powered else { throw BlueZError.notReady() }
        guard discoverySessions[sender] == nil else { throw BlueZError.busy() }
        discoverySessions[sender] = discoveryFilters[sender] ?? DiscoveryFilter()
        guard !scanning else { return }
        scanning = true
        scanGeneration += 1
        update(Self.adapterPath, Self.adapterInterface, ["Discovering": .boolean(true)])
        let generation = scanGeneration
        spawn("scanning") { [self, configuration] in
            try? await Task.sleep(for: configuration.discoveryDelay)
            while !Task.isCancelled {
                guard await scanTick(generation) else { return }
                try? await Task.sleep(for: configuration.rssiInterval)
            }
        }
    }

    func stopDiscovery(sender: String) throws {
        guard powered else { throw BlueZError.notReady() }
        guard discoverySessions.removeValue(forKey: sender) != nil else { throw BlueZError.failed("No discovery started") }
        if discoverySessions.isEmpty { stopScanning() }
    }

    func stopScanning() {
        // The scan's next round finds a newer generation and ends.
        scanning = false
        scanGeneration += 1
        guard properties[Self.adapterPath] != nil else { return }
        if case .boolean(true)? = properties[Self.adapterPath]?[Self.adapterInterface]?["Discovering"] {
            update(Self.adapterPath, Self.adapterInterface, ["Discovering": .boolean(false)])
            // BlueZ invalidates RSSI when scanning stops (the value stays readable here).
            for device in devices where device.deviceExported && !device.connected {
                update(device.path, Self.deviceInterface, [:], invalidated: ["RSSI"])
            }
        }
    }

    func matchesAnyFilter(_ device: SimulatedDevice) -> Bool {
        discoverySessions.values.contains { $0.accepts(address: device.address, name: "MetaWear", rssi: device.rssi,
                                                   advertisedUUIDs: device.advertisedUUIDs) }
    }

    /// One advertising round: new boards appear, seen boards get a new RSSI.
    func scanTick(_ generation: Int) async -> Bool {
        guard generation == scanGeneration, !discoverySessions.isEmpty, powered, !stopped else { return false }
        for device in devices where !device.vanished {
            // A connected board does not advertise.
            guard !device.connected else { continue }
            let step = Int16(Int(random.next() % 7) - 3)
            device.rssi = max(-95, min(-35, device.rssi &+ step))
            guard matchesAnyFilter(device) else { continue }
            device.lastSeen = clock.now
            if device.deviceExported {
                update(device.path, Self.deviceInterface, ["RSSI": .int16(device.rssi)])
            } else {
                do { try await exportDevice(device) } catch { log("mwsim: cannot export \(device.path): \(error)") }
            }
        }
        return true
    }

    // MARK: Device objects

    func exportDevice(_ device: SimulatedDevice) async throws {
        guard let bluez else { return }
        device.deviceExported = true
        let index = device.index
        let daemon = daemonGeneration
        let mac = device.model.profile.macAddress
        let interface = storedInterface(Self.deviceInterface, path: device.path, values: [
            ("Address", .string(device.address)),
            ("AddressType", .string("random")),
            ("Name", .string("MetaWear")),
            ("Alias", .string("MetaWear")),
            ("Paired", .boolean(false)),
            ("Bonded", .boolean(false)),
            ("Trusted", .boolean(false)),
            ("Blocked", .boolean(false)),
            ("LegacyPairing", .boolean(false)),
            ("RSSI", .int16(device.rssi)),
            ("Connected", .boolean(device.connected)),
            ("UUIDs", .array(element: .string, (device.gattExported ? GATTLayout.resolvedUUIDs : device.advertisedUUIDs).map { .string($0) })),
            ("Adapter", .objectPath(Self.adapterPath)),
            ("ManufacturerData", .dictionary(key: .uint16, value: .variant, [
                DBusDictionaryEntry(key: .uint16(GATTLayout.mbientLabCompanyID),
                                    value: .variant(.array(element: .byte, mac.reversed().map { .byte($0) }))),
            ])),
            ("ServicesResolved", .boolean(false)),
            ("AdvertisingFlags", .array(element: .byte, [.byte(0x06)])),
            ("WakeAllowed", .boolean(false)),
        ] + (device.modaliasKnown ? device.modalias.map { [("Modalias", DBusValue.string($0))] } ?? [] : []),
        absent: device.modaliasKnown ? [] : [("Modalias", .string)], writable: ["Alias", "Trusted", "Blocked", "WakeAllowed"], methods: [
            // bluetoothd answers these once the link is up or gone, its loop on to the next call.
            answeringMethod("Connect") { simulator, _ in .later { try await simulator.connect(index, daemon: daemon); return [] } },
            answeringMethod("Disconnect") { simulator, _ in .later { try await simulator.disconnect(index); return [] } },
            method("Pair") { _, _ in throw DBusError(name: "org.bluez.Error.AuthenticationFailed", message: "Authentication Failed") },
            method("CancelPairing") { _, _ in throw BlueZError.doesNotExist() },
            method("ConnectProfile", in: [.string], inNames: ["UUID"]) { _, _ in throw BlueZError.notSupported() },
            method("DisconnectProfile", in: [.string], inNames: ["UUID"]) { _, _ in throw BlueZError.notSupported() },
        ])
        try await bluez.export(DBusExportedObject(interface), at: device.path)
    }

    func removeDevice(at path: DBusObjectPath) throws {
        guard let device = devices.first(where: { $0.path == path && $0.deviceExported }) else { throw BlueZError.doesNotExist() }
        if device.connected || device.connecting { linkLost(device, reason: "device removed") }
        removeDevice(device)
    }

    /// Unexports the device and its GATT objects (InterfacesRemoved for each).
    func removeDevice(_ device: SimulatedDevice) {
        for path in device.gattPaths where properties[path] != nil {
            properties[path] = nil
            try? bluez?.unexport(path)
        }
        properties[device.path] = nil
        try? bluez?.unexport(device.path)
        device.deviceExported = false
        device.gattExported = false
        device.notifySessions = []
        device.pendingAcquireOwner = nil
        device.abandonedAcquire = false
        device.servicesResolved = false
        // A temporary device's Modalias goes with its object; a new object learns it again.
        device.modaliasKnown = false
        device.batteryInterfaceExported = false
    }

    /// The board leaves radio range: the link drops and the object is removed.
    public func vanishDevice(_ index: Int) throws {
        let device = try device(index)
        log("mwsim: fault vanish board \(index) \(device.address)")
        device.vanished = true
        if device.connected || device.connecting { linkLost(device, reason: "out of range") }
        if device.deviceExported { removeDevice(device) }
    }

    /// The board is back in range (advertises again).
    public func restoreDevice(_ index: Int) throws {
        let device = try device(index)
        device.vanished = false
    }
}
