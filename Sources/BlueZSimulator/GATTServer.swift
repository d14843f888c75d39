import DBus
import MetaWearBoardModel

/// The GATT objects of a connected board and their methods (bluez-dbus.md §1.4).
extension BlueZSimulator {
    func exportGATT(_ device: SimulatedDevice) async throws {
        guard let bluez else { return }
        device.gattExported = true
        let index = device.index
        for service in device.exportedServices {
            let servicePath = device.servicePath(service)
            let serviceInterface = storedInterface(Self.serviceInterface, path: servicePath, values: [
                ("UUID", .string(service.uuid)),
                ("Device", .objectPath(device.path)),
                ("Primary", .boolean(true)),
                ("Includes", .array(element: .objectPath, [])),
                ("Handle", .uint16(service.handle)),
            ])
            try await bluez.export(DBusExportedObject(serviceInterface), at: servicePath)
            for characteristic in service.characteristics {
                let path = device.characteristicPath(service, characteristic)
                let notifies = characteristic.flags.contains("notify")
                var values: [(String, DBusValue)] = [
                    ("UUID", .string(characteristic.uuid)),
                    ("Service", .objectPath(servicePath)),
                    ("Value", .array(element: .byte, [])),
                    ("Flags", .array(element: .string, characteristic.flags.map { .string($0) })),
                    ("MTU", .uint16(Self.mtu)),
                    ("Handle", .uint16(characteristic.handle)),
                ]
                if notifies {
                    values.append(("Notifying", .boolean(false)))
                    values.append(("NotifyAcquired", .boolean(false)))
                }
                let role = characteristic.role
                var methods = [
                    method("ReadValue", in: [.dictionary(key: .string, value: .variant)], out: [.array(.byte)],
                           inNames: ["options"], outNames: ["value"]) { simulator, call in
                        let options = try call.decode([String: DBusValue].self)
                        let bytes = try await simulator.readValue(index, role, path: path, options: options)
                        return [.array(element: .byte, bytes.map { .byte($0) })]
                    },
                    answeringMethod("WriteValue", in: [.array(.byte), .dictionary(key: .string, value: .variant)],
                                    inNames: ["value", "options"]) { simulator, call in
                        let (bytes, options) = try call.decode([UInt8].self, [String: DBusValue].self)
                        return try await simulator.writeValue(index, role, bytes, options: options, received: call.received)
                    },
                ]
                if notifies {
                    methods += [
                        method("StartNotify") { simulator, call in
                            try await simulator.startNotify(index, role, sender: call.sender); return []
                        },
                        method("StopNotify") { simulator, call in
                            try await simulator.stopNotify(index, role, sender: call.sender); return []
                        },
                        answeringMethod("AcquireNotify", in: [.dictionary(key: .string, value: .variant)], out: [.unixFD, .uint16],
                                        inNames: ["options"], outNames: ["fd", "mtu"]) { simulator, call in
                            try await simulator.acquireNotify(index, role, sender: call.sender)
                        },
                    ]
                }
                let interface = storedInterface(Self.characteristicInterface, path: path, values: values, methods: methods)
                try await bluez.export(DBusExportedObject(interface), at: path)
                if let handle = characteristic.descriptorHandle {
                    let descriptorPath = device.descriptorPath(service, characteristic, handle)
                    let descriptor = storedInterface(Self.descriptorInterface, path: descriptorPath, values: [
                        ("UUID", .string(GATTLayout.clientConfiguration)),
                        ("Characteristic", .objectPath(path)),
                        ("Value", .array(element: .byte, [])),
                        ("Flags", .array(element: .string, ["read", "write"].map { .string($0) })),
                        ("Handle", .uint16(handle)),
                    ], methods: [
                        method("ReadValue", in: [.dictionary(key: .string, value: .variant)], out: [.array(.byte)],
                               inNames: ["options"], outNames: ["value"]) { simulator, _ in
                            let on = try await simulator.isNotifying(index, role)
                            return [.array(element: .byte, [.byte(on ? 1 : 0), .byte(0)])]
                        },
                        method("WriteValue", in: [.array(.byte), .dictionary(key: .string, value: .variant)],
                               inNames: ["value", "options"]) { _, _ in
                            // BlueZ owns the CCCD; clients must use StartNotify.
                            throw BlueZError.notPermitted("Write not permitted")
                        },
                    ])
                    try await bluez.export(DBusExportedObject(descriptor), at: descriptorPath)
                }
            }
        }
    }

    // MARK: Characteristic methods

    func readValue(_ index: Int, _ role: GATTLayout.Role, path: DBusObjectPath, options: [String: DBusValue]) throws -> [UInt8] {
        let device = try device(index)
        guard device.connected else { throw BlueZError.failed("Not connected") }
        var offset = 0
        if let raw = options["offset"] {
            guard case .uint16(let value) = raw.unwrappingVariants else { throw BlueZError.invalidArguments() }
            offset = Int(value)
        }
        let value: [UInt8]
        switch role {
        case .deviceInformation(let short): value = device.model.profile.deviceInformationValue(short) ?? []
        case .batteryLevel: value = [device.model.batteryPercent]
        case .command, .notify: throw BlueZError.notPermitted("Read not permitted")
        }
        guard offset <= value.count else { throw BlueZError.invalidOffset() }
        let result = Array(value[offset...])
        update(path, Self.characteristicInterface, ["Value": .array(element: .byte, result.map { .byte($0) })])
        return result
    }

