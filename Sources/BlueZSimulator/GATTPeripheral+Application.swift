import DBus

/// The objects bluetoothd reads from a GATT application (`GetManagedObjects` under its root)
/// and an advertisement (bluez-dbus.md §1.3): the MetaWear service (metawear-protocol.md §1.1),
/// optionally Device Information, and Battery.
extension GATTPeripheral {
    var notifyPath: DBusObjectPath { root(appending: "service0/char1") }
    var advertisementPath: DBusObjectPath { root(appending: "advertisement") }

    private func root(appending suffix: String) -> DBusObjectPath {
        (try? DBusObjectPath(rootPath.rawValue + "/" + suffix)) ?? rootPath
    }

    func exportApplication(on bus: DBusConnection) async throws {
        bus.exportObjectManager(at: rootPath)
        var services: [(uuid: String, characteristics: [(uuid: String, flags: [String], role: GATTLayout.Role)])] = [
            (GATTLayout.metaWearService, [
                (GATTLayout.commandCharacteristic, ["write-without-response", "write"], .command),
                (GATTLayout.notifyCharacteristic, ["notify"], .notify),
            ]),
        ]
        if options.offersDeviceInformation {
            let characteristics: [UInt16] = [0x2A29, 0x2A24, 0x2A25, 0x2A27, 0x2A26]
                + (options.profile.pnpID == nil ? [] : [GATTLayout.pnpIDCharacteristic])
            services.append((GATTLayout.deviceInformationService, characteristics.map {
                (GATTLayout.uuid16($0), ["read"], .deviceInformation($0))
            }))
        }
        services.append((GATTLayout.batteryService, [(GATTLayout.batteryLevel, ["read", "notify"], .batteryLevel)]))
        for (serviceIndex, service) in services.enumerated() {
            let servicePath = root(appending: "service\(serviceIndex)")
            try await bus.export(DBusExportedObject(DBusInterface(Self.serviceInterface, properties: [
                constant("UUID", .string(service.uuid)),
                constant("Primary", .boolean(true)),
            ])), at: servicePath)
            for (characteristicIndex, characteristic) in service.characteristics.enumerated() {
                let path = root(appending: "service\(serviceIndex)/char\(characteristicIndex)")
                try await bus.export(DBusExportedObject(DBusInterface(
                    Self.characteristicInterface,
                    methods: characteristicMethods(characteristic.role),
                    properties: [
                        constant("UUID", .string(characteristic.uuid)),
                        constant("Service", .objectPath(servicePath)),
                        constant("Flags", .array(element: .string, characteristic.flags.map { .string($0) })),
                    ] + (characteristic.role == .notify ? [
                        // Its presence makes bluetoothd use AcquireNotify instead of
                        // StartNotify + a PropertiesChanged signal per notification.
                        constant("NotifyAcquired", .boolean(false)),
                    ] : []))), at: path)
            }
        }
        try await bus.export(DBusExportedObject(advertisement()), at: advertisementPath)
    }

    private func characteristicMethods(_ role: GATTLayout.Role) -> [DBusMethod] {
        let optionsType: DBusType = .dictionary(key: .string, value: .variant)
        var methods = [
            DBusMethod("ReadValue", in: [optionsType], out: [.array(.byte)], inNames: ["options"], outNames: ["value"]) {
                [weak self] _ in
                guard let self else { throw DBusError.disconnected() }
                let value: [UInt8] = switch role {
                case .deviceInformation(let short): await self.readDeviceInformation(short)
                case .batteryLevel: await self.readBatteryLevel()
                case .command, .notify: throw BlueZError.notPermitted("Read not permitted")
                }
                return [.array(element: .byte, value.map { .byte($0) })]
            },
        ]
        if role == .command {
            methods.append(DBusMethod("WriteValue", in: [.array(.byte), optionsType], inNames: ["value", "options"]) {
                [weak self] call in
                let (bytes, options) = try call.decode([UInt8].self, [String: DBusValue].self)
                await self?.write(bytes, options: options)
                return []
            })
        }
        if role == .notify {
            methods.append(DBusMethod("StartNotify") { [weak self] _ in await self?.startNotify(); return [] })
            methods.append(DBusMethod("StopNotify") { [weak self] _ in await self?.stopNotify(); return [] })
            methods.append(DBusMethod("AcquireNotify", in: [optionsType], out: [.unixFD, .uint16],
                                      inNames: ["options"], outNames: ["fd", "mtu"]) { [weak self] call in
                guard let self else { throw DBusError.disconnected() }
                let (options) = try call.decode([String: DBusValue].self)
                let (fd, mtu) = try await self.acquireNotify(options)
                return [.unixFD(fd), .uint16(mtu)]
            })
        } else if role == .batteryLevel {
            // Accepted; the level never changes.
            methods.append(DBusMethod("StartNotify") { _ in [] })
            methods.append(DBusMethod("StopNotify") { _ in [] })
        }
        return methods
    }

    private func advertisement() -> DBusInterface {
        var properties = [
            constant("Type", .string("peripheral")),
            constant("LocalName", .string("MetaWear")),
            // MbientLab's company id with the board's MAC, as MetaWear firmware advertises.
            constant("ManufacturerData", .dictionary(key: .uint16, value: .variant, [
                DBusDictionaryEntry(key: .uint16(GATTLayout.mbientLabCompanyID),
                                    value: .variant(.array(element: .byte, options.profile.macAddress.map { .byte($0) }))),
            ])),
        ]
        if options.advertisesServiceUUID {
            properties.append(constant("ServiceUUIDs", .array(element: .string, [.string(GATTLayout.metaWearService)])))
        }
        return DBusInterface(Self.advertisementInterface, methods: [
            DBusMethod("Release") { [weak self] _ in await self?.log("advertisement released by bluetoothd"); return [] },
        ], properties: properties)
    }

    private func constant(_ name: String, _ value: DBusValue) -> DBusProperty {
        DBusProperty(name, type: value.type, get: { value })
    }
}
