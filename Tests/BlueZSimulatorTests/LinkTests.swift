@testable import BlueZSimulator
import DBus
import Foundation
import MetaWearBoardModel
import TestSupport
import Testing

/// Discovery rules, batching, the rate cap and emitted-vs-received accounting.
@Suite(.serialized, .enabled(if: TestBus.isAvailable))
struct LinkTests {
    @Test func notificationsAreReleasedInBatchesPerConnectionInterval() async throws {
        try await SimulatorHarness.with(configure: { $0.connectionIntervalMilliseconds = 25 }) { harness in
            let path = try await harness.connect(0)
            _ = try await harness.call(try harness.notifyPath(path), "org.bluez.GattCharacteristic1", "StartNotify")
            for command in gyroStart100HzBMI160 { try await harness.write(path, command) }
            var releases: [LinkRelease] = []
            try await waitUntil("20 connection events") {
                releases = try await harness.simulator.linkReleases(0)
                return releases.count >= 20
            }
            // The schedule the link keeps: 25 ms ± 10 %, inside BLE's 7.5…30 ms.
            let planned = releases.map(\.plannedIntervalMilliseconds)
            #expect(planned.allSatisfy { $0 >= 22.4 && $0 <= 27.6 }, "planned intervals: \(planned.prefix(8))")
            // On the wall clock a starved test machine only stretches the gaps: the median
            // never falls below the shortest interval.
            let gaps = zip(releases, releases.dropFirst()).map { Double($1.nanoseconds - $0.nanoseconds) / 1e6 }.sorted()
            #expect(gaps[gaps.count / 2] >= 7.5, "median gap \(gaps[gaps.count / 2]) ms")
            // At 100 Hz and 25 ms, most events carry more than one notification.
            let batched = releases.filter { $0.count >= 2 }.count
            #expect(Double(batched) / Double(releases.count) > 0.5, "batches: \(releases.map(\.count))")
        }
    }

    @Test func statsMatchWhatTheClientReceived() async throws {
        try await SimulatorHarness.with { harness in
            let (path, values) = try await harness.gyroStream(0)
            var lastIndex: UInt16 = 0
            var count = 0
            for try await change in values {
                guard let value = change.changed["Value"], let bytes = try? value.unwrappingVariants.as([UInt8].self),
                      let sample = decodeGyro(bytes) else { continue }
                count += 1
                lastIndex = sample.index
                if count == 100 { break }
            }
            try await harness.write(path, [0x13, 0x01, 0x00])
            try await Task.sleep(for: .milliseconds(100))
            let stats = try await harness.stats(0)
            // Everything emitted reached the client (no loss configured); the stop may race
            // a few in-flight samples, so compare against what the board reports.
            let emitted = try #require(stats["GyroSamplesEmitted"]?.uint64Value)
            #expect(emitted >= 100)
            #expect(stats["NotificationsDelivered"]?.uint64Value == stats["NotificationsEmitted"]?.uint64Value)
            #expect(try #require(stats["GyroLastIndex"]?.int64Value) >= Int64(lastIndex))
        }
    }

    @Test func rateCapLimitsThroughputAndCountsDrops() async throws {
        try await SimulatorHarness.with(configure: { $0.rateCap = 40; $0.linkQueueLimit = 8 }) { harness in
            let path = try await harness.connect(0)
            _ = try await harness.call(try harness.notifyPath(path), "org.bluez.GattCharacteristic1", "StartNotify")
            for command in gyroStart100HzBMI160 { try await harness.write(path, command) }
            try await Task.sleep(for: .seconds(2))
            let stats = try await harness.stats(0)
            let delivered = try #require(stats["NotificationsDelivered"]?.uint64Value)
            #expect(delivered <= 2 * 40 + 20, "delivered \(delivered) in ~2 s at a cap of 40/s")
            #expect(try #require(stats["DroppedByRateCap"]?.uint64Value) > 0)
        }
    }

