@testable import BlueZSimulator
import DBus
import Foundation
import MetaWearBoardModel
import TestSupport
import Testing

/// The simulator driven by clients that share no code with it: python3-dbus and gdbus.
@Suite(.serialized, .enabled(if: TestBus.isAvailable && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")))
struct IndependentClientTests {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Scripts/sim_client.py").path

    @Test func pythonClientDiscoversConnectsAndStreams() async throws {
        try await SimulatorHarness.with(boards: 2, model: .mixed) { harness in
        let hex = gyroStart100HzBMI160.map { $0.map { String(format: "%02x", $0) }.joined() }
        let output = try await harness.run("/usr/bin/python3", [Self.script, "stream"] + hex)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any])

        #expect(json["second_start"] as? [String] == ["org.bluez.Error.InProgress", "Operation already in progress"])
        let device = try #require(json["device"] as? [String: Any])
        #expect(device["Address"] as? String == "E8:C9:8F:52:7B:07")
        #expect(device["AddressType"] as? String == "random")
        #expect(device["Name"] as? String == "MetaWear")
        #expect(device["RSSI_signature"] as? String == "Int16")
        #expect(device["ManufacturerData"] as? [String: String] == ["25197": "077b528fc9e8"])
        #expect(device["UUIDs"] as? [String] == ["326a9000-85cb-9195-d9dd-464cfbbae75a"])
        #expect(json["services_resolved"] as? Bool == true)
        #expect(json["device_events"] as? [[String]] == [["Connected"], ["ServicesResolved", "UUIDs"]])
        #expect(json["dis"] as? [String: String] == ["model": "5", "firmware": "1.7.2", "hardware": "0.4",
                                                       "manufacturer": "MbientLab Inc", "serial": "055B00"])
        let characteristics = try #require(json["characteristics"] as? [String: [String: Any]])
        let command = try #require(characteristics["326a9001-85cb-9195-d9dd-464cfbbae75a"])
        #expect(command["path"] as? String == "/org/bluez/hci0/dev_E8_C9_8F_52_7B_07/service000c/char000d")
        #expect(command["flags"] as? [String] == ["write-without-response", "write"])
        #expect(characteristics["326a9006-85cb-9195-d9dd-464cfbbae75a"]?["flags"] as? [String] == ["notify"])

        // PropertiesChanged(Value): consecutive indices carrying the board's deterministic signal.
        let values = (json["notify_values"] as? [String] ?? []).map(bytesFromHex)
        #expect(values.count >= 50, "about 150 expected in 1.5 s at 100 Hz, got \(values.count)")
        let samples = values.compactMap(decodeGyro)
        #expect(samples.count == values.count)
        for (previous, next) in zip(samples, samples.dropFirst()) { #expect(next.index == previous.index &+ 1) }
        for sample in samples {
            let expected = SimulatedBoard.signal(.gyro, seed: 1, index: UInt64(sample.index))
            #expect(sample.y == expected.y && sample.z == expected.z)
        }
        #expect(json["notifying_events"] as? [Bool] == [true])

        // AcquireNotify: a SOCK_SEQPACKET fd with MTU 247 carrying the same stream, later indices.
        #expect(json["mtu"] as? Int == 247)
        #expect(json["socket_type"] as? Int == 5)
        let fdSamples = (json["fd_values"] as? [String] ?? []).map(bytesFromHex).compactMap(decodeGyro)
        #expect(fdSamples.count >= 30)
        for (previous, next) in zip(fdSamples, fdSamples.dropFirst()) { #expect(next.index == previous.index &+ 1) }
        if let last = samples.last, let first = fdSamples.first { #expect(first.index > last.index) }
        #expect(json["after_disconnect"] as? [[String]] == [["ServicesResolved"], ["Connected"]])

        // The board saw exactly the bytes written, logged on one line each with its address.
        #expect(try await harness.simulator.commandLog(0) == gyroStart100HzBMI160)
        #expect(harness.logLines.all.contains("mwsim: write E8:C9:8F:52:7B:07 board=0 type=command 13032800"))
        #expect(try await harness.simulator.commandLog(1).isEmpty)
        }
    }

    @Test func gdbusIntrospectShowsTheBlueZInterfaces() async throws {
        try await SimulatorHarness.with { harness in
        let adapter = try await harness.run("/usr/bin/gdbus", ["introspect", "--system", "-d", "org.bluez", "-o", "/org/bluez/hci0"])
        for line in ["interface org.bluez.Adapter1", "StartDiscovery();", "SetDiscoveryFilter(in  a{sv} properties);",
                     "readwrite b Powered = true;", "readonly s PowerState = 'on';", "readonly b Discovering = false;",
                     "readonly as Roles = ['central', 'peripheral'];", "readonly s Address = '00:1A:7D:DA:71:13';",
                     "readwrite s Alias", "readonly s Name", "readonly as UUIDs", "interface org.freedesktop.DBus.Properties"] {
            #expect(adapter.contains(line), "missing '\(line)' in:\n\(adapter)")
        }
        let path = try await harness.connect(0)
        let device = try await harness.run("/usr/bin/gdbus", ["introspect", "--system", "-d", "org.bluez", "-o", path.rawValue])
        for line in ["interface org.bluez.Device1", "Connect();", "Disconnect();", "readonly s Address = 'E8:C9:8F:52:7B:07';",
                     "readonly s AddressType = 'random';", "readonly n RSSI", "readonly a{qv} ManufacturerData",
                     "readonly b ServicesResolved = true;", "readonly b Connected = true;", "node service000c"] {
            #expect(device.contains(line), "missing '\(line)' in:\n\(device)")
        }
        let notify = try await harness.run("/usr/bin/gdbus", ["introspect", "--system", "-d", "org.bluez", "-o", path.rawValue + "/service000c/char000f"])
        for line in ["interface org.bluez.GattCharacteristic1", "AcquireNotify(in  a{sv} options,", "out h fd,", "out q mtu);",
                     "readonly q MTU = 247;", "readonly b NotifyAcquired = false;", "readonly as Flags = ['notify'];", "node desc0011"] {
            #expect(notify.contains(line), "missing '\(line)' in:\n\(notify)")
        }
        let root = try await harness.run("/usr/bin/gdbus", ["call", "--system", "-d", "org.bluez", "-o", "/", "-m",
                                                          "org.freedesktop.DBus.ObjectManager.GetManagedObjects"])
        #expect(root.contains("'/org/bluez/hci0/dev_E8_C9_8F_52_7B_07/service000c/char000d'"))
        }
    }
}
