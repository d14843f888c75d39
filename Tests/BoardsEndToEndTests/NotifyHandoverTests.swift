import BlueZ
import DBus
import Foundation
import MetaWear
import TestSupport
import Testing

/// A quick reconnect opens the new link while BlueZ may still count the notify channel as
/// acquired by the link just closed (it frees it only once it sees that fd hang up). The new
/// link must wait for it instead of falling back: StartNotify is refused while the notify is
/// acquired, and a board left on StartNotify streams through the bus for the whole connection
/// (slower, and seconds behind on a loaded gateway, so a session stop cuts its tail).
@Suite(.serialized, .enabled(if: TestBus.isAvailable))
struct NotifyHandoverTests {
    @Test func aNewLinkWaitsForTheClosedLinksNotifyInsteadOfFallingBack() async throws {
        try await EndToEndRig.with { rig in
            let (_, characteristic) = try await rig.connectedNotifyCharacteristic(0)

            let old = try await GattLink.open(busAddress: rig.bus.address)
            try await old.subscribe(to: characteristic, onBatch: { _ in }, onEnd: {})
            #expect(await old.activeDelivery == "AcquireNotify")

            let new = try await GattLink.open(busAddress: rig.bus.address)
            // The old link goes away while the new one subscribes (a reconnect racing the
            // teardown of the previous link).
            let closing = Task {
                try? await Task.sleep(for: .milliseconds(150))
                await old.close()
            }
            try await new.subscribe(to: characteristic, onBatch: { _ in }, onEnd: {})
            await closing.value
            #expect(await new.activeDelivery == "AcquireNotify")
            await new.close()
        }
    }
}
