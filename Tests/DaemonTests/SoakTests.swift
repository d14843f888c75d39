import Foundation
import Testing
import TestSupport

/// The short form of `make soak` (scripts/soak/soak.py, docs/soak.md): mwsim with four boards
/// of both chip profiles at 100 Hz, an NMEA replay over TCP, PostgreSQL behind a fault proxy
/// and mwgated under a restarting supervisor, with every fault kind injected once or more
/// while sessions record. Every gyro sample the boards handed to mwgated is looked up in the
/// upstream: a loss outside a fault's window, any duplicate, a failed integrity_check or a
/// non-zero exit of mwgated at SIGTERM fails it. Runs in the second (server) pass of
/// scripts/run-tests.sh; `SOAK_SEED=N` replays another seed.
@Suite("Soak with faults (short form)")
struct SoakTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static var missing: String? {
        if !FileManager.default.isExecutableFile(atPath: "/usr/lib/postgresql/15/bin/postgres") {
            return "PostgreSQL 15 server not installed (Debian package postgresql-15)"
        }
        if (try? Process.run(URL(fileURLWithPath: "/usr/bin/python3"), arguments: ["-c", "import dbus"]).waitUntilExitAndStatus()) != 0 {
            return "Debian's python3-dbus is not installed"
        }
        return nil
    }

    @Test("60 s of faults against PostgreSQL: no unexplained loss, no duplicate, intact buffer, clean exit",
          .enabled(if: missing == nil, "\(missing ?? "")"), .timeLimit(.minutes(10)))
    func shortSoak() async throws {
        let bin = URL(fileURLWithPath: try DaemonFixture.executable("mwgated")).deletingLastPathComponent().path
        let seed = ProcessInfo.processInfo.environment["SOAK_SEED"] ?? "20261121"
        let report = FileManager.default.temporaryDirectory.appendingPathComponent("mwgate-soak-\(getpid()).md")
        let arguments = [Self.repository.appendingPathComponent("scripts/soak/soak.py").path,
                         "--seconds", "60", "--sink", "postgres", "--seed", seed, "--bin", bin,
                         "--fault-interval", "8", "--rss-warmup", "20", "--out", report.path]
        // A minute of waiting for the driver: on a thread of its own, not the test pool's (the
        // checks stay here, in the test's own context).
        let (status, text) = try await onOwnThread { try Self.runDriver(arguments) }
        let markdown = (try? String(contentsOf: report, encoding: .utf8)) ?? ""
        // The failures first (the report's tables are long), then the run's last output.
        let failures = markdown.components(separatedBy: "**Failures**").dropFirst().first?.components(separatedBy: "<details>").first ?? ""
        #expect(status == 0, "soak failed (seed \(seed), report kept at \(report.path)):\(failures)\n\(text.suffix(4000))")
        // The report really compared samples: some were emitted and delivered.
        #expect(markdown.contains("| **all** |"), "no per-board table in the report:\n\(markdown)")
        if status == 0 { try? FileManager.default.removeItem(at: report) }
    }

    /// Runs the soak driver to its end; its exit status and output.
    static func runDriver(_ arguments: [String]) throws -> (Int32, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        try Spawning.run(process)
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitForExit()
        return (process.terminationStatus, text)
    }
}

extension Process {
    fileprivate func waitUntilExitAndStatus() -> Int32 {
        waitForExit()
        return terminationStatus
    }
}
