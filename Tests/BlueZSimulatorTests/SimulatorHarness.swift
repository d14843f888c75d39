@testable import BlueZSimulator
import DBus
import Foundation
import MetaWearBoardModel
import TestSupport
import Testing

/// A private bus with an in-process simulator and a client connection (our DBus wrapper, used
/// here only as a generic D-Bus client; the main flow is also checked with python3-dbus).
final class SimulatorHarness: @unchecked Sendable {
    let bus: TestBus
    let simulator: BlueZSimulator
    let client: DBusConnection
    let logLines: LockedLines

    private init(bus: TestBus, simulator: BlueZSimulator, client: DBusConnection, logLines: LockedLines) {
        self.bus = bus
        self.simulator = simulator
        self.client = client
        self.logLines = logLines
    }

    /// Runs a command with the bus in its environment on its own thread (a blocking wait on
    /// the cooperative pool could starve the simulator on a 2-core machine).
    func run(_ executable: String, _ arguments: [String]) async throws -> String {
        try await withCheckedThrowingContinuation { continuation in
            let bus = self.bus
            let thread = Thread {
                do { continuation.resume(returning: try bus.runBlocking(executable, arguments)) } catch { continuation.resume(throwing: error) }
            }
            thread.start()
        }
    }

    /// Runs `body` with a fresh harness (the simulator running on a private bus) and always
    /// stops it.
    static func with(boards: Int = 1, model: SimulatorConfiguration.Model = .metamotionR,
                     configure: (inout SimulatorConfiguration) -> Void = { _ in },
                     _ body: (SimulatorHarness) async throws -> Void) async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        var configuration = SimulatorConfiguration(busAddress: bus.address, boards: boards, model: model)
        configuration.discoveryDelay = .milliseconds(50)
        configuration.rssiInterval = .milliseconds(200)
        let lines = LockedLines()
        configuration.log = { lines.append($0) }
        configure(&configuration)
        try await BlueZSimulator.withRunning(configuration) { simulator in
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            try await body(SimulatorHarness(bus: bus, simulator: simulator, client: client, logLines: lines))
        }
    }

    static let timeout: Duration = .seconds(20)

    func call(_ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = [],
              destination: String = "org.bluez") async throws -> DBusMessage {
        try await client.call(destination: destination, path: path, interface: interface, member: member,
                              arguments: arguments, timeout: Self.timeout)
    }

    func control(_ member: String, _ arguments: [DBusValue] = []) async throws -> DBusMessage {
        try await call(SimulatorControlInterface.path, SimulatorControlInterface.interfaceName, member, arguments,
                       destination: "io.mwgate.Simulator")
    }

    func property(_ path: DBusObjectPath, _ interface: String, _ name: String) async throws -> DBusValue {
        let reply = try await call(path, DBusStandardInterface.properties, "Get", [.string(interface), .string(name)])
        return try reply.decode(DBusValue.self).unwrappingVariants
    }

    /// Polls until `condition` holds (generous timeout for a loaded machine).
    func eventually(_ what: String, timeout: Duration = .seconds(15), _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(25))
        }
        Issue.record("timed out waiting for \(what)")
        throw TestBusError(message: "timed out waiting for \(what)")
    }

    /// Discovers and connects board `index`; returns its device path once ServicesResolved.
    func connect(_ index: Int) async throws -> DBusObjectPath {
        let path = try await simulator.boardInfo(index).path
        _ = try? await call("/org/bluez/hci0", "org.bluez.Adapter1", "StartDiscovery")
        try await eventually("device \(path) discovered") {
            (try? await property(path, "org.bluez.Device1", "Address")) != nil
        }
        _ = try await call(path, "org.bluez.Device1", "Connect")
        try await eventually("ServicesResolved") {
            try await property(path, "org.bluez.Device1", "ServicesResolved") == .boolean(true)
        }
        return path
    }

    /// Connects board `index` (a BMI160 board), subscribes to its notify characteristic's
    /// values with StartNotify and starts its gyro at 100 Hz: its device path and the value
    /// changes from then on.
    func gyroStream(_ index: Int) async throws -> (device: DBusObjectPath, values: AsyncThrowingStream<DBusPropertiesChanged, any Error>) {
        let path = try await connect(index)
        let values = try await client.propertiesChanged(sender: "org.bluez", pathNamespace: try notifyPath(path),
                                                        interface: "org.bluez.GattCharacteristic1")
        _ = try await call(try notifyPath(path), "org.bluez.GattCharacteristic1", "StartNotify")
        for command in gyroStart100HzBMI160 { try await write(path, command) }
        return (path, values)
    }

    /// Writes command bytes to the MetaWear command characteristic.
    func write(_ device: DBusObjectPath, _ bytes: [UInt8], type: String = "command") async throws {
        let path = try DBusObjectPath(device.rawValue + "/service000c/char000d")
        _ = try await call(path, "org.bluez.GattCharacteristic1", "WriteValue", [
            .array(element: .byte, bytes.map { .byte($0) }),
            .dictionary(key: .string, value: .variant, [DBusDictionaryEntry(key: .string("type"), value: .variant(.string(type)))]),
        ])
    }

    func notifyPath(_ device: DBusObjectPath) throws -> DBusObjectPath {
        try DBusObjectPath(device.rawValue + "/service000c/char000f")
    }

    func stats(_ index: Int) async throws -> [String: DBusValue] {
        try await control("GetStats", [.uint32(UInt32(index))]).decode([String: DBusValue].self)
    }
}

/// Thread-safe line collector for the simulator's log.
final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
}

/// The gyro start sequence for 100 Hz, ±2000 °/s on a BMI160 board, as literal bytes from
/// metawear-protocol.md §4.2/§4.3/§10.1: config `13 03 28 00`, subscribe `13 05 01`,
/// interrupt `13 02 01 00`, power `13 01 01`.
let gyroStart100HzBMI160: [[UInt8]] = [[0x13, 0x03, 0x28, 0x00], [0x13, 0x05, 0x01], [0x13, 0x02, 0x01, 0x00], [0x13, 0x01, 0x01]]

/// Sample index (mod 2^16) and y/z of a single-sample gyro notification `13 05 x y z`.
func decodeGyro(_ bytes: [UInt8]) -> (index: UInt16, y: Int16, z: Int16)? {
    guard bytes.count == 8, bytes[0] == 0x13, bytes[1] == 0x05 else { return nil }
    func int16(_ at: Int) -> UInt16 { UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8 }
    return (int16(2), Int16(bitPattern: int16(4)), Int16(bitPattern: int16(6)))
}

func bytesFromHex(_ text: String) -> [UInt8] {
    var bytes: [UInt8] = []
    var index = text.startIndex
    while index < text.endIndex, let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex) {
        if let byte = UInt8(text[index..<next], radix: 16) { bytes.append(byte) }
        index = next
    }
    return bytes
}

extension DBusValue {
    var uint64Value: UInt64? { if case .uint64(let v) = unwrappingVariants { v } else { nil } }
    var int64Value: Int64? { if case .int64(let v) = unwrappingVariants { v } else { nil } }
}
