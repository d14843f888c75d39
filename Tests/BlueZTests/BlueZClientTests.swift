import BlueZ
import DBus
import Foundation
import Synchronization
import TestSupport
import Testing

private let metaWearService = "326a9000-85cb-9195-d9dd-464cfbbae75a"
private let commandUUID = "326a9001-85cb-9195-d9dd-464cfbbae75a"
private let notifyUUID = "326a9006-85cb-9195-d9dd-464cfbbae75a"
private let boardAddress = "D1:5E:AA:01:02:03"

/// The BlueZ client against python3-dbusmock on a private dbus-daemon.
@Suite("BlueZ client over D-Bus (python3-dbusmock peer)", .enabled(if: MockBlueZ.isAvailable), .serialized)
struct BlueZClientTests {
    private func withMock(_ body: (MockBlueZ, BlueZClient) async throws -> Void) async throws {
        let mock = try await MockBlueZ()
        defer { mock.stop() }
        let client = try await BlueZClient.open(busAddress: mock.bus.address, discoveryUUIDs: [metaWearService])
        let following = Task { await client.run() }
        do {
            try await body(mock, client)
        } catch {
            await client.close()
            await following.value
            throw error
        }
        await client.close()
        await following.value
    }

    private func connectedBoard(_ mock: MockBlueZ, _ client: BlueZClient, acquirable: Bool = false)
        async throws -> DBusObjectPath
    {
        try await mock.addBoard(boardAddress)
        try await mock.call("SetNotifyAcquirable", [.string(boardAddress), .boolean(acquirable)])
        let address = try #require(BluetoothAddress(boardAddress))
        var device: DeviceInfo?
        try await waitUntil("the device object") {
            device = await client.device(address)
            return device != nil
        }
        let path = try #require(device?.path)
        try await client.connect(path, timeout: .seconds(10))
        try await client.waitForServicesResolved(path, timeout: eventually)
        try await waitUntil("the GATT objects") { await client.characteristic(notifyUUID, under: path) != nil }
        return path
    }

    @Test func discoveryUsesTheLEFilterAndReportsAdvertisements() async throws {
        try await withMock { mock, client in
            let adapters = await client.adapters()
            #expect(adapters.map(\.path.rawValue) == ["/org/bluez/hci0"])
            #expect(adapters.first?.powered == true)
            let advertisements = await client.advertisements(namePrefix: "MetaWear")
            try await mock.addBoard(boardAddress, name: "MetaWear")
            let seen = try await first(advertisements)
            #expect(seen.address.rawValue == boardAddress)
            #expect(seen.name == "MetaWear")
            #expect(seen.rssi == -58)
            #expect(seen.devicePath.rawValue == "/org/bluez/hci0/dev_D1_5E_AA_01_02_03")
            let scanning = try await mock.state(boardAddress)
            #expect(scanning["Discovering"] == .boolean(true))
            #expect(scanning["FilterTransport"] == .string("le"))
            // No service UUID in the filter: BlueZ would drop boards that advertise without it
            // (issue 18); advertisements are matched by UUID, name or address on our side.
            #expect(try scanning["FilterUUIDs"]?.as([String].self) == [])
        }
    }

    @Test func discoveryStopsWhenNobodyWantsIt() async throws {
        try await withMock { mock, client in
            try await mock.addBoard(boardAddress)
            await client.setScanning(true, requester: "a")
            await client.setScanning(true, requester: "b")
            #expect(try await mock.state(boardAddress)["Discovering"] == .boolean(true))
            await client.setScanning(false, requester: "a")
            #expect(try await mock.state(boardAddress)["Discovering"] == .boolean(true))
            await client.setScanning(false, requester: "b")
            #expect(try await mock.state(boardAddress)["Discovering"] == .boolean(false))
        }
    }