    /// The board takes the bytes here, in the order bluetoothd's loop handles the writes; an
    /// acknowledged write (`request`) is answered a connection event later, beside the calls
    /// that follow.
    func writeValue(_ index: Int, _ role: GATTLayout.Role, _ bytes: [UInt8], options: [String: DBusValue],
                    received: ContinuousClock.Instant) async throws -> DBusMethodResult {
        let device = try device(index)
        var type = "request"
        if let raw = options["type"] {
            guard case .string(let text) = raw.unwrappingVariants, ["command", "request", "reliable"].contains(text) else {
                throw BlueZError.invalidArguments()
            }
            type = text
        }
        if let raw = options["offset"] {
            guard case .uint16 = raw.unwrappingVariants else { throw BlueZError.invalidArguments() }
        }
        guard role == .command else { throw BlueZError.notPermitted("Write not permitted") }
        if device.dropLinkAtNextWrite {
            device.dropLinkAtNextWrite = false
            log("mwsim: fault link-drop board \(index) \(device.address) as a write arrives")
            linkLost(device, reason: "supervision timeout")
        }
        // A busy bluetoothd reaches the call late (counted from its arrival); the calls behind
        // it wait with it.
        if writeValueDelay > .zero { try? await Task.sleep(until: received + writeValueDelay, clock: .continuous) }
        guard device.connected else { throw BlueZError.failed("Not connected") }
        let acknowledged = type != "command"
        if acknowledged {
            // One acknowledged write in flight per characteristic.
            guard !device.requestWriteInFlight else { throw BlueZError.inProgress() }
            device.requestWriteInFlight = true
        }
        log("mwsim: write \(device.address) board=\(index) type=\(type) \(hexString(bytes))")
        advanceBoard(device)
        let result = device.model.write(bytes)
        for reply in result.notifications {
            device.stats.notificationsEmitted += 1
            enqueue(device, reply)
        }
        let generation = device.linkGeneration
        var answer = DBusMethodResult.reply([])
        if acknowledged {
            answer = .later { [weak self] in
                try await self?.acknowledgeWrite(index, generation)
                return []
            }
        }
        if let effect = result.linkEffect {
            // The board ends the link after the write is acknowledged.
            answer = answer.then { [weak self] in
                try? await Task.sleep(for: .milliseconds(20))
                await self?.boardEndedLink(index, generation, effect)
            }
        }
        return answer
    }

    /// The response to an acknowledged write: one connection event after the request, unless
    /// the link went meanwhile.
    func acknowledgeWrite(_ index: Int, _ generation: Int) async throws {
        try? await Task.sleep(for: .milliseconds(Int64(configuration.connectionIntervalMilliseconds)))
        let device = try device(index)
        guard device.connected, generation == device.linkGeneration else { throw BlueZError.failed("Not connected") }
        device.requestWriteInFlight = false
    }

    func boardEndedLink(_ index: Int, _ generation: Int, _ effect: SimulatedBoard.LinkEffect) {
        guard let device = try? device(index), generation == device.linkGeneration else { return }
        linkLost(device, reason: "board \(effect)")
    }

    func startNotify(_ index: Int, _ role: GATTLayout.Role, sender: String) throws {
        let device = try device(index)
        guard role == .notify else { return }  // battery level: accepted, never changes
        guard device.notifyPipe == nil, device.pendingAcquireOwner == nil, !device.abandonedAcquire else {
            throw BlueZError.notPermitted("Notify acquired")
        }
        // One session per sender. bluetoothd 5.66 keeps a session through a link drop with
        // its registration cleared and registers it again itself when the link is attached
        // (src/gatt-client.c btd_gatt_client_disconnected / btd_gatt_client_connected): while
        // the link is down a second StartNotify is InProgress, once it is back a success.
        guard device.notifySessions.insert(sender).inserted else {
            if !device.connected { throw BlueZError.inProgress() }
            return
        }
        log("mwsim: board \(index) StartNotify by \(sender)")
        // Not connected: BlueZ answers success and arms the session when GATT is ready.
        refreshNotifying(device)
    }

    func stopNotify(_ index: Int, _ role: GATTLayout.Role, sender: String) throws {
        let device = try device(index)
        guard role == .notify else { return }
        // bluetoothd 5.66 releases a held acquisition on any client's StopNotify, without
        // looking at the sender (src/gatt-client.c characteristic_stop_notify -> destroy_sock);
        // an AcquireNotify still waiting is then never answered.
        if let caller = device.pendingAcquireOwner {
            log("mwsim: board \(index) StopNotify by \(sender) released the unanswered AcquireNotify of \(caller)")
            device.pendingAcquireOwner = nil
            device.releasedAcquireCallers.insert(caller)
            return
        }
        guard device.notifySessions.remove(sender) != nil else { throw BlueZError.failed("No notify session started") }
        log("mwsim: board \(index) StopNotify by \(sender)")
        refreshNotifying(device)
    }

