import Foundation
import Testing

/// A private `dbus-daemon` for tests: started on a Unix socket in a fresh temporary
/// directory with a permissive policy, stopped (and the directory removed) by ``stop()`` or
/// when the object is released.
///
/// Copied from GatewayTests (test targets cannot share sources); keep the copies in step.
/// ```swift
/// let bus = try TestBus()
/// defer { bus.stop() }
/// let connection = try await DBusConnection(address: bus.address)
/// ```
/// Child processes started with ``environment`` see the bus as both system and session bus.
final class TestBus: @unchecked Sendable {
    /// The bus address, e.g. `unix:path=/tmp/.../bus,guid=...`.
    let address: String
    /// The daemon's process id (for CPU accounting in benchmarks).
    let pid: Int32
    /// The temporary directory holding the config and socket.
    let directory: URL
    private let process: ChildProcess
    private let lock = NSLock()
    private var stopped = false

    /// Whether `dbus-daemon` is installed (tests skip cleanly otherwise).
    static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: daemonPath) }
    static let daemonPath = "/usr/bin/dbus-daemon"

    init() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwgate-bus-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let socket = directory.appendingPathComponent("bus").path
        let config = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <keep_umask/>
              <listen>unix:path=\(socket)</listen>
              <auth>EXTERNAL</auth>
              <limit name="max_incoming_bytes">1000000000</limit>
              <limit name="max_outgoing_bytes">1000000000</limit>
              <limit name="max_message_size">33554432</limit>
              <limit name="max_replies_per_connection">100000</limit>
              <policy context="default">
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
                <allow user="*"/>
              </policy>
            </busconfig>
            """
        let configURL = directory.appendingPathComponent("bus.conf")
        try config.write(to: configURL, atomically: true, encoding: .utf8)
        let process = try ChildProcess(Self.daemonPath,
                                       ["--config-file=\(configURL.path)", "--nofork", "--print-address=1", "--nopidfile"],
                                       environment: ProcessInfo.processInfo.environment)
        self.process = process
        pid = process.pid
        // The daemon prints its address once it listens.
        let text = process.readLine().trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix("unix:") else {
            process.terminate(SIGKILL)
            throw TestBusError(message: "dbus-daemon did not print an address (got '\(text)')")
        }
        address = text
    }

    deinit { stop() }

    /// Environment for child processes: this bus as system and session bus.
    var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = address
        environment["DBUS_SESSION_BUS_ADDRESS"] = address
        return environment
    }

    /// Kills the daemon and removes the directory. Idempotent.
    func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        process.terminate()
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs a command with this bus in its environment and returns its standard output.
    /// Throws when it exits non-zero.
    @discardableResult
    func run(_ executable: String, _ arguments: [String]) throws -> String {
        let child = try startChild(executable, arguments)
        // The tools used here write little to stderr, so reading the pipes in turn is safe.
        let output = child.output.readDataToEndOfFile()
        let errors = child.errors.readDataToEndOfFile()
        let status = child.wait()
        guard status == 0 else {
            throw TestBusError(message: "\(executable) \(arguments.joined(separator: " ")) exited \(status): \(String(decoding: errors, as: UTF8.self))")
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Starts a long-running peer (e.g. a python3-dbus service) on this bus.
    func startChild(_ executable: String, _ arguments: [String]) throws -> ChildProcess {
        try ChildProcess(executable, arguments, environment: environment)
    }
}

struct TestBusError: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}
