import Daemon
import Foundation
import Gateway
import Glibc
import ServiceSupport
import StatusModel
import TestSupport
import Testing

/// mwgated as a real process on a private bus with mwsim: configuration errors, readiness,
/// the watchdog, journald fields, and a SIGTERM during a session that loses nothing.
@Suite(.serialized, .enabled(if: TestBus.isAvailable))
struct DaemonProcessTests {
    func runDaemon(_ arguments: [String]) throws -> (status: Int32, output: String, errors: String) {
        var environment = ProcessInfo.processInfo.environment
        environment["STATE_DIRECTORY"] = FileManager.default.temporaryDirectory.appendingPathComponent("mwgd-unused").path
        environment["CONFIGURATION_DIRECTORY"] = "/nonexistent-mwgate"
        let child = try ChildProcess(try DaemonFixture.executable("mwgated"), arguments, environment: environment)
        let output = String(decoding: child.output.readDataToEndOfFile(), as: UTF8.self)
        let errors = String(decoding: child.errors.readDataToEndOfFile(), as: UTF8.self)
        return (child.wait(), output, errors)
    }

    func writeConfig(_ text: String) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("mwgated-\(UUID().uuidString.prefix(8)).toml").path
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Bytes in the buffer's segment journal files (`buffer.sqlite-segments-N`; not the spare
    /// a retired one leaves, which holds nothing to recover).
    static func segmentJournalBytes(_ stateDirectory: String) -> Int {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: stateDirectory)) ?? []
        return names.filter { $0.hasPrefix("buffer.sqlite-segments-") && Int($0.dropFirst("buffer.sqlite-segments-".count)) != nil }
            .reduce(0) { total, name in
            let size = (try? FileManager.default.attributesOfItem(atPath: stateDirectory + "/" + name))?[.size] as? NSNumber
            return total + (size?.intValue ?? 0)
        }
    }

    /// `TimeoutStopSec=` of the shipped unit (systemd/mwgated.service): how long systemd waits
    /// after SIGTERM before it kills the daemon.
    static func unitStopTimeout() throws -> Duration {
        let unit = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("systemd/mwgated.service").path
        let text = try String(contentsOfFile: unit, encoding: .utf8)
        let values = text.split(separator: "\n").compactMap { line -> Substring? in
            line.hasPrefix("TimeoutStopSec=") ? line.dropFirst("TimeoutStopSec=".count) : nil
        }
        guard let value = values.last, let seconds = Int(value.hasSuffix("s") ? value.dropLast() : value), seconds > 0 else {
            throw TestBusError(message: "\(unit): no TimeoutStopSec=<seconds>s line")
        }
        return .seconds(seconds)
    }

    /// The seal's wait for the boards' last samples must end before the group's limit
    /// cancels it (cancelled, it seals at once and drops what is still queued), and the group's
    /// limit before systemd's SIGKILL (which leaves the session to startup recovery).
    @Test func theShutdownsLimitsNestInsideSystemdsStopTimeout() throws {
        let stopLimit = try Self.unitStopTimeout()
        #expect(RecordingService.boardsStopSafetyLimit < Daemon.shutdownLimit)
        #expect(Daemon.shutdownLimit + .seconds(5) <= stopLimit, "group limit \(Daemon.shutdownLimit), TimeoutStopSec=\(stopLimit)")
    }

    @Test func aBadConfigurationStopsTheStartWithExitStatus78AndNamesFileLineAndKey() throws {
        let path = try writeConfig("""
            [boards]
            gyro_rate = 120

            [session]
            mood = "always"
            """)
        defer { unlink(path) }
        let started = try runDaemon(["--config", path])
        #expect(started.status == 78)
        #expect(started.errors.contains("\(path):2: boards.gyro_rate:"))
        #expect(started.errors.contains("\(path):5: session.mood:"))

        let checked = try runDaemon(["--config", path, "--check-config"])
        #expect(checked.status == 78)
        #expect(checked.errors.contains("\(path):2: boards.gyro_rate:"))
        #expect(checked.errors.contains("\(path):5: session.mood:"))
    }

    @Test func checkConfigAcceptsAValidFileAndAMissingDefaultFile() throws {
        let path = try writeConfig("[session]\nmode = \"always\"\n")
        defer { unlink(path) }
        let valid = try runDaemon(["--config", path, "--check-config"])
        #expect(valid.status == 0)
        #expect(valid.output.contains("valid"))
        let defaults = try runDaemon(["--check-config"])
        #expect(defaults.status == 0)
        #expect(defaults.output.contains("defaults"))
        let missing = try runDaemon(["--config", "/nonexistent-mwgate/x.toml", "--check-config"])
        #expect(missing.status == 78)
        #expect(missing.errors.contains("/nonexistent-mwgate/x.toml: no such file"))
    }

    @Test func aRunningGatewayNotifiesSystemdLogsEventsAndSealsEverythingOnSIGTERM() async throws {
        let fixture = try DaemonFixture(sessionMode: "always")
        defer { fixture.tearDown() }
        try fixture.startDaemon(watchdog: .seconds(2))

        try await waitUntil("READY=1") { fixture.notify.messages.contains { $0.contains("READY=1") } }
        try await waitUntil("both boards streaming in STATUS=") {
            fixture.notify.messages.contains { $0.contains("STATUS=2/2 boards streaming") && $0.contains("recording") }
        }
        try await waitUntil("WATCHDOG=1") { fixture.notify.messages.contains("WATCHDOG=1") }
        // READY=1 came after the control API took its name: mwctl reaches the daemon over D-Bus.
        let overview = try await fixture.bus.run(try DaemonFixture.executable("mwctl"), ["status"])
        #expect(overview.contains("recording"))

        // Catalogued events reach the journal socket with their fields.
        try await waitUntil("session-started") { !fixture.entries(withMessageID: MessageID.sessionStarted.rawValue).isEmpty }
        try await waitUntil("two board-connected") { fixture.entries(withMessageID: MessageID.boardConnected.rawValue).count >= 2 }
        try await waitUntil("fix-gained") { !fixture.entries(withMessageID: MessageID.fixGained.rawValue).isEmpty }
        let started = try #require(fixture.entries(withMessageID: MessageID.sessionStarted.rawValue).first)
        #expect(started["SYSLOG_IDENTIFIER"] == "mwgated")
        #expect(started["PRIORITY"] == "5")
        let session = try #require(started["SESSION"])
        let connected = fixture.entries(withMessageID: MessageID.boardConnected.rawValue)
        #expect(connected.allSatisfy { ($0["BOARD"] ?? "").count == 17 })

        // Let points accumulate, with an open (unsealed) chunk in the segment journal (over
        // 100 points of 21+ bytes), then stop the daemon.
        try await waitUntil("an open chunk with points") { Self.segmentJournalBytes(fixture.stateDirectory) > 2_100 }
        // The journal's size alone no longer says 100 points (held and provisional records,
        // files written over): the session's own count does.
        let mwctl = try DaemonFixture.executable("mwctl")
        try await waitUntil("over 100 samples in the session") {
            let json = try await fixture.bus.run(mwctl, ["status", "--json"])
            let status = try JSONDecoder().decode(GatewayStatus.self, from: Data(json.utf8))
            return status.boards.reduce(0) { $0 + $1.gyroSamplesInSession } > 100
        }
        // The promise is systemd's: after TimeoutStopSec it sends SIGKILL, and so does the test,
        // so a shutdown that hangs fails here (exit status 137) instead of hanging the suite.
        // How fast a stop is normally belongs to `make bench`, not here.
        let stopLimit = try Self.unitStopTimeout()
        let daemon = try #require(fixture.daemon)
        let stopAt = ContinuousClock.now
        kill(daemon.pid, SIGTERM)
        let killer = Task.detached {
            try await Task.sleep(for: stopLimit)
            kill(daemon.pid, SIGKILL)
        }
        let status = await Task.detached { daemon.wait() }.value
        killer.cancel()
        let took = ContinuousClock.now - stopAt
        print("SIGTERM while recording: exit status \(status) after \(took)")
        #expect(status == 0, "after \(took); systemd kills after TimeoutStopSec=\(stopLimit)\n\(fixture.stopFailure(of: daemon))")
        #expect(took < stopLimit, "shutdown took \(took)")
        // After the seal the stop does nothing it does not need: the buffer is left open at
        // exit instead of closed, whose WAL checkpoint took 0.3-1.0 s in the real-BlueZ VM
        // (issue 18: a SIGTERM within 2 s). The WAL is durable (synchronous=FULL); the checks
        // below read the sealed session through it, as the next start does.
        let wal = (try? FileManager.default.attributesOfItem(atPath: fixture.stateDirectory + "/buffer.sqlite-wal"))?[.size] as? NSNumber
        #expect((wal?.intValue ?? 0) > 0, "the buffer was closed at exit: its WAL was checkpointed into the database")
        #expect(fixture.notify.messages.contains { $0.contains("STOPPING=1") })
        // The boards start stopping at the signal and the seal waits for their last samples,
        // instead of each at its service's turn, the boards last (the real-BlueZ VM: links
        // closed 2 s and the exit 3.2 s after SIGTERM while recording, issue 18 asks for 2 s);
        // their stop is no "board lost".
        let entries = fixture.journal.journalEntries
        let boardsStopping = entries.firstIndex { ($0["MESSAGE"] ?? "").hasPrefix("stopping the boards") }
        let sealing = entries.firstIndex { ($0["MESSAGE"] ?? "").hasPrefix("recording: shutting down") }
        #expect(boardsStopping != nil && sealing != nil && boardsStopping! < sealing!,
                "boards stopping at \(boardsStopping.map(String.init) ?? "-"), sealing at \(sealing.map(String.init) ?? "-")")
        let lostAtStop = entries.suffix(from: boardsStopping ?? entries.endIndex)
            .filter { $0["MESSAGE_ID"] == MessageID.boardLost.rawValue }
        #expect(lostAtStop.isEmpty, "board-lost events at shutdown: \(lostAtStop.compactMap { $0["MESSAGE"] })")

        // Nothing left open; the sealed points equal what the session accepted.
        let ended = try #require(fixture.entries(withMessageID: MessageID.sessionEnded.rawValue).first)
        #expect(ended["SESSION"] == session)
        let accepted = try #require(fixture.journal.journalEntries.compactMap { entry -> Int? in
            guard let message = entry["MESSAGE"], message.hasPrefix("shutdown: session \(session) stopped with ") else { return nil }
            return Int(message.dropFirst("shutdown: session \(session) stopped with ".count).prefix { $0.isNumber })
        }.first)
        #expect(accepted > 100)
        #expect(try fixture.query("SELECT COUNT(*) FROM open_segments") == "0")
        #expect(Self.segmentJournalBytes(fixture.stateDirectory) == 0, "segment journal files left after the session ended")
        #expect(try fixture.query("SELECT SUM(point_count) FROM chunks WHERE session_id = '\(session)'") == "\(accepted)")
        #expect(try fixture.query("SELECT state, point_count FROM sessions WHERE id = '\(session)'") == "awaiting_survey|\(accepted)")
    }

    @Test func sigHUPReloadsWhatCanBeReloadedAndKeepsTheOldConfigurationWhenTheNewOneIsBad() async throws {
        let fixture = try DaemonFixture(sessionMode: "manual")
        defer { fixture.tearDown() }
        try fixture.startDaemon()
        try await waitUntil("READY=1") { fixture.notify.messages.contains { $0.contains("READY=1") } }
        let daemon = try #require(fixture.daemon)

        // A bad file: rejected as a whole, errors logged with file:line: key, still running.
        try "[session]\nmode = \"sometimes\"\n".write(toFile: fixture.configurationFile, atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        try await waitUntil("the reload error") {
            fixture.journal.journalEntries.contains { ($0["MESSAGE"] ?? "").hasPrefix("\(fixture.configurationFile):2: session.mode:") && $0["PRIORITY"] == "3" }
        }
        #expect(fixture.entries(withMessageID: MessageID.configReloaded.rawValue).isEmpty)

        // A good one: applied (always mode starts a session with the next samples), debug logging on.
        try """
            [boards]
            gyro_rate = 50
            [session]
            mode = "always"
            [hazards]
            names = ["pothole", "tree_root"]
            [log]
            level = "debug"
            """.write(toFile: fixture.configurationFile, atomically: true, encoding: .utf8)
        kill(daemon.pid, SIGHUP)
        try await waitUntil("config-reloaded") { !fixture.entries(withMessageID: MessageID.configReloaded.rawValue).isEmpty }
        #expect(fixture.notify.messages.contains { $0.contains("RELOADING=1") && $0.contains("MONOTONIC_USEC=") })
        try await waitUntil("an always-mode session after the reload") {
            !fixture.entries(withMessageID: MessageID.sessionStarted.rawValue).isEmpty
        }
        // [gnss] and [boards] changes need a restart: the reload says so.
        #expect(fixture.journal.journalEntries.contains { ($0["MESSAGE"] ?? "").contains("[gnss]") && $0["PRIORITY"] == "4" })
        kill(daemon.pid, SIGTERM)
        let status = await Task.detached { daemon.wait() }.value
        #expect(status == 0, "\(fixture.stopFailure(of: daemon))")
    }

    @Test func withoutAConfigurationFileItDiscoversTheBoardsOnDefaultsAndLogsALostBoard() async throws {
        let fixture = try DaemonFixture()
        defer { fixture.tearDown() }
        try fixture.startDaemon(withConfigurationFile: false)
        try await waitUntil("READY=1") { fixture.notify.messages.contains { $0.contains("READY=1") } }
        // Defaults: discovery (both simulated boards adopted), manual sessions with the sensors
        // off between them, no receiver (no /dev/gps0 here), the buffer in $STATE_DIRECTORY.
        try await waitUntil("both boards connected with sensors off, no session") {
            fixture.notify.messages.contains { $0.contains("STATUS=0/2 boards streaming (2 idle, sensors off)") }
        }
        #expect(FileManager.default.fileExists(atPath: fixture.stateDirectory + "/buffer.sqlite"))
        // The simulator drops board 1's link: board-lost (warning, with the board), then it
        // reconnects. Dropped on demand once it streams: a drop scheduled at a fixed time after
        // mwsim's start came before the connection on a loaded machine, and was a no-op.
        try await fixture.bus.run("/usr/bin/dbus-send", ["--system", "--print-reply", "--dest=io.mwgate.Simulator",
                                                         "/io/mwgate/Simulator1", "io.mwgate.Simulator1.DropLink", "uint32:1"])
        try await waitUntil("board-lost") { !fixture.entries(withMessageID: MessageID.boardLost.rawValue).isEmpty }
        let lost = try #require(fixture.entries(withMessageID: MessageID.boardLost.rawValue).first)
        #expect(lost["PRIORITY"] == "4")
        #expect(fixture.entries(withMessageID: MessageID.boardConnected.rawValue).contains { $0["BOARD"] == lost["BOARD"] })
        try await waitUntil("the lost board connected again") {
            fixture.entries(withMessageID: MessageID.boardConnected.rawValue).filter { $0["BOARD"] == lost["BOARD"] }.count >= 2
        }
        let daemon = try #require(fixture.daemon)
        kill(daemon.pid, SIGTERM)
        let status = await Task.detached { daemon.wait() }.value
        #expect(status == 0, "\(fixture.stopFailure(of: daemon))")
    }
}