    /// The VM's bluetoothd restart: the new daemon powered hci3 before the test powered hci0;
    /// discovery started on hci3 while the board's session looked for it on hci0 (the first
    /// powered adapter), and the link came back only at the session's scan restart, 30 s on.
    @Test func discoveryMovesToTheFirstPoweredAdapter() async throws {
        try await withMock { mock, client in
            _ = try await mock.call("SetAdapterPowered", [.string("hci0"), .boolean(false)])
            _ = try await mock.call("AddAdapter", [.string("hci3"), .string("00:11:22:33:44:58"), .boolean(true)])
            try await waitUntil("hci3 the only powered adapter") { await client.poweredAdapter()?.path.rawValue == "/org/bluez/hci3" }
            await client.setScanning(true, requester: "a")
            #expect(try await discoveringAdapters(mock) == ["/org/bluez/hci3"])
            _ = try await mock.call("SetAdapterPowered", [.string("hci0"), .boolean(true)])
            try await waitUntil("discovery on hci0 alone") { try await discoveringAdapters(mock) == ["/org/bluez/hci0"] }
            #expect(await client.facts(for: try #require(BluetoothAddress(boardAddress))).adapter?.rawValue == "/org/bluez/hci0")
            await client.setScanning(false, requester: "a")
            #expect(try await discoveringAdapters(mock) == [])
        }
    }

    private func discoveringAdapters(_ mock: MockBlueZ) async throws -> [String] {
        try await mock.call("DiscoveringAdapters").decode([String].self)
    }

