import DBus
import Foundation
import Testing

/// python3-dbusmock running our MetaWear BlueZ template (Fixtures/metawear_bluez.py) on a
/// private bus: an independent implementation of BlueZ's D-Bus surface.
public final class MockBlueZ: @unchecked Sendable {
    public static let python = "/usr/bin/python3"
    public static let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("Fixtures/metawear_bluez.py").path

    /// Whether python3 with dbusmock is installed (tests are skipped otherwise).
    public static var isAvailable: Bool {
        TestBus.isAvailable && FileManager.default.isExecutableFile(atPath: python)
            && FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/dbusmock/__init__.py")
    }

    public let bus: TestBus
    public let control: DBusConnection
    private var process: ChildProcess?

    /// Starts the bus, a control connection and the mock (waiting until it owns org.bluez).
    public init() async throws {
        bus = try TestBus()
        control = try await DBusConnection(address: bus.address)
        try await startService()
    }

    deinit { stop() }

    /// Starts (or restarts) the mock as a new bluetoothd would: a new unique name, fresh objects.
    public func startService() async throws {
        process = try bus.startChild(Self.python, ["-m", "dbusmock", "--system", "--template", Self.template])
        let deadline = ContinuousClock.now + eventually
        while try await control.nameOwner("org.bluez") == nil {
            guard ContinuousClock.now < deadline else {
                throw TestBusError(message: "dbusmock did not take org.bluez")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Kills the mock: org.bluez loses its owner (bluetoothd stopped).
    public func killService() {
        process?.terminate(SIGKILL)
        process = nil
    }

    public func stop() {
        killService()
        control.close()
        bus.stop()
    }

    @discardableResult
    public func call(_ member: String, _ arguments: [DBusValue] = []) async throws -> DBusMessage {
        try await control.call(destination: "org.bluez", path: "/", interface: "org.mwgate.BlueZMock", member: member,
                               arguments: arguments, timeout: .seconds(10))
    }

    public func addBoard(_ address: String, name: String = "MetaWear") async throws {
        try await call("AddBoard", [.string(address), .string(name)])
    }

    public func writes(_ address: String) async throws -> [(bytes: [UInt8], type: String)] {
        let reply = try await call("Writes", [.string(address)])
        guard case .array(_, let items)? = reply.body.first else {
            throw TestBusError(message: "Writes returned \(reply.signature)")
        }
        return try items.map { item in
            let fields = try item.structFields(count: 2)
            return (try fields[0].as([UInt8].self), try fields[1].as(String.self))
        }
    }

    public func state(_ address: String) async throws -> [String: DBusValue] {
        try await call("State", [.string(address)]).decode([String: DBusValue].self)
    }

    public func notify(_ address: String, _ bytes: [UInt8]) async throws {
        try await call("Notify", [.string(address), bytes.dbusValue])
    }
}
