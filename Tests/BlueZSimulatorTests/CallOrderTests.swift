@testable import BlueZSimulator
import DBus
import Foundation
import TestSupport
import Testing

/// mwsim handles one connection's calls in arrival order, as bluetoothd's main loop does.
@Suite(.enabled(if: TestBus.isAvailable))
struct CallOrderTests {
    @Test func writesInFlightTogetherReachTheBoardInTheOrderSent() async throws {
        try await SimulatorHarness.with { harness in
            let device = try await harness.connect(0)
            let characteristic = try DBusObjectPath(device.rawValue + "/service000c/char000d")
            // Commands of a module the board does not have: logged, otherwise ignored.
            let writes: [[UInt8]] = (0..<50).map { [0x77, 0x01, UInt8($0)] }
            // All but the last sent without waiting for an answer: in flight together. The
            // first is acknowledged (answered a connection event later), the others are not.
            for (index, bytes) in writes.dropLast().enumerated() {
                try harness.client.send(.methodCall(destination: "org.bluez", path: characteristic,
                                                    interface: "org.bluez.GattCharacteristic1", member: "WriteValue", body: [
                    .array(element: .byte, bytes.map { .byte($0) }),
                    .dictionary(key: .string, value: .variant, [
                        DBusDictionaryEntry(key: .string("type"), value: .variant(.string(index == 0 ? "request" : "command"))),
                    ]),
                ]))
            }
            try await harness.write(device, writes[writes.count - 1])
            let logged = try await harness.simulator.commandLog(0)
            let misplaced = zip(logged, writes).first { $0 != $1 }.map { "\($0)" } ?? "none"
            #expect(logged == writes, "\(logged.count) written, first out of place: \(misplaced)")
        }
    }
}
