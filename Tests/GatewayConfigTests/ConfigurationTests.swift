import Foundation
import GNSS
import MetaWear
import Testing
@testable import GatewayConfig

let testPaths = ServicePaths(stateDirectory: "/var/lib/mwgate", runtimeDirectory: "/run/mwgate", configurationDirectory: "/etc/mwgate")
let file = "/etc/mwgate/mwgated.toml"

func parse(_ text: String, gps: Bool = false) throws(ConfigurationErrors) -> GatewayConfiguration {
    try ConfigurationLoader.parse(text, file: file, paths: testPaths, fileExists: { $0 == "/dev/gps0" && gps })
}

func issues(_ text: String) -> [String] {
    do {
        _ = try parse(text)
        return []
    } catch {
        return error.issues.map(\.description)
    }
}

/// The repository root, from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

@Suite struct ConfigurationTests {
    @Test func defaultsWithoutAFile() throws {
        let withGPS = GatewayConfiguration.defaults(paths: testPaths, fileExists: { $0 == "/dev/gps0" })
        #expect(withGPS.gnss.source == .serial(path: "/dev/gps0", baud: nil))
        #expect(withGPS.boards.selection == .discover(allow: []))
        #expect(withGPS.boards.gyro == GyroConfiguration(rate: .hz100, range: .dps2000))
        #expect(withGPS.boards.accelerometer == nil)
        #expect(withGPS.sink.kind == .directory(path: "/var/lib/mwgate/outbox"))
        #expect(withGPS.buffer.budget.maxBytes == 1 << 30)
        #expect(withGPS.session.mode == .manual)
        let without = GatewayConfiguration.defaults(paths: testPaths, fileExists: { _ in false })
        #expect(without.gnss.source == nil)
        // No file in the configuration directory: defaults, not an error.
        let empty = ServicePaths(stateDirectory: "/s", runtimeDirectory: "/r", configurationDirectory: "/nonexistent-mwgate")
        #expect(try ConfigurationLoader.load(paths: empty, fileExists: { _ in false }).sink.kind == .directory(path: "/s/outbox"))
        // An explicit file that is missing is an error.
        #expect(throws: ConfigurationErrors.self) { try ConfigurationLoader.load(path: "/nonexistent-mwgate/x.toml", paths: empty) }
    }

    @Test func servicePathsFromEnvironment() {
        let paths = ServicePaths(environment: ["STATE_DIRECTORY": "/var/lib/mwgate:/var/lib/other", "RUNTIME_DIRECTORY": "/run/x"])
        #expect(paths.stateDirectory == "/var/lib/mwgate")
        #expect(paths.runtimeDirectory == "/run/x")
        #expect(paths.configurationFile == "/etc/mwgate/mwgated.toml")
        #expect(ServicePaths(environment: [:]).runtimeDirectory == "/run/mwgate")
    }

