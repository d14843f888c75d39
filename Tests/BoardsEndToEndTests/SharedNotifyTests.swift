import BlueZ
@testable import BlueZSimulator
import Boards
import DBus
import Foundation
import MetaWear
import TestSupport
import Testing

/// Another program on the gateway (bleak, a debugging tool) holds a StartNotify session on the
/// board: bluetoothd refuses AcquireNotify, so mwgated streams through StartNotify too, and
/// bluetoothd 5.66 signals every notification once per notify client (found in the real-BlueZ
/// VM: every sample recorded twice, docs/bluez-vm.md). The simulated bluetoothd does the same.
@Suite(.serialized, .enabled(if: TestBus.isAvailable))
struct SharedNotifyTests {
    @Test(.timeLimit(.minutes(3)))
    func everySampleOnceBesideAnotherNotifyClientAndAfterItLeft() async throws {
        try await EndToEndRig.with { rig in
            let address = try await rig.address(0)
            // The other client: its own bus connection, connects the board and subscribes.
            let other = try await DBusConnection(address: rig.bus.address)
            let (_, characteristic) = try await rig.connectedNotifyCharacteristic(0) { device in
                _ = try await other.call(destination: BlueZNames.service, path: device, interface: BlueZNames.device,
                                         member: "Connect", timeout: .seconds(20))
            }
            _ = try await other.call(destination: BlueZNames.service, path: characteristic.path,
                                     interface: BlueZNames.gattCharacteristic, member: "StartNotify", timeout: .seconds(5))

            let manager = BoardManager(client: rig.client, defaultOptions: try testOptions())
            async let managerRun: Void = manager.run()
            let recorder = EventRecorder()
            let forwarder = recordEvents(manager.events, into: recorder)
            await manager.add(address)
            try await waitUntil("streaming") { recorder.isStreaming(address) && recorder.samples(address).count > 100 }
            let copies = try await rig.simulator.notifySessionCount(0)
            #expect(copies == 2, "two StartNotify sessions (the other client's and the gateway's): \(copies)")
            try await Task.sleep(for: .seconds(2))
            let shared = recorder.samples(address).count

            other.close()
            try await waitUntil("the other client's session gone") {
                try await rig.simulator.notifySessionCount(0) == 1
            }
            try await Task.sleep(for: .seconds(2))

            let stats = try await rig.simulator.stats(0)
            let lastIndex = try #require(stats.lastSampleIndex[.gyro])
            try await waitUntil("sample \(lastIndex) delivered", within: .seconds(10)) {
                recorder.samples(address).contains { sampleIndex($0) >= lastIndex }
            }
            await manager.shutdown()
            await managerRun
            await forwarder.value

            let samples = recorder.samples(address).filter { sampleIndex($0) <= lastIndex }
            let indices = samples.map(sampleIndex)
            #expect(shared > 200, "streamed beside the other client: \(shared) samples")
            #expect(Set(indices).count == indices.count,
                    "every sample once: \(indices.count - Set(indices).count) of \(indices.count) recorded twice")
            #expect(samples.count == stats.samplesEmitted[.gyro], "received \(samples.count) of \(stats.samplesEmitted[.gyro] ?? 0)")
            expectStrictlyIncreasing(samples, board: "MetaMotion R")
            #expect(expectExactValues(samples, seed: 1, board: "MetaMotion R") == 0)
        }
    }
}

extension BlueZSimulator {
    /// Test hook: how many StartNotify sessions board `index`'s notify characteristic has.
    func notifySessionCount(_ index: Int) throws -> Int {
        try device(index).notifySessions.count
    }
}