    func acquireNotify(_ index: Int, _ role: GATTLayout.Role, sender: String) throws -> DBusMethodResult {
        let device = try device(index)
        guard role == .notify else { throw BlueZError.notSupported() }
        guard device.connected else { throw BlueZError.notConnected() }
        guard device.pendingAcquireOwner == nil, !device.abandonedAcquire else {
            log("mwsim: board \(index) AcquireNotify refused: notify already acquired (\(device.abandonedAcquire ? "for a client bluetoothd freed" : "an AcquireNotify waits"))")
            throw BlueZError.notPermitted("Notify acquired")
        }
        // bluetoothd 5.66 writes the CCCD at once but hands out the socket only when its GATT
        // client is ready (ServicesResolved), dropping what the board sends meanwhile
        // (src/gatt-client.c register_notify_io_cb, notify_io_cb).
        guard device.servicesResolved else {
            log("mwsim: board \(index) AcquireNotify by \(sender) before ServicesResolved: answered once resolved")
            device.pendingAcquireOwner = sender
            let generation = device.linkGeneration
            return .later { [weak self] in
                guard let self else { throw DBusError.disconnected() }
                return try await self.notifyChannelOnceResolved(index, generation, sender: sender)
            }
        }
        return .reply(try handOutNotifyPipe(device, sender: sender))
    }

    private func notifyChannelOnceResolved(_ index: Int, _ generation: Int, sender: String) async throws -> [DBusValue] {
        let device = try device(index)
        while !device.servicesResolved {
            try? await Task.sleep(for: .milliseconds(5))
            if device.releasedAcquireCallers.contains(sender) { try await neverAnswered(device, sender: sender) }
            // Its caller left: 5.66 never answers (our reply goes nowhere).
            guard device.pendingAcquireOwner == sender else { throw BlueZError.failed("Notify released") }
            guard device.connected, generation == device.linkGeneration else {
                device.pendingAcquireOwner = nil
                throw BlueZError.failed("Not connected")
            }
        }
        if device.releasedAcquireCallers.contains(sender) { try await neverAnswered(device, sender: sender) }
        guard device.pendingAcquireOwner == sender else { throw BlueZError.failed("Notify released") }
        device.pendingAcquireOwner = nil
        return try handOutNotifyPipe(device, sender: sender)
    }

    /// A released `AcquireNotify` (see ``SimulatedDevice/releasedAcquireCallers``): no answer
    /// while its caller is on the bus; the error thrown once it left goes nowhere.
    private func neverAnswered(_ device: SimulatedDevice, sender: String) async throws -> Never {
        while device.releasedAcquireCallers.contains(sender), !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(5))
        }
        device.releasedAcquireCallers.remove(sender)
        throw BlueZError.failed("Notify released")
    }

    private func handOutNotifyPipe(_ device: SimulatedDevice, sender: String) throws -> [DBusValue] {
        guard device.notifyPipe == nil else {
            log("mwsim: board \(device.index) AcquireNotify refused: notify already acquired")
            throw BlueZError.notPermitted("Notify acquired")
        }
        guard device.notifySessions.isEmpty else {
            log("mwsim: board \(device.index) AcquireNotify refused: StartNotify sessions \(device.notifySessions.sorted())")
            throw BlueZError.inProgress()
        }
        let pipe = try NotifyPipe()
        device.notifyPipe = pipe
        device.notifyPipeOwner = sender
        log("mwsim: board \(device.index) AcquireNotify by \(sender)")
        update(device.notifyCharacteristicPath, Self.characteristicInterface, ["NotifyAcquired": .boolean(true), "Notifying": .boolean(true)])
        return [.unixFD(try pipe.takeClientEnd()), .uint16(Self.mtu)]
    }

    func isNotifying(_ index: Int, _ role: GATTLayout.Role) throws -> Bool {
        let device = try device(index)
        return role == .notify && (!device.notifySessions.isEmpty || device.notifyPipe != nil)
    }

    /// Announces Notifying when it differs from the sessions' state.
    func refreshNotifying(_ device: SimulatedDevice) {
        let path = device.notifyCharacteristicPath
        guard let current = properties[path]?[Self.characteristicInterface]?["Notifying"] else { return }
        let notifying = !device.notifySessions.isEmpty || device.notifyPipe != nil
        if current != .boolean(notifying) {
            update(path, Self.characteristicInterface, ["Notifying": .boolean(notifying)])
        }
    }

    /// Closes the AcquireNotify channel (HUP at the client) and clears NotifyAcquired.
    func releaseNotifyPipe(_ device: SimulatedDevice, announce: Bool = true) {
        device.notifyPipe?.close()
        device.notifyPipe = nil
        device.notifyPipeOwner = nil
        guard announce else { return }
        update(device.notifyCharacteristicPath, Self.characteristicInterface, ["NotifyAcquired": .boolean(false)])
        refreshNotifying(device)
    }
}