    @Test(arguments: [false, true])
    func packagedFileParsesToTheDefaults(gps: Bool) throws {
        let path = repositoryRoot + "/packaging/mwgated.toml"
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let parsed = try ConfigurationLoader.parse(text, file: path, paths: testPaths, fileExists: { $0 == "/dev/gps0" && gps })
        #expect(parsed == GatewayConfiguration.defaults(paths: testPaths, fileExists: { $0 == "/dev/gps0" && gps }))
        // Every commented-out assignment in the file is a real key with its default value:
        // uncommenting them all must still parse (to a valid configuration).
        let active = text.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            let trimmed = line.drop { $0 == " " }
            if trimmed.hasPrefix("# accelerometer_") || trimmed.hasPrefix("# source =") || trimmed.hasPrefix("# path =") {
                return String(trimmed.dropFirst(2))
            }
            return String(line)
        }.joined(separator: "\n").replacingOccurrences(of: "accelerometer = false", with: "accelerometer = true")
            .replacingOccurrences(of: "sample_mode = \"single\"", with: "sample_mode = \"packed\"")
        let uncommented = try ConfigurationLoader.parse(active, file: path, paths: testPaths, fileExists: { _ in false })
        #expect(uncommented.gnss.source == .serial(path: "/dev/gps0", baud: nil))
        #expect(uncommented.boards.accelerometer == AccelerometerConfiguration(rate: .hz100, range: .g16))
    }

    @Test func theIssueExampleVerbatim() {
        let text = (1...11).map { _ in "" }.joined(separator: "\n") + "\n[boards]\ngyro_rate = 120\n"
        #expect(issues(text) == [
            "/etc/mwgate/mwgated.toml:13: boards.gyro_rate: 120 Hz is not a gyro rate; use one of 25, 50, 100, 200, 400, 800, 1600, 3200"
        ])
    }

    @Test func collectsEveryProblemWithLineAndKey() {
        let text = """
            [boards]
            gyro_rate = 120
            gyro_range = 3000
            adresses = ["C8:4B:AA:01:02:03"]
            [gnss]
            source = "serial:ttyACM0"
            [session]
            mode = "sometimes"
            [sink]
            type = "firestor"
            [buffr]
            """
        #expect(issues(text) == [
            "/etc/mwgate/mwgated.toml:2: boards.gyro_rate: 120 Hz is not a gyro rate; use one of 25, 50, 100, 200, 400, 800, 1600, 3200",
            "/etc/mwgate/mwgated.toml:3: boards.gyro_range: ±3000 °/s is not a gyro range; use one of 125, 250, 500, 1000, 2000",
            "/etc/mwgate/mwgated.toml:4: boards.adresses: unknown key; did you mean 'addresses'?",
            "/etc/mwgate/mwgated.toml:6: gnss.source: serial source needs an absolute device path, as in serial:/dev/ttyACM0 (got 'serial:ttyACM0'); or \"none\" for no receiver",
            "/etc/mwgate/mwgated.toml:8: session.mode: 'sometimes' is not a session mode; use \"manual\" or \"always\"",
            "/etc/mwgate/mwgated.toml:10: sink.type: 'firestor' is not a sink type; use \"directory\", \"firestore\" or \"postgres\"; did you mean \"firestore\"?",
            "/etc/mwgate/mwgated.toml:11: buffr: unknown key; did you mean 'buffer'?",
        ])
    }

    @Test func syntaxErrorsNameFileAndLine() {
        #expect(issues("[boards]\ngyro_rate = fast\n") == [
            "/etc/mwgate/mwgated.toml:2: expected a value, found 'fast' (strings need quotes) (column 13)"
        ])
    }

    @Test func boardsSelectionAndSensors() throws {
        let fixed = try parse("[boards]\naddresses = [\"c8:4b:aa:01:02:03\", \"D1:00:00:00:00:01\"]\naccelerometer = true\naccelerometer_rate = 12.5\naccelerometer_range = 4\ngyro_rate = 50\n")
        #expect(fixed.boards.selection == .fixed(["C8:4B:AA:01:02:03", "D1:00:00:00:00:01"]))
        #expect(fixed.boards.accelerometer == AccelerometerConfiguration(rate: .hz12_5, range: .g4))
        #expect(try fixed.boards.streaming().notificationsPerSecond == 62.5)
        let allow = try parse("[boards]\nallow = [\"C8:4B:AA:01:02:03\"]\n")
        #expect(allow.boards.selection == .discover(allow: ["C8:4B:AA:01:02:03"]))
        #expect(issues("[boards]\naddresses = [\"C8:4B:AA:01:02:03\"]\nallow = [\"C8:4B:AA:01:02:04\"]\n") == [
            "/etc/mwgate/mwgated.toml:3: boards.allow: only applies to discovery; with 'addresses' set, exactly those boards are used (remove one of the two)"
        ])
        #expect(issues("[boards]\naddresses = [\"C8:4B:AA:01:02\", 7]\n") == [
            "/etc/mwgate/mwgated.toml:2: boards.addresses: expected an array of strings, found an integer in it"
        ])
        #expect(issues("[boards]\naddresses = [\"C8:4B:AA:01:02\"]\n") == [
            "/etc/mwgate/mwgated.toml:2: boards.addresses: 'C8:4B:AA:01:02' is not a Bluetooth address; write it as AA:BB:CC:DD:EE:FF"
        ])
        #expect(issues("[boards]\naccelerometer_range = 4\n") == [
            "/etc/mwgate/mwgated.toml:2: boards.accelerometer_range: has no effect while accelerometer = false; set accelerometer = true or remove it"
        ])
        #expect(issues("[boards]\naccelerometer = true\naccelerometer_rate = 99\n") == [
            "/etc/mwgate/mwgated.toml:3: boards.accelerometer_rate: 99 Hz is not an accelerometer rate; use one of 0.78125, 1.5625, 3.125, 6.25, 12.5, 25, 50, 100, 200, 400, 800, 1600"
        ])
    }

    @Test func linkBudget() throws {
        #expect(issues("[boards]\ngyro_rate = 200\n") == [
            "/etc/mwgate/mwgated.toml:2: boards.gyro_rate: 200 notifications/s is more than one BLE link carries (100); lower the rate or set sample_mode = \"packed\""
        ])
        let packed = try parse("[boards]\ngyro_rate = 200\nsample_mode = \"packed\"\n")
        #expect(packed.boards.sampleMode == .packed)
    }

    @Test func ratesBeyondTheLinkAreLoggedWithBackfillAndRefusedWithout() throws {
        #expect(issues("[boards]\ngyro_rate = 800\nbackfill = false\n") == [
            "/etc/mwgate/mwgated.toml:2: boards.gyro_rate: 800 notifications/s is more than one BLE link carries (100); "
                + "set backfill = true to record it in the board's flash and download it, or lower the rate"
        ])
        // Backfill is on by default (issue 21), so the rate alone is logged.
        #expect(try parse("[boards]\ngyro_rate = 800\n").boards.logged == [.gyro])
        let logged = try parse("[boards]\ngyro_rate = 800\nbackfill = true\n")
        #expect(logged.boards.logged == [.gyro])
        #expect(try logged.boards.streaming().logged == [.gyro])
        #expect(try parse("[boards]\ngyro_rate = 3200\nbackfill = true\n[session]\nmax_duration = \"2 h\"\n").session.maxDuration == 7200)
        #expect(issues("[boards]\ngyro_rate = 3200\nbackfill = true\n[session]\nmax_duration = \"4 h\"\n") == [
            "/etc/mwgate/mwgated.toml:5: session.max_duration: gyro 3200 Hz writes 6400 log entries/s; a MetaMotion S's flash holds "
                + "66781184 entries, full after 2 h 53 min, shorter than the 4 h 0 min session asked for; shorten the session to "
                + "2 h 53 min or less, or lower gyro_rate to 1600 Hz"
        ])
        var boards = GatewayConfiguration.Boards()
        #expect(boards.backfill, "on by default")
        boards.backfill = false
        boards.gyro = GyroConfiguration(rate: .hz1600, range: .dps2000)
        #expect(boards.logged.isEmpty, "without the flash log nothing is logged")
        boards.backfill = true
        #expect(boards.logged == [.gyro])
        boards.accelerometer = AccelerometerConfiguration(rate: .hz100, range: .g16)
        #expect(boards.logged == [.gyro, .accelerometer], "a logged board logs every sensor")
        #expect(try boards.streaming().notificationsPerSecond == 0)
        boards.gyro = GyroConfiguration(rate: .hz100, range: .dps2000)
        boards.accelerometer = AccelerometerConfiguration(rate: .hz800, range: .g16)
        #expect(boards.logged == [.gyro, .accelerometer])
        boards.accelerometer = AccelerometerConfiguration(rate: .hz200, range: .g16)
        #expect(boards.logged.isEmpty)
    }

    @Test func alwaysModeAtALoggedRateIsRefusedAtLoadNamingBothKeys() throws {
        #expect(issues("[boards]\ngyro_rate = 800\nbackfill = true\n[session]\nmode = \"always\"\n") == [
            "/etc/mwgate/mwgated.toml:5: session.mode: \"always\" starts a session on the first streamed sample, and with "
                + "boards.gyro_rate = 800 and backfill = true the boards log to flash and stream nothing, so no session would "
                + "start; use mode = \"manual\" (start and stop with mwctl or a board's button), or a rate below 400 Hz"
        ])
        let both = "[boards]\ngyro_rate = 1600\naccelerometer = true\naccelerometer_rate = 800\nbackfill = true\n"
            + "[session]\nmode = \"always\"\n"
        #expect(issues(both).first?.contains("with boards.gyro_rate = 1600, boards.accelerometer_rate = 800 and backfill") == true)
        #expect(try parse("[boards]\ngyro_rate = 800\nbackfill = true\n[session]\nmode = \"manual\"\n").session.mode == .manual)
        #expect(try parse("[boards]\ngyro_rate = 100\nbackfill = true\n[session]\nmode = \"always\"\n").session.mode == .always,
                "streamed rates start an always-mode session on their first sample")
    }

    @Test func sessionLength() throws {
        #expect(try parse("").session.maxDuration == nil)
        #expect(try parse("[session]\nmax_duration = 3600\n").session.maxDuration == 3600)
        #expect(try parse("[session]\nmax_duration = \"1 h 30 min\"\n").session.maxDuration == 5400)
        let expected = "expected a length of time: seconds (3600) or a string such as \"30 min\", \"2 h\", \"1 h 30 min\""
        #expect(issues("[session]\nmax_duration = \"soon\"\n") == ["/etc/mwgate/mwgated.toml:2: session.max_duration: \(expected)"])
        #expect(issues("[session]\nmax_duration = 0\n") == ["/etc/mwgate/mwgated.toml:2: session.max_duration: \(expected)"])
    }

    @Test func aSessionNoMetaWearFlashHoldsAtALoggedRateIsRefusedAtLoad() throws {
        let text = "[boards]\ngyro_rate = 3200\nbackfill = true\n[session]\nmax_duration = \"4 h\"\n"
        var config = GatewayConfiguration.defaults(paths: testPaths, fileExists: { _ in false })
        config.boards.gyro = GyroConfiguration(rate: .hz3200, range: .dps2000)
        config.boards.backfill = true
        config.session.maxDuration = 4 * 3600
        let root = try TOMLParser.parse(text)
        let issue = try #require(ConfigurationLoader.flashRefusal(config, root: root, file: file))
        #expect(issue.description == "/etc/mwgate/mwgated.toml:5: session.max_duration: gyro 3200 Hz writes 6400 log entries/s; "
            + "a MetaMotion S's flash holds 66781184 entries, full after 2 h 53 min, shorter than the 4 h 0 min session asked for; "
            + "shorten the session to 2 h 53 min or less, or lower gyro_rate to 1600 Hz")
        config.session.maxDuration = 2 * 3600
        #expect(ConfigurationLoader.flashRefusal(config, root: root, file: file) == nil, "2 h fit a MetaMotion S")
        config.boards.backfill = false
        config.session.maxDuration = 1e9
        #expect(ConfigurationLoader.flashRefusal(config, root: root, file: file) == nil, "streamed: no flash involved")
    }

    @Test func notificationPathIsAcquireUnlessChosen() throws {
        #expect(try parse("").boards.notifications == .acquire)
        #expect(try parse("[boards]\nnotifications = \"kept-session\"\n").boards.notifications == .keptSession)
        #expect(try parse("[boards]\nnotifications = \"start-notify\"\n").boards.notifications == .startNotify)
        #expect(issues("[boards]\nnotifications = \"kept\"\n") == [
            "/etc/mwgate/mwgated.toml:2: boards.notifications: 'kept' is not a notification path; use \"acquire\", \"start-notify\", \"kept-session\""])
    }

    @Test func backfillIsOnUnlessTurnedOff() throws {
        #expect(try parse("").boards.backfill)
        #expect(try parse("[boards]\nbackfill = false\n").boards.backfill == false)
        #expect(try parse("[boards]\nbackfill = true\n").boards.backfill)
        #expect(issues("[boards]\nbackfill = \"no\"\n") == ["/etc/mwgate/mwgated.toml:2: boards.backfill: expected true or false, got a string"])
    }

    @Test func gnssSources() throws {
        #expect(try parse("[gnss]\nsource = \"gpsd://localhost\"\n").gnss.source == .gpsd(host: "localhost", port: 2947))
        #expect(try parse("[gnss]\nsource = \"none\"\n", gps: true).gnss.source == nil)
        #expect(try parse("", gps: true).gnss.source == .serial(path: "/dev/gps0", baud: nil))
        #expect(issues("[gnss]\nsource = 5\n") == ["/etc/mwgate/mwgated.toml:2: gnss.source: expected a string, got an integer"])
        #expect(try parse("[gnss]\n").gnss.acceptDeadReckoning == false)
        #expect(try parse("[gnss]\naccept_dead_reckoning = true\n").gnss.acceptDeadReckoning)
        #expect(issues("[gnss]\naccept_dead_reckoning = \"yes\"\n") == ["/etc/mwgate/mwgated.toml:2: gnss.accept_dead_reckoning: expected true or false, got a string"])
    }

    @Test func bufferSizes() throws {
        let config = try parse("[buffer]\nbudget = \"2 GB\"\nfree_space_floor = 1048576\nretention_days = 7\n")
        #expect(config.buffer.budget.maxBytes == 2_000_000_000)
        #expect(config.buffer.budget.minFreeBytes == 1 << 20)
        #expect(config.buffer.retentionDays == 7)
        #expect(issues("[buffer]\nbudget = \"lots\"\nretention_days = -1\n") == [
            "/etc/mwgate/mwgated.toml:2: buffer.budget: 'lots' is not a size; write bytes (1073741824) or a number with a unit (\"1 GiB\", \"500 MB\")",
            "/etc/mwgate/mwgated.toml:3: buffer.retention_days: -1 is out of range; use 0 (delete once synced) to 3650",
        ])
        #expect(issues("[buffer]\nbudget = 1000\n") == [
            "/etc/mwgate/mwgated.toml:2: buffer.budget: 1000 bytes is too small to hold a session; use at least 16 MiB"
        ])
    }

    @Test func hazards() throws {
        let config = try parse("[hazards]\nnames = [\"stairs\", \"ice\"]\nintensity_scale = 3\n")
        #expect(config.hazards.names == ["stairs", "ice"])
        #expect(config.hazards.intensityScale == 3)
        #expect(issues("[hazards]\nnames = [\"Ice Patch\", \"ice\", \"ice\"]\nintensity_scale = 11\n") == [
            "/etc/mwgate/mwgated.toml:2: hazards.names: 'Ice Patch' is not a hazard name; use 1 to 32 of a-z, 0-9 and _",
            "/etc/mwgate/mwgated.toml:2: hazards.names: 'ice' is listed twice",
            "/etc/mwgate/mwgated.toml:3: hazards.intensity_scale: 11 is out of range; intensities run 1…N with N from 2 to 10",
        ])
    }

    @Test func sinks() throws {
        let firestore = try parse("""
            [sink]
            type = "firestore"
            max_requests_per_second = 2
            [sink.firestore]
            project_id = "walk-survey"
            emulator_host = "127.0.0.1:8080"
            """)
        var expected = GatewayConfiguration.Sink.Firestore(projectID: "walk-survey")
        expected.emulatorHost = "127.0.0.1:8080"
        #expect(firestore.sink.kind == .firestore(expected))
        #expect(firestore.sink.maxRequestsPerSecond == 2)

        let postgres = try parse("""
            [sink]
            type = "postgres"
            [sink.postgres]
            host = "db.example.org"
            user = "mwgate"
            database = "walks"
            sslmode = "require"
            """)
        guard case .postgres(let settings) = postgres.sink.kind else { Issue.record("not postgres"); return }
        #expect(settings.port == 5432)
        #expect(settings.sslMode == .require)
        #expect(settings.passwordCredential == "postgres-password")

        #expect(issues("[sink]\ntype = \"postgres\"\n[sink.postgres]\nhost = \"h\"\nsslmode = \"on\"\nport = 0\n") == [
            "/etc/mwgate/mwgated.toml:3: sink.postgres.database: required for the postgres sink",
            "/etc/mwgate/mwgated.toml:3: sink.postgres.user: required for the postgres sink",
            "/etc/mwgate/mwgated.toml:5: sink.postgres.sslmode: 'on' is not an sslmode; use one of disable, prefer, require, verify-ca, verify-full",
            "/etc/mwgate/mwgated.toml:6: sink.postgres.port: 0 is not a port (1-65535)",
        ])
        #expect(issues("[sink]\ntype = \"firestore\"\n") == [
            "/etc/mwgate/mwgated.toml:1: sink.firestore.project_id: required for the firestore sink (the Google Cloud project id)"
        ])
        #expect(issues("[sink]\n[sink.postgres]\nhost = \"h\"\n[sink.directory]\npath = \"relative\"\nmode = 1\n") == [
            "/etc/mwgate/mwgated.toml:2: sink.postgres: is set but sink.type is \"directory\"; set type = \"postgres\" or remove [sink.postgres]",
            "/etc/mwgate/mwgated.toml:5: sink.directory.path: 'relative' must be an absolute path",
            "/etc/mwgate/mwgated.toml:6: sink.directory.mode: unknown key (known keys: path)",
        ])
    }

    @Test func loadsAFileFromDisk() throws {
        let path = NSTemporaryDirectory() + "mwgated-\(UUID().uuidString).toml"
        try "[session]\nmode = \"always\"\nbutton_toggle = false\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        do {
            _ = try ConfigurationLoader.load(path: path, paths: testPaths)
            Issue.record("accepted")
        } catch {
            #expect(error.description == "\(path):3: session.button_toggle: unknown key; did you mean 'button_toggles'?")
        }
    }
}