    @Test func discoveryRulesAndTemporaryTimeout() async throws {
        try await SimulatorHarness.with(configure: { $0.temporaryTimeout = .milliseconds(600) }) { harness in
            let adapter: DBusObjectPath = "/org/bluez/hci0"
            let bad: [(String, DBusValue)] = [("RSSI", .int32(-70)), ("Transport", .string("usb")), ("Colour", .string("red")),
                                               ("UUIDs", .string("326a9000"))]
            for (key, value) in bad {
                await #expect { _ = try await harness.call(adapter, "org.bluez.Adapter1", "SetDiscoveryFilter",
                                                           [.dictionary(key: .string, value: .variant, [DBusDictionaryEntry(key: .string(key), value: .variant(value))])]) }
                    throws: { ($0 as? DBusError)?.name == "org.bluez.Error.InvalidArguments" }
            }
            await #expect { _ = try await harness.call(adapter, "org.bluez.Adapter1", "StopDiscovery") }
                throws: { ($0 as? DBusError)?.name == "org.bluez.Error.Failed" }
            let added = try await harness.client.interfacesAdded(sender: "org.bluez", managerPath: .root)
            _ = try await harness.call(adapter, "org.bluez.Adapter1", "StartDiscovery")
            #expect(try await harness.property(adapter, "org.bluez.Adapter1", "Discovering") == .boolean(true))
            var device: DBusInterfacesAdded?
            for try await event in added where event.interfaces["org.bluez.Device1"] != nil { device = event; break }
            let properties = try #require(device?.interfaces["org.bluez.Device1"])
            #expect(properties["AddressType"]?.unwrappingVariants == .string("random"))
            if case .int16? = properties["RSSI"]?.unwrappingVariants {} else { Issue.record("RSSI must be n") }
            let path = try #require(device?.path)
            _ = try await harness.call(adapter, "org.bluez.Adapter1", "StopDiscovery")
            // Not seen and not connected: removed after the temporary timeout.
            let removed = try await harness.client.interfacesRemoved(sender: "org.bluez", managerPath: .root)
            for try await event in removed where event.path == path { break }
            // Unpowered adapter: NotReady.
            _ = try await harness.call(adapter, DBusStandardInterface.properties, "Set",
                                       [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.boolean(false))])
            await #expect { _ = try await harness.call(adapter, "org.bluez.Adapter1", "StartDiscovery") }
                throws: { ($0 as? DBusError)?.name == "org.bluez.Error.NotReady" }
            await #expect { _ = try await harness.call(adapter, DBusStandardInterface.properties, "Set",
                                                       [.string("org.bluez.Adapter1"), .string("Powered"), .variant(.string("yes"))]) }
                throws: { ($0 as? DBusError)?.name == DBusError.Name.invalidArgs }
        }
    }

    @Test func notifySessionsDropWhenTheClientLeavesAndRearmOnReconnect() async throws {
        try await SimulatorHarness.with { harness in
            let path = try await harness.connect(0)
            let notify = try harness.notifyPath(path)
            let other = try await DBusConnection(address: harness.bus.address)
            _ = try await other.call(destination: "org.bluez", path: notify, interface: "org.bluez.GattCharacteristic1",
                                     member: "StartNotify", timeout: SimulatorHarness.timeout)
            #expect(try await harness.property(notify, "org.bluez.GattCharacteristic1", "Notifying") == .boolean(true))
            _ = try await harness.control("DropLink", [.uint32(0)])
            _ = try await harness.call(path, "org.bluez.Device1", "Connect")
            try await harness.eventually("re-armed after reconnect") {
                try await harness.property(path, "org.bluez.Device1", "ServicesResolved") == .boolean(true)
            }
            #expect(try await harness.property(notify, "org.bluez.GattCharacteristic1", "Notifying") == .boolean(true))
            other.close()
            try await harness.eventually("session dropped when its owner left") {
                try await harness.property(notify, "org.bluez.GattCharacteristic1", "Notifying") == .boolean(false)
            }
        }
    }
}
