import DBus
import Foundation
import Testing

/// Generous bound for "it eventually happens" on a loaded 2-core machine.
let eventually: Duration = .seconds(30)

/// python3-dbusmock running our MetaWear BlueZ template (Fixtures/metawear_bluez.py) on a
/// private bus: an independent implementation of BlueZ's D-Bus surface.
final class MockBlueZ: @unchecked Sendable {
    static let python = "/usr/bin/python3"
    static let template = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../BlueZTests/Fixtures/metawear_bluez.py").standardized.path

    /// Whether python3 with dbusmock is installed (tests are skipped otherwise).
    static var isAvailable: Bool {
        TestBus.isAvailable && FileManager.default.isExecutableFile(atPath: python)
            && FileManager.default.fileExists(atPath: "/usr/lib/python3/dist-packages/dbusmock/__init__.py")
    }

    let bus: TestBus
    let control: DBusConnection
    private var process: ChildProcess?

    /// Starts the bus, a control connection and the mock (waiting until it owns org.bluez).
    init() async throws {
        bus = try TestBus()
        control = try await DBusConnection(address: bus.address)
        try await startService()
    }

    deinit { stop() }

    /// Starts (or restarts) the mock as a new bluetoothd would: a new unique name, fresh objects.
    func startService() async throws {
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
    func killService() {
        process?.terminate(SIGKILL)
        process = nil
    }

    func stop() {
        killService()
        control.close()
        bus.stop()
    }

    @discardableResult
    func call(_ member: String, _ arguments: [DBusValue] = []) async throws -> DBusMessage {
        try await control.call(destination: "org.bluez", path: "/", interface: "org.mwgate.BlueZMock", member: member,
                               arguments: arguments, timeout: .seconds(10))
    }

    func addBoard(_ address: String, name: String = "MetaWear") async throws {
        try await call("AddBoard", [.string(address), .string(name)])
    }

    func writes(_ address: String) async throws -> [(bytes: [UInt8], type: String)] {
        let reply = try await call("Writes", [.string(address)])
        guard case .array(_, let items)? = reply.body.first else {
            throw TestBusError(message: "Writes returned \(reply.signature)")
        }
        return try items.map { item in
            let fields = try item.structFields(count: 2)
            return (try fields[0].as([UInt8].self), try fields[1].as(String.self))
        }
    }

    func state(_ address: String) async throws -> [String: DBusValue] {
        try await call("State", [.string(address)]).decode([String: DBusValue].self)
    }

    func notify(_ address: String, _ bytes: [UInt8]) async throws {
        try await call("Notify", [.string(address), bytes.dbusValue])
    }
}

/// Polls `condition` until it holds, failing after `limit`.
func waitUntil(_ what: String, within limit: Duration = eventually,
               _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TestBusError(message: "timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// The first element of `stream` satisfying `predicate`, failing after `limit`.
func first<S: AsyncSequence & Sendable>(_ stream: S, within limit: Duration = eventually,
                                        where predicate: @escaping @Sendable (S.Element) -> Bool = { _ in true })
    async throws -> S.Element where S.Element: Sendable
{
    try await withThrowingTaskGroup(of: S.Element?.self) { group in
        group.addTask {
            for try await element in stream where predicate(element) { return element }
            return nil
        }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let result = try await group.next(), let element = result else {
            throw TestBusError(message: "nothing arrived within \(limit)")
        }
        return element
    }
}
