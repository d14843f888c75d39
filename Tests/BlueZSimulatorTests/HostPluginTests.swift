@testable import BlueZSimulator
import DBus
import Foundation
import MetaWearBoardModel
import TestSupport
import Testing

/// bluetoothd's deviceinfo and battery plugins as mwsim models them (BlueZ
/// `profiles/deviceinfo`, `profiles/battery`, `src/battery.c`, `src/gatt-client.c`): in both
/// worlds (Device Information and Battery exported as GATT objects, or hidden because the
/// plugins claim them) a board gets `Battery1` while connected and, when its Device
/// Information has a PnP ID, `Device1.Modalias`.
@Suite(.serialized, .enabled(if: TestBus.isAvailable))
struct HostPluginTests {
    static let battery = "org.bluez.Battery1"
    static let device = "org.bluez.Device1"

    @Test(arguments: [false, true])
    func modaliasAndBattery1InBothWorlds(hidden: Bool) async throws {
        try await SimulatorHarness.with(configure: {
            $0.profiles = $0.profiles.map { $0.withMbientLabPnPID() }
            if hidden { $0.deviceInformationHidden = [0] }
        }) { harness in
            let path = try await harness.simulator.boardInfo(0).path
            _ = try await harness.call("/org/bluez/hci0", "org.bluez.Adapter1", "StartDiscovery")
            try await harness.eventually("discovered") { try await Self.objects(harness)[path] != nil }
            // Before a connection: no Modalias, no Battery1.
            let before = try await Self.objects(harness)[path] ?? [:]
            #expect(before[Self.device]?["Modalias"] == nil && before[Self.battery] == nil, "\(before.keys)")

            _ = try await harness.connect(0)
            try await harness.eventually("Battery1 exported") { try await Self.objects(harness)[path]?[Self.battery] != nil }
            let objects = try await Self.objects(harness)
            let interfaces = try #require(objects[path])
            // MetaMotion R, firmware 1.7.2: MbientLab (0x067E), product 5, version 0x0172.
            #expect(interfaces[Self.device]?["Modalias"] == .string("bluetooth:v067Ep0005d0172"))
            #expect(interfaces[Self.battery]?["Percentage"] == .byte(99))
            #expect(try await harness.property(path, Self.battery, "Percentage") == .byte(99))
            let serviceUUIDs = objects.values.compactMap { $0["org.bluez.GattService1"]?["UUID"] }
            let dis = DBusValue.string("0000180a-0000-1000-8000-00805f9b34fb")
            let bas = DBusValue.string("0000180f-0000-1000-8000-00805f9b34fb")
            #expect(serviceUUIDs.contains(dis) == !hidden && serviceUUIDs.contains(bas) == !hidden, "\(serviceUUIDs)")
            if !hidden {
                // The PnP ID is a sixth Device Information characteristic, read as raw bytes.
                let pnp = try #require(objects.first { $0.value["org.bluez.GattCharacteristic1"]?["UUID"]
                    == .string("00002a50-0000-1000-8000-00805f9b34fb") }?.key)
                let reply = try await harness.call(pnp, "org.bluez.GattCharacteristic1", "ReadValue",
                                                   [.dictionary(key: .string, value: .variant, [])])
                let bytes: [UInt8] = try reply.decode([UInt8].self)
                #expect(bytes == [0x01, 0x7E, 0x06, 0x05, 0x00, 0x72, 0x01])
            }

            // The link goes: Battery1 goes with it (InterfacesRemoved), Modalias stays.
            _ = try await harness.call(path, Self.device, "Disconnect")
            try await harness.eventually("Battery1 removed") { try await Self.objects(harness)[path]?[Self.battery] == nil }
            #expect(try await harness.property(path, Self.device, "Modalias") == .string("bluetooth:v067Ep0005d0172"))
        }
    }

    /// A board without a PnP ID never gets a Modalias; without the battery plugin no Battery1.
    @Test func noPnPIDNoModaliasAndNoBatteryPluginNoBattery1() async throws {
        try await SimulatorHarness.with(configure: { $0.batteryPluginOff = true }) { harness in
            let path = try await harness.connect(0)
            try await Task.sleep(for: .milliseconds(200))
            let interfaces = try #require(try await Self.objects(harness)[path])
            #expect(interfaces[Self.device]?["Modalias"] == nil, "\(interfaces[Self.device] ?? [:])")
            #expect(interfaces[Self.battery] == nil)
            await #expect(throws: DBusError.self) { try await harness.property(path, Self.device, "Modalias") }
        }
    }

    static func objects(_ harness: SimulatorHarness) async throws -> [DBusObjectPath: [String: [String: DBusValue]]] {
        let reply = try await harness.call(.root, DBusStandardInterface.objectManager, "GetManagedObjects")
        let raw = try reply.decode([DBusObjectPath: [String: [String: DBusValue]]].self)
        return raw.mapValues { $0.mapValues { $0.mapValues(\.unwrappingVariants) } }
    }
}
