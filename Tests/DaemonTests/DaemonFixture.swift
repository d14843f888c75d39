import Foundation
import Glibc
import TestSupport

/// A whole gateway as separate processes: a private dbus-daemon, `mwsim` with two boards on
/// it, and the built `mwgated` with a test notify socket and a test journal socket.
final class DaemonFixture: @unchecked Sendable {
    let directory: URL
    let bus: TestBus
    let simulator: ChildProcess
    let notify: DatagramCollector
    let journal: DatagramCollector
    private(set) var daemon: ChildProcess?

    static let nmeaCapture: String = {
        let repo = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        return repo.deletingLastPathComponent().appendingPathComponent("shared/testdata/nmea/quectel-l76k-nmea.log").path
    }()

    static func executable(_ name: String) throws -> String { try BuiltExecutable.path(name) }

    var stateDirectory: String { directory.appendingPathComponent("state").path }
    var configurationFile: String { directory.appendingPathComponent("mwgated.toml").path }

    /// `extraConfiguration` is appended to the TOML file (e.g. a `[sink]` table).
    init(sessionMode: String = "always", simulatorFaults: [String] = [], extraConfiguration: String = "") throws {
        // Unix socket paths are limited to 108 bytes: keep the directory short.
        directory = URL(fileURLWithPath: "/tmp/mwgd-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        bus = try TestBus()
        simulator = try bus.startChild(try Self.executable("mwsim"),
                                       ["--bus", bus.address, "--boards", "2", "--model", "mixed", "--discovery-delay", "0.2", "--quiet"]
                                           + simulatorFaults.flatMap { ["--fault", $0] })
        notify = try DatagramCollector(path: directory.appendingPathComponent("notify").path)
        journal = try DatagramCollector(path: directory.appendingPathComponent("journal").path)
        // The capture lasts 30 s, less than a start takes on a loaded machine: ten minutes of it.
        let capture = directory.appendingPathComponent("gnss.nmea").path
        try LoopedNMEACapture.write(from: Self.nmeaCapture, to: capture, repeats: 20)
        let config = """
            [boards]
            gyro_rate = 50

            [gnss]
            source = "file:\(capture)"

            [session]
            mode = "\(sessionMode)"

            \(extraConfiguration)
            """
        try config.write(toFile: configurationFile, atomically: true, encoding: .utf8)
    }

    /// Starts mwgated with the watchdog on (`WATCHDOG_USEC`), systemd's directories set and
    /// the journal pointed at the test socket.
    /// `credentials` (name -> content) are delivered as systemd does for `LoadCredential=`:
    /// files readable only by the service in a directory named by `CREDENTIALS_DIRECTORY`.
    func startDaemon(watchdog: Duration = .seconds(2), withConfigurationFile: Bool = true, credentials: [String: String] = [:]) throws {
        var environment = bus.environment
        if !credentials.isEmpty {
            let store = directory.appendingPathComponent("credentials").path
            try FileManager.default.createDirectory(atPath: store, withIntermediateDirectories: true)
            for (name, content) in credentials {
                let file = store + "/" + name
                try content.write(toFile: file, atomically: false, encoding: .utf8)
                chmod(file, 0o400)
            }
            chmod(store, 0o500)
            environment["CREDENTIALS_DIRECTORY"] = store
        }
        environment["NOTIFY_SOCKET"] = notify.path
        environment["WATCHDOG_USEC"] = "\(watchdog.components.seconds * 1_000_000)"
        environment["MWGATE_JOURNAL_SOCKET"] = journal.path
        environment["STATE_DIRECTORY"] = stateDirectory
        environment["RUNTIME_DIRECTORY"] = directory.appendingPathComponent("run").path
        environment["CONFIGURATION_DIRECTORY"] = withConfigurationFile ? directory.path : directory.appendingPathComponent("etc").path
        daemon = try ChildProcess(try Self.executable("mwgated"), withConfigurationFile ? ["--config", configurationFile] : [],
                                  environment: environment)
    }

    /// Journal entries carrying `id` (a MessageID's hex).
    func entries(withMessageID id: String) -> [[String: String]] {
        journal.journalEntries.filter { $0["MESSAGE_ID"] == id }
    }

    /// Why the daemon's stop was not clean, for CI's log: how it ended (an exit status or the
    /// signal that killed it), its last error-or-worse journal entries, and its standard error
    /// (a crash's message lands there, not in the journal). Call after it was reaped.
    func stopFailure(of daemon: ChildProcess) -> String {
        let serious = journal.journalEntries.filter { Int($0["PRIORITY"] ?? "") ?? 7 <= 3 }.suffix(10)
            .map { "  [\($0["PRIORITY"] ?? "?")] \($0["MESSAGE"] ?? "")" }
        let errors = String(decoding: daemon.errors.readDataToEndOfFile(), as: UTF8.self).split(separator: "\n").suffix(30)
        return "mwgated: \(daemon.exitDescription)\nlast error entries in its journal:\n"
            + (serious.isEmpty ? "  (none)" : serious.joined(separator: "\n"))
            + "\nits standard error:\n" + (errors.isEmpty ? "  (empty)" : errors.map { "  " + $0 }.joined(separator: "\n"))
    }

    /// Runs `sqlite3` on the buffer.
    func query(_ sql: String) throws -> String {
        try bus.runBlocking("/usr/bin/sqlite3", [stateDirectory + "/buffer.sqlite", sql]).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func tearDown() {
        daemon?.terminate(SIGKILL)
        simulator.terminate()
        notify.close()
        journal.close()
        bus.stop()
        chmod(directory.appendingPathComponent("credentials").path, 0o700)
        try? FileManager.default.removeItem(at: directory)
    }
}
