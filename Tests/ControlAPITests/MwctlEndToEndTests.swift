import BlueZSimulator
import ControlAPI
import MetaWearBoardModel
import StatusModel
import DBus
import Foundation
import TestSupport
import Testing

/// A whole walking session driven only by the mwctl binary against an in-process gateway
/// (two simulated boards, an NMEA replay, a real buffer) and the control server.
@Suite(.serialized, .enabled(if: TestBus.isAvailable, "needs /usr/bin/dbus-daemon"))
struct MwctlEndToEndTests {
    static func json<T: Decodable>(_ type: T.Type, _ result: CLIResult, _ what: String) throws -> T {
        #expect(result.status == 0, "\(what): exit \(result.status): \(result.stderr)")
        do { return try ControlJSON.decode(type, from: result.stdout) } catch {
            throw TestBusError(message: "\(what): stdout is not the expected JSON (\(error)): \(result.stdout)")
        }
    }

    /// Exit `code` with exactly one line on stderr containing `text`.
    static func expectFailure(_ result: CLIResult, _ code: Int32, _ text: String, _ what: String) {
        #expect(result.status == code, "\(what): exit \(result.status), stderr: \(result.stderr)")
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 1 && result.stderr.contains(text), "\(what): stderr \(result.stderr)")
    }

    @Test func walkingSessionThroughMwctl() async throws {
        try await ControlHarness.with { h in
            let ready = try await h.eventually("two boards streaming and a position") { s in
                s.boards.count == 2 && s.boards.allSatisfy(\.isStreaming) && s.gnss.hasPosition
            }
            #expect(ready.session.state == "idle")
            #expect(ready.boards.allSatisfy { $0.gyroRateHz == 50 })
            #expect(ready.sync?.configured == true && ready.sync?.endpoint == "https://upstream.example")

            let boards = try Self.json([BoardStatus].self, try await h.mwctl(["boards", "list", "--json"]), "boards list")
            #expect(Set(boards.map(\.address)) == Set(h.addresses.map(\.rawValue)))

            Self.expectFailure(try await h.mwctl(["session", "stop", "--json"]), 6, "no session is recording", "stop while idle")

            // Live properties: State goes to recording with the new session ID.
            let watcher = try await DBusConnection(address: h.bus.address)
            defer { watcher.close() }
            let client = GatewayControlClient(connection: watcher)
            let changes = try await client.propertyChanges()

            let started = try Self.json([String: String].self, try await h.mwctl(["session", "start", "--json"]), "session start")
            let sessionID = try #require(started["sessionID"])
            Self.expectFailure(try await h.mwctl(["session", "start"]), 6, "already recording", "second start")

            var sawRecording = false
            for try await change in changes {
                if change.changed[GatewayControl.Property.state] == .string("recording") {
                    #expect(change.changed[GatewayControl.Property.sessionID] == .string(sessionID))
                    sawRecording = true
                    break
                }
            }
            #expect(sawRecording)

            try await Task.sleep(for: .seconds(3))
            let end = try Self.json(SessionEndPayload.self, try await h.mwctl(["session", "stop", "--json"]), "session stop")
            #expect(end.sessionID == sessionID)
            #expect(end.points > 100, "3 s at 50 Hz from two boards")
            #expect(Set(end.boards) == Set(h.addresses.map(\.rawValue)))

            // Bad surveys: unknown hazard (2), unknown session (4), malformed option (2).
            Self.expectFailure(try await h.mwctl(["survey", "submit", "--hazard", "lava=2"]), 2, "unknown hazard lava", "unknown hazard")
            Self.expectFailure(try await h.mwctl(["survey", "submit", "--none", "--session", "no-such-session"]), 4,
                               "no session no-such-session", "unknown session")
            #expect(try await h.mwctl(["survey", "submit", "--hazard", "pothole"]).status == 2)

            // The interactive survey: prefixes, an ambiguous one, then submit with an empty line.
            let asked = try await h.mwctl(["survey", "--json"], stdin: "pot 3\ncr 1\ncra=1\n\n")
            let survey = try Self.json(SurveyResultPayload.self, asked, "interactive survey")
            #expect(survey.sessionID == sessionID)
            #expect(survey.hazards == ["pothole": 3, "crack": 1] && !survey.noHazard)
            #expect(survey.points == end.points && survey.chunks >= 2)
            #expect(asked.stderr.contains("ambiguous: crack, crowd"))
            Self.expectFailure(try await h.mwctl(["survey", "submit", "--none", "--session", sessionID]), 6,
                               "not awaiting a survey", "second survey")

            let sessions = try Self.json([SessionListingPayload].self, try await h.mwctl(["session", "list", "--json"]), "session list")
            #expect(sessions.first { $0.sessionID == sessionID }?.state == "submitted")

            // Export: CSV to a file (summary as JSON), JSON to stdout, an unknown session.
            let file = h.stateDirectory.appendingPathComponent("export.csv").path
            let summary = try Self.json(ExportSummary.self,
                                        try await h.mwctl(["export", sessionID, "--format", "csv", "-o", file, "--json"]), "export csv")
            let csv = try String(contentsOfFile: file, encoding: .utf8)
            #expect(summary.bytes == csv.utf8.count && summary.bytes > 0)
            #expect(csv.split(separator: "\n").count >= end.points, "a CSV row per point")
            let exported = try await h.mwctl(["export", sessionID])
            #expect(exported.status == 0)
            #expect(exported.stderr.isEmpty, "no progress bar when stderr is not a terminal")
            // On a terminal (script(1) gives mwctl a pty) the progress bar is drawn.
            let ptyFile = h.stateDirectory.appendingPathComponent("export.gpx").path
            let onTerminal = try await CLI.run(["-qec", "\(try CLI.path()) export \(sessionID) --format gpx -o \(ptyFile)", "/dev/null"],
                                               environment: h.bus.environment, executable: "/usr/bin/script")
            #expect(onTerminal.status == 0 && onTerminal.stdout.contains("[#####"), "\(onTerminal.stdout)")
            #expect((try? String(contentsOfFile: ptyFile, encoding: .utf8))?.contains("<gpx") == true)
            #expect((try? JSONSerialization.jsonObject(with: Data(exported.stdout.utf8))) != nil, "export JSON parses")
            Self.expectFailure(try await h.mwctl(["export", "no-such-session"]), 4, "no-such-session", "export unknown")
            #expect(try await h.mwctl(["export", sessionID, "--format", "pdf"]).status == 2)

            let history = try Self.json([HistoryDayPayload].self, try await h.mwctl(["history", "--json", "--days", "3650"]), "history")
            #expect(history.reduce(0) { $0 + $1.sessions } >= 1)
            #expect(history.contains { $0.hazards["pothole"] == 1 && $0.hazards["crack"] == 1 }, "sessions reporting each hazard")
            #expect(try await h.mwctl(["history", "--days", "0"]).status == 2)
            // The offline fallback reads the same buffer directly.
            let offline = try Self.json([HistoryDayPayload].self,
                                        try await h.mwctl(["history", "--json", "--days", "3650", "--state-dir", h.stateDirectory.path]),
                                        "offline history")
            #expect(offline == history)
            let offlineCSV = try await h.mwctl(["export", sessionID, "--format", "csv", "--state-dir", h.stateDirectory.path])
            #expect(offlineCSV.status == 0 && offlineCSV.stdout == csv)
            Self.expectFailure(try await h.mwctl(["export", "no-such-session", "--state-dir", h.stateDirectory.path]), 4,
                               "no-such-session", "offline export unknown")

            struct SyncReport: Decodable {
                var sync: UpstreamSyncStatus
                var backlog: BacklogStatus?
            }
            let sync = try Self.json(SyncReport.self, try await h.mwctl(["sync", "status", "--json"]), "sync status")
            #expect(sync.sync.documentsSent == 7 && sync.sync.state == "idle")
            #expect((sync.backlog?.documents ?? 0) >= 1, "the chunks and the records document wait for upload")
            let run = try Self.json(SyncRunPayload.self, try await h.mwctl(["sync", "now", "--json"]), "sync now")
            #expect(run.sent == 2 && h.sync.syncRuns == 1)
            let requeued = try Self.json([String: UInt32].self, try await h.mwctl(["sync", "retry-dead", "--json"]), "retry-dead")
            #expect(requeued["requeued"] == 0)

            Self.expectFailure(try await h.mwctl(["boards", "add", "not-an-address"]), 2, "not a Bluetooth address", "bad address")
            Self.expectFailure(try await h.mwctl(["boards", "remove", "00:11:22:33:44:55"]), 6, "not run by the gateway", "unknown board")

            // status --watch: one JSON document per refresh.
            let watched = try await h.mwctl(["status", "--watch", "--json", "--count", "2", "--interval", "1"])
            #expect(watched.status == 0)
            let lines = watched.stdout.split(separator: "\n")
            #expect(lines.count == 2)
            #expect(lines.allSatisfy { (try? ControlJSON.decode(GatewayStatus.self, from: String($0))) != nil })
            let text = try await h.mwctl(["status"])
            #expect(text.status == 0 && text.stdout.contains("Boards:") && text.stdout.contains("battery"))

            let doctor = try await h.mwctl(["doctor", "--json"])
            struct Check: Decodable { var name: String; var level: String }
            let checks = try ControlJSON.decode([Check].self, from: doctor.stdout)
            #expect(checks.first { $0.name == "mwgated (D-Bus)" }?.level == "ok")
            #expect(checks.first { $0.name == "bluetoothd" }?.level == "ok", "the simulator owns org.bluez")
            #expect(checks.contains { $0.name == "adapter (HCI)" }, "reported, not crashed, without an HCI socket")

            // The fleet: scan sees both (already running), remove one, add it back.
            let scanned = try Self.json([ScanResultPayload].self, try await h.mwctl(["boards", "scan", "--seconds", "1", "--json"]), "scan")
            #expect(Set(scanned.map(\.address)) == Set(h.addresses.map(\.rawValue)) && scanned.allSatisfy(\.added))
            let second = h.addresses[1].rawValue
            #expect(try await h.mwctl(["boards", "remove", second]).status == 0)
            let remaining = try Self.json([BoardStatus].self, try await h.mwctl(["boards", "list", "--json"]), "list after remove")
            #expect(!remaining.contains { $0.address == second })
            #expect(try await h.mwctl(["boards", "add", second]).status == 0)
            try await h.eventually("the board back and streaming") { s in s.boards.contains { $0.address == second && $0.isStreaming } }

            // Introspectable for scripts.
            let introspection = try await h.bus.run("/usr/bin/busctl", ["--address=\(h.bus.address)", "introspect",
                                                                  GatewayControl.busName, GatewayControl.objectPath.rawValue])
            for member in ["GetStatus", "StartSession", "SubmitSurvey", "Export", "RetryDead", "State", "Boards"] {
                #expect(introspection.contains(member), "introspection lists \(member)")
            }
            // Errors name the problem for scripts too.
            func busctl(_ arguments: [String]) async throws -> CLIResult {
                try await CLI.run(["--address=\(h.bus.address)", "call", GatewayControl.busName, GatewayControl.objectPath.rawValue,
                             GatewayControl.interface] + arguments, environment: h.bus.environment, executable: "/usr/bin/busctl")
            }
            let pastEnd = try await busctl(["Export", "sstu", sessionID, "csv", "999999999", "10"])
            #expect(pastEnd.status != 0 && pastEnd.stderr.contains("past the end"), "\(pastEnd.stderr)")
            let wrongType = try await busctl(["ListSessions", "s", "ten"])
            #expect(wrongType.status != 0 && wrongType.stderr.contains("expects arguments 'u', got 's'"), "\(wrongType.stderr)")
            let slice = try await busctl(["Export", "sstu", sessionID, "csv", "0", "5"])
            #expect(slice.status == 0 && slice.stdout.hasPrefix("tay \(summary.bytes) 5 "), "\(slice.stdout)")
        }
    }

    struct ExportSummary: Decodable {
        var sessionID: String
        var bytes: Int
    }

    @Test func withoutAnUpstreamSyncIsReportedAndRefused() async throws {
        try await ControlHarness.with(withUpstream: false) { h in
            struct SyncReport: Decodable { var sync: UpstreamSyncStatus }
            let report = try Self.json(SyncReport.self, try await h.mwctl(["sync", "status", "--json"]), "sync status")
            #expect(!report.sync.configured && report.sync.state == "disabled")
            Self.expectFailure(try await h.mwctl(["sync", "now"]), 7, "no upstream is configured", "sync now")
            // Requeueing works on the buffer alone; an unknown session is named.
            let requeued = try Self.json([String: UInt32].self, try await h.mwctl(["sync", "retry-dead", "--json"]), "retry-dead")
            #expect(requeued["requeued"] == 0)
            Self.expectFailure(try await h.mwctl(["sync", "retry-dead", "--session", "nope"]), 4, "no session nope", "retry unknown")
            let doctor = try await h.mwctl(["doctor"])
            #expect(doctor.stdout.contains("[WARN] upstream: no upstream configured"), "\(doctor.stdout)")

            // The interactive survey on a terminal (script(1) gives it a pty): Tab completes
            // a unique prefix, lists an ambiguous one.
            _ = try await h.eventually("a board streaming") { s in s.boards.contains(where: \.isStreaming) }
            let started = try Self.json([String: String].self, try await h.mwctl(["session", "start", "--json"]), "start")
            // A session that recorded nothing takes no survey (no records document), so let a
            // sample in before stopping.
            _ = try await h.eventually("a sample in the session") { s in s.boards.contains { $0.gyroSamplesInSession > 0 } }
            _ = try Self.json(SessionEndPayload.self, try await h.mwctl(["session", "stop", "--json"]), "stop")
            // The prompt's history file goes to the state directory, not the user's.
            let typed = try await CLI.run(["-qec", "\(try CLI.path()) survey --json", "/dev/null"],
                                          environment: h.bus.environment.merging(["XDG_STATE_HOME": h.stateDirectory.path]) { $1 },
                                          stdin: "pot\t3\rcr\ta\t1\r\r", executable: "/usr/bin/script")
            #expect(typed.status == 0, "\(typed.stdout)")
            #expect(typed.stdout.contains("crack  crowd"), "ambiguous prefix lists the candidates: \(typed.stdout)")
            let resultLine = typed.stdout.split(whereSeparator: \.isNewline).last { $0.hasPrefix("{") }.map(String.init) ?? ""
            let survey = try ControlJSON.decode(SurveyResultPayload.self, from: resultLine)
            #expect(survey.sessionID == started["sessionID"] && survey.hazards == ["pothole": 3, "crack": 1])
        }
    }

    /// Device Information hidden by bluetoothd (issue 18 defect 1), boards with a PnP ID whose
    /// settings module cannot read the battery: status names each board's model from Modalias,
    /// shows no firmware, takes the battery from Battery1 (percent, no voltage), and doctor
    /// says what is missing, why, and how to get it.
    @Test func boardIdentityWithoutDeviceInformation() async throws {
        try await ControlHarness.with(simulator: { configuration in
            configuration.deviceInformationHidden = [0, 1]
            configuration.profiles = configuration.profiles.map { profile in
                var board = profile.withMbientLabPnPID()
                board.moduleInfo[0x11] = [0x11, 0x80, 0x00, 0x02]
                return board
            }
        }) { h in
            let status = try await h.eventually("two boards streaming") { s in s.boards.count == 2 && s.boards.allSatisfy(\.isStreaming) }
            for board in status.boards {
                #expect(board.batteryPercent == 99 && board.batteryMillivolts == nil, "\(board)")
                #expect(board.model?.contains("firmware") == false, "\(board.model ?? "nil")")
                #expect(board.missingIdentity?.contains("model named from Modalias bluetooth:v067Ep") == true, "\(board.missingIdentity ?? "nil")")
            }
            #expect(Set(status.boards.compactMap { $0.model?.components(separatedBy: ",").first })
                    == ["MetaMotion R (BMI160)", "MetaMotion S (BMI270)"], "\(status.boards.map(\.model))")
            let doctor = try await h.mwctl(["doctor"])
            for address in h.addresses {
                #expect(doctor.stdout.contains("[WARN] board \(address) identity: MetaMotion"), "\(doctor.stdout)")
            }
            #expect(doctor.stdout.contains("Device Information service (180A) is not exported")
                    && doctor.stdout.contains("ExportClaimedServices"), "\(doctor.stdout)")
        }
    }

    @Test func daemonNotRunningExitsThreeWithOneLine() async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        let result = try await CLI.run(["status", "--json"], environment: bus.environment)
        Self.expectFailure(result, 3, "daemon is not running", "no daemon")
        #expect(result.stdout.isEmpty)
        var environment = bus.environment
        environment["DBUS_SYSTEM_BUS_ADDRESS"] = "unix:path=/nonexistent/bus"
        Self.expectFailure(try await CLI.run(["session", "list"], environment: environment), 3, "cannot connect to the system bus", "no bus")
    }
}