    @Test func connectResolvesServicesAndFindsCharacteristicsByUUID() async throws {
        try await withMock { mock, client in
            let device = try await connectedBoard(mock, client)
            let facts = await client.facts(for: try #require(BluetoothAddress(boardAddress)))
            #expect(facts.blueZAvailable && facts.adapterPowered && facts.connected && facts.servicesResolved)
            #expect(facts.device == device)
            let command = try #require(await client.characteristic(commandUUID.uppercased(), under: device))
            #expect(command.path.rawValue.hasSuffix("/service000c/char000d"))
            #expect(command.flags.contains("write-without-response"))
            let notify = try #require(await client.characteristic(notifyUUID, under: device))
            #expect(notify.flags.contains("notify"))
            #expect(notify.mtu == 247)
            #expect(notify.offersAcquireNotify == false)
            #expect(await client.characteristic("0000ffff-0000-1000-8000-00805f9b34fb", under: device) == nil)
        }
    }

    @Test func writesArriveWithTheExactBytesInOrderAsCommands() async throws {
        try await withMock { mock, client in
            let device = try await connectedBoard(mock, client)
            let command = try #require(await client.characteristic(commandUUID, under: device))
            let link = try await GattLink.open(busAddress: mock.bus.address)
            let packets: [[UInt8]] = (0..<20).map { [0x13, 0x03, UInt8($0), 0xFF, 0x00] }
            // Fire them concurrently-issued but in program order: the link keeps call order.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for packet in packets {
                    try await link.write(packet, to: command.path)
                }
                group.addTask { try await link.write([0x0F, 0x02, 0x01], to: command.path, withResponse: true) }
                try await group.waitForAll()
            }
            await link.close()
            let writes = try await mock.writes(boardAddress)
            #expect(writes.map(\.bytes) == packets + [[0x0F, 0x02, 0x01]])
            #expect(writes.dropLast().allSatisfy { $0.type == "command" })
            #expect(writes.last?.type == "request")
        }
    }

    @Test func startNotifyDeliversPropertiesChangedValues() async throws {
        try await withMock { mock, client in
            let device = try await connectedBoard(mock, client)
            let notify = try #require(await client.characteristic(notifyUUID, under: device))
            let link = try await GattLink.open(busAddress: mock.bus.address)
            let stream = try await link.notifications(from: notify)
            #expect(await link.activeDelivery == "StartNotify")
            #expect(try await mock.state(boardAddress)["Notifying"] == .boolean(true))
            let sent: [[UInt8]] = [[0x13, 0x05, 1, 0, 2, 0, 3, 0], [0x13, 0x05, 1, 0, 2, 0, 3, 0], [0x11, 0x8C, 99, 0x10, 0x10]]
            for bytes in sent { try await mock.notify(boardAddress, bytes) }
            var received: [[UInt8]] = []
            for await notification in stream {
                received.append(notification.bytes)
                if received.count == sent.count { break }
            }
            // Repeated identical values still arrive once each (BlueZ resets Value first).
            #expect(received == sent)
            await link.close()
            #expect(try await mock.state(boardAddress)["Notifying"] == .boolean(false))
        }
    }

    @Test func acquireNotifyDeliversDatagramsOverTheFileDescriptor() async throws {
        try await withMock { mock, client in
            let device = try await connectedBoard(mock, client, acquirable: true)
            let notify = try #require(await client.characteristic(notifyUUID, under: device))
            #expect(notify.offersAcquireNotify)
            let link = try await GattLink.open(busAddress: mock.bus.address)
            let stream = try await link.notifications(from: notify)
            #expect(await link.activeDelivery == "AcquireNotify")
            #expect(try await mock.state(boardAddress)["Acquired"] == .boolean(true))
            let sent: [[UInt8]] = (0..<50).map { [0x13, 0x05, UInt8($0), 0, 0, 0, 0, 0] }
            for bytes in sent { try await mock.notify(boardAddress, bytes) }
            // Collect everything until the stream ends (it must end when the link drops).
            let collector = Task {
                var received: [[UInt8]] = []
                for await notification in stream { received.append(notification.bytes) }
                return received
            }
            // Each Notify call returned after its datagram was queued, so hanging up now still
            // lets every datagram be read before the end of the stream.
            try await mock.call("DropLink", [.string(boardAddress)])
            let received = try await first(AsyncStream<[[UInt8]]> { continuation in
                Task { continuation.yield(await collector.value) }
            })
            #expect(received == sent)
            await link.close()
        }
    }

    /// Coalesced reading hands several datagrams over per wake-up, yet each keeps the time it
    /// arrived (the kernel's stamp), not the later time it was read.
    @Test func coalescedAcquireNotifyKeepsArrivalTimesAndOrder() async throws {
        try await withMock { mock, client in
            let device = try await connectedBoard(mock, client, acquirable: true)
            let notify = try #require(await client.characteristic(notifyUUID, under: device))
            let link = try await GattLink.open(busAddress: mock.bus.address)
            let (batches, continuation) = AsyncStream.makeStream(of: [GattNotification].self)
            try await link.subscribe(to: notify, coalescing: .milliseconds(400),
                                     onBatch: { continuation.yield($0) }, onEnd: { continuation.finish() })
            #expect(await link.activeDelivery == "AcquireNotify")
            var sentAt: [ContinuousClock.Instant] = []
            let sent: [[UInt8]] = (0..<6).map { [0x13, 0x05, UInt8($0)] }
            for bytes in sent {
                sentAt.append(.now)
                try await mock.notify(boardAddress, bytes)
            }
            try await mock.call("DropLink", [.string(boardAddress)])
            var received: [GattNotification] = []
            var batchCount = 0
            for await batch in batches {
                batchCount += 1
                received += batch
            }
            #expect(received.map(\.bytes) == sent)
            #expect(batchCount < sent.count)
            for (notification, sent) in zip(received, sentAt) {
                // Arrived after it was sent and long before the 400 ms coalescing pause ended.
                #expect(notification.receivedAt >= sent - .milliseconds(5))
                #expect(notification.receivedAt - sent < .milliseconds(300))
            }
            await link.close()
        }
    }

    /// A grouped `StartNotify` stream hands notifications on at once while a reader reads
    /// promptly (a flash-log readout: the board waits at each page's end for the answer to
    /// its last notification), the window open when that began included; grouping holds
    /// again afterwards.
    @Test func readingPromptlyHandsOnGroupedStartNotifyNotificationsAtOnce() async throws {
        try await withMock { mock, client in
            let device = try await connectedBoard(mock, client)
            let notify = try #require(await client.characteristic(notifyUUID, under: device))
            let link = try await GattLink.open(busAddress: mock.bus.address)
            let (batches, continuation) = AsyncStream.makeStream(of: [GattNotification].self)
            try await link.subscribe(to: notify, onBatch: { continuation.yield($0) }, onEnd: { continuation.finish() })
            #expect(await link.activeDelivery == "StartNotify")
            let received = ReceivedBatches()
            let collector = Task { for await batch in batches { received.append(batch.map(\.bytes)) } }
            func arrived(_ bytes: [UInt8]) -> Bool { received.all.contains(bytes) }
            // A window far longer than the test may wait: only its end or a prompt hand-off frees what it holds.
            await link.groupNotifications(.seconds(3600))
            try await mock.notify(boardAddress, [0x0B, 0x07, 0x01])
            try await waitUntil("the first notification, at once") { arrived([0x0B, 0x07, 0x01]) }
            await link.readPromptly(true)
            let readout: [[UInt8]] = [[0x0B, 0x07, 0x02], [0x0B, 0x07, 0x03], [0x0B, 0x0D]]
            for bytes in readout {
                try await mock.notify(boardAddress, bytes)
                try await waitUntil("\(bytes) handed on while reading promptly") { arrived(bytes) }
            }
            await link.readPromptly(false)
            let grouped: [[UInt8]] = [[0x0B, 0x07, 0x04], [0x0B, 0x07, 0x05], [0x0B, 0x07, 0x06]]
            for bytes in grouped { try await mock.notify(boardAddress, bytes) }
            // Closing hands on what the window still holds, after all read before its StopNotify's reply.
            await link.close()
            await collector.value
            #expect(received.batches.suffix(2) == [[grouped[0]], Array(grouped[1...])], "held together again")
            #expect(received.all == [[0x0B, 0x07, 0x01]] + readout + grouped)
        }
    }

    @Test func scriptedConnectFailuresAreClassified() async throws {
        try await withMock { mock, client in
            try await mock.addBoard(boardAddress)
            let address = try #require(BluetoothAddress(boardAddress))
            try await waitUntil("the device object") { await client.device(address) != nil }
            let device = try #require(await client.device(address)).path
            let cases: [(String, String, BlueZErrorClass)] = [
                ("org.bluez.Error.Failed", "le-connection-abort-by-local", .transientAbort),
                ("org.bluez.Error.InProgress", "In Progress", .inProgress),
                ("org.bluez.Error.NotReady", "Resource Not Ready", .adapterNotReady),
                ("org.bluez.Error.Failed", "Host is down", .failed),
                ("org.bluez.Error.NotPermitted", "Not Permitted", .notPermitted),
            ]
            for (name, message, expected) in cases {
                try await mock.call("FailNextConnect", [.string(boardAddress), .string(name), .string(message)])
                do {
                    try await client.connect(device, timeout: .seconds(10))
                    Issue.record("connect should have failed with \(name)")
                } catch let error as DBusError {
                    #expect(error.name == name)
                    #expect(BlueZErrorClass(error) == expected, "\(error)")
                }
            }
            // The device object vanishes: connecting on the old path means "rescan".
            try await mock.call("RemoveBoard", [.string(boardAddress)])
            try await waitUntil("the device to vanish") { await client.device(address) == nil }
            do {
                try await client.connect(device, timeout: .seconds(10))
                Issue.record("connect on a removed device should fail")
            } catch {
                #expect(BlueZErrorClass(any: error) == .deviceGone, "\(error)")
            }
        }
    }

    @Test func waitingForServicesFailsOnLinkLossAndRemoval() async throws {
        try await withMock { mock, client in
            try await mock.addBoard(boardAddress)
            let address = try #require(BluetoothAddress(boardAddress))
            try await waitUntil("the device object") { await client.device(address) != nil }
            let device = try #require(await client.device(address)).path
            // Never connected: removal while waiting ends the wait with UnknownObject.
            async let waiting: Void = client.waitForServicesResolved(device, timeout: eventually)
            try await Task.sleep(for: .milliseconds(200))
            try await mock.call("RemoveBoard", [.string(boardAddress)])
            do {
                try await waiting
                Issue.record("the wait should fail when the device is removed")
            } catch let error as DBusError {
                #expect(BlueZErrorClass(error) == .deviceGone)
            }
            // A short timeout is honoured.
            try await mock.addBoard(boardAddress)
            try await waitUntil("the device object") { await client.device(address) != nil }
            await #expect(throws: DBusError.self) {
                try await client.waitForServicesResolved(device, timeout: .milliseconds(300))
            }
        }
    }

    @Test func aBluetoothdRestartIsSeenAndTheMirrorIsRebuilt() async throws {
        try await withMock { mock, client in
            try await mock.addBoard(boardAddress)
            let address = try #require(BluetoothAddress(boardAddress))
            try await waitUntil("the device object") { await client.device(address) != nil }
            let changes = await client.changes(for: "the test")
            mock.killService()
            _ = try await first(changes) { $0 == .serviceAvailable(false) }
            try await waitUntil("the mirror to empty") { await client.adapters().isEmpty }
            #expect(await client.isServiceAvailable == false)
            #expect(await client.facts(for: address).blueZAvailable == false)
            try await mock.startService()
            _ = try await first(changes) { $0 == .serviceAvailable(true) }
            try await waitUntil("the adapter to come back") { await client.adapters().count == 1 }
            #expect(await client.device(address) == nil)
            try await mock.addBoard(boardAddress)
            try await waitUntil("the device object again") { await client.device(address) != nil }
        }
    }

    @Test func aReaderThatFallsBehindGetsTheWaitingChangesThenOneMarkAndTheLapseIsReported() async throws {
        try await withMock { mock, client in
            // The mirror's first snapshot reaches the readers as changes too: let it pass first.
            let settling = await client.changes(for: "the settling reader")
            try await mock.addBoard("D1:5E:AA:01:02:00")
            _ = try await first(settling) {
                if case .object(.interfacesAdded(let path, _)) = $0 { return path.rawValue.hasSuffix("dev_D1_5E_AA_01_02_00") }
                return false
            }
            let slow = await client.changes(for: "the slow reader", backlogLimit: 2)
            let witness = await client.changes(for: "the witness")
            // Five boards appear (one InterfacesAdded each) while the slow reader reads nothing.
            let addresses = (1...5).map { "D1:5E:AA:01:02:0\($0)" }
            for address in addresses { try await mock.addBoard(address) }
            var seen = 0
            for await change in witness {
                if case .object(.interfacesAdded) = change { seen += 1 }
                if seen == addresses.count { break }
            }
            // The client handed the fifth change to every reader before answering this.
            _ = await client.isServiceAvailable

            let behind = try await first(client.lapses)
            #expect(behind == BlueZChangesLapse(subscriber: "the slow reader", limit: 2, leftOut: nil))
            // The two oldest, then the mark in place of the other three; nothing more waits.
            var reader = slow.makeAsyncIterator()
            var delivered: [String] = []
            for _ in 0..<2 {
                if case .object(.interfacesAdded(let path, _)) = await reader.next() { delivered.append(path.rawValue) }
            }
            #expect(delivered == addresses.prefix(2).map { "/org/bluez/hci0/dev_" + $0.replacingOccurrences(of: ":", with: "_") })
            #expect(await reader.next() == .missedChanges)
            let caughtUp = try await first(client.lapses)
            #expect(caughtUp == BlueZChangesLapse(subscriber: "the slow reader", limit: 2, leftOut: 3))
            #expect(caughtUp.description.contains("3 change(s) were left out"))
            // What the left-out changes announced is in the mirror, where the mark sends the reader.
            #expect(Set(await client.devices().map(\.address.rawValue)).isSuperset(of: addresses))

            // Caught up, it gets every change again.
            try await mock.addBoard("D1:5E:AA:01:02:06")
            guard case .object(.interfacesAdded(let path, _)) = await reader.next() else {
                Issue.record("the change after the mark did not arrive as a change")
                return
            }
            #expect(path.rawValue == "/org/bluez/hci0/dev_D1_5E_AA_01_02_06")
        }
    }
}

/// Notification batches as a consumer received them (any thread).
private final class ReceivedBatches: Sendable {
    private let state = Mutex<[[[UInt8]]]>([])

    func append(_ batch: [[UInt8]]) { state.withLock { $0.append(batch) } }
    var batches: [[[UInt8]]] { state.withLock { $0 } }
    var all: [[UInt8]] { Array(batches.joined()) }
}
