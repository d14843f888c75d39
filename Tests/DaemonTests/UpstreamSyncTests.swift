import Foundation
import Glibc
import ServiceSupport
import TestSupport
import Testing
import UpstreamFixtures

/// The built mwgated uploading to real upstreams: Google's Firestore emulator and a throwaway
/// PostgreSQL, configured from its TOML file, secrets delivered as systemd credentials.
/// Sessions are recorded through `mwctl` from two mwsim boards and an NMEA replay; the
/// documents are then read back from the upstream and compared with the gateway's buffer.
/// Each test also takes the upstream away while a session records and checks that the
/// backlog drains by itself once it is back.
@Suite(.enabled(if: TestBus.isAvailable))
struct UpstreamSyncTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// A session as the gateway's buffer holds it after its survey.
    struct RecordedSession {
        struct Chunk: Hashable {
            var name: String
            var board: String
            var seq: Int
            var points: Int
        }
        var id: String
        var points: Int
        var chunks: [Chunk]
        var boards: Set<String> { Set(chunks.map(\.board)) }
    }

    static let survey = ["pothole": 3, "kerb": 1]

    func mwctl(_ fixture: DaemonFixture, _ arguments: [String]) async throws -> [String: Any] {
        let output = try await fixture.bus.run(try DaemonFixture.executable("mwctl"), arguments + ["--json"])
        guard let object = try JSONSerialization.jsonObject(with: Data(output.utf8)) as? [String: Any] else {
            throw FixtureError(description: "mwctl \(arguments) printed no JSON object: \(output)")
        }
        return object
    }

    /// The backlog `mwctl sync` reports (documents not yet accepted upstream) and the last error.
    func backlog(_ fixture: DaemonFixture) async throws -> (documents: Int, lastError: String?) {
        let report = try await mwctl(fixture, ["sync"])
        let backlog = report["backlog"] as? [String: Any]
        let sync = report["sync"] as? [String: Any]
        return ((backlog?["documents"] as? NSNumber)?.intValue ?? -1, sync?["lastError"] as? String)
    }

    /// Starts mwgated and waits until both boards are connected past their handshake (idle
    /// with the sensors off between sessions, the default) and the replay gave a fix.
    func startGateway(_ fixture: DaemonFixture, credentials: [String: String] = [:]) async throws {
        try fixture.startDaemon(watchdog: .seconds(5), credentials: credentials)
        try await waitUntil("READY=1", within: .seconds(60)) { fixture.notify.messages.contains { $0.contains("READY=1") } }
        try await waitUntil("both boards connected", within: .seconds(60)) {
            fixture.notify.messages.contains { $0.contains("STATUS=2/2 boards streaming") || $0.contains("(2 idle, sensors off)") }
        }
        try await waitUntil("fix-gained", within: .seconds(60)) { !fixture.entries(withMessageID: MessageID.fixGained.rawValue).isEmpty }
    }

    /// Records about `seconds` through mwctl, stops, submits the survey; `whileRecording`
    /// runs between start and stop (an outage begins there).
    func recordSession(_ fixture: DaemonFixture, seconds: Double = 4, whileRecording: () async throws -> Void = {}) async throws -> RecordedSession {
        let started = try await mwctl(fixture, ["session", "start"])
        let id = try #require(started["sessionID"] as? String)
        try await Task.sleep(for: .seconds(seconds / 2))
        try await whileRecording()
        try await Task.sleep(for: .seconds(seconds / 2))
        let ended = try await mwctl(fixture, ["session", "stop"])
        #expect(ended["sessionID"] as? String == id)
        let points = try #require((ended["points"] as? NSNumber)?.intValue)
        _ = try await mwctl(fixture, ["survey", "submit", "--session", id] + Self.survey.sorted { $0.key < $1.key }.flatMap { ["--hazard", "\($0.key)=\($0.value)"] })
        let rows = try fixture.query("SELECT name, board, seq, point_count FROM chunks WHERE session_id = '\(id)' ORDER BY board, seq")
        let chunks = rows.split(separator: "\n").compactMap { line -> RecordedSession.Chunk? in
            let f = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard f.count == 4, let seq = Int(f[2]), let n = Int(f[3]) else { return nil }
            return RecordedSession.Chunk(name: f[0], board: f[1], seq: seq, points: n)
        }
        // Both boards streamed into the session; the buffer's chunks hold every point it counted.
        #expect(Set(chunks.map(\.board)).count == 2, "chunks: \(rows)")
        #expect(chunks.map(\.points).reduce(0, +) == points)
        #expect(points > 100)
        return RecordedSession(id: id, points: points, chunks: chunks)
    }

    /// Waits for the sync to report failure for a backlog that holds the session's documents.
    func expectFailingSync(_ fixture: DaemonFixture, holding session: RecordedSession) async throws {
        do {
            try await waitUntil("sync-failing in the journal", within: .seconds(60)) {
                !fixture.entries(withMessageID: MessageID.syncFailing.rawValue).isEmpty
            }
        } catch {
            throw FixtureError(description: "\(error); sync: \((try? await mwctl(fixture, ["sync"])) ?? [:]); journal:\n"
                               + fixture.journal.journalEntries.suffix(30).map { $0["MESSAGE"] ?? "" }.joined(separator: "\n"))
        }
        let (documents, lastError) = try await backlog(fixture)
        // Every realtime_data document and the records document are still waiting.
        #expect(documents >= session.chunks.count + 1, "backlog \(documents)")
        #expect(lastError != nil)
    }

    /// After the upstream is back: the journal says so and the backlog is empty.
    func expectRecoveredSync(_ fixture: DaemonFixture) async throws {
        try await waitUntil("sync-recovered in the journal", within: .seconds(120)) {
            !fixture.entries(withMessageID: MessageID.syncRecovered.rawValue).isEmpty
        }
        try await waitUntil("an empty backlog", within: .seconds(60)) { try await backlog(fixture).documents == 0 }
    }

    func deviceID(_ fixture: DaemonFixture) throws -> String {
        try String(contentsOfFile: fixture.stateDirectory + "/device-id", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: Firestore

    @Test(.enabled(if: FirestoreEmulator.missing == nil, "\(FirestoreEmulator.missing ?? "")"))
    func firestoreSinkReceivesTheSessionAfterAnOutageThatLastedTheWholeRecording() async throws {
        // The emulator's port is fixed up front: the gateway is configured for an upstream
        // that is down while the session records and comes up only afterwards.
        let port = freePort()
        let fixture = try DaemonFixture(sessionMode: "manual", extraConfiguration: """
            [sink]
            type = "firestore"

            [sink.firestore]
            project_id = "demo-mwgate"
            emulator_host = "127.0.0.1:\(port)"
            """)
        defer { fixture.tearDown() }
        try await startGateway(fixture)
        let session = try await recordSession(fixture)
        try await expectFailingSync(fixture, holding: session)
        #expect(try fixture.query("SELECT COUNT(*) FROM chunks WHERE session_id = '\(session.id)' AND upload_state = 'sent'") == "0")

        let emulator = try await FirestoreEmulator(projectID: "demo-mwgate", port: port)
        defer { emulator.stop() }
        try await waitUntil("every realtime_data document in Firestore", within: .seconds(120)) {
            Set(try await emulator.list("realtime_data")) == Set(session.chunks.map(\.name))
        }
        try await waitUntil("the records document in Firestore", within: .seconds(60)) { try await !emulator.list("records").isEmpty }
        try await expectRecoveredSync(fixture)

        // realtime_data: one document per sealed chunk, the buffer's points, per the schema.
        let realtimeSchema = try loadDocumentSchema("realtime_data", repositoryRoot: Self.repositoryRoot)
        var located = 0
        for chunk in session.chunks {
            let document = try #require(try await emulator.document("realtime_data", chunk.name))
            #expect(document["session_id"] as? String == session.id)
            #expect(document["board"] as? String == chunk.board)
            #expect(document["seq"] as? Int64 == Int64(chunk.seq))
            #expect(document["schema_version"] as? Int64 == 1)
            let points = try #require(document["data"] as? [[String: Any]])
            #expect(points.count == chunk.points)
            #expect(points.allSatisfy { $0["gyroscope"] is [String: Any] })
            located += points.filter { $0["location"] is [String: Any] }.count
            let violations = schemaViolations(document, realtimeSchema)
            #expect(violations.isEmpty, "realtime_data/\(chunk.name): \(violations.prefix(5))")
        }
        // The NMEA replay had a fix before the session started: points carry locations.
        #expect(located > 0)

        // records: one document for the session, named USER___TIMESTAMP, listing the chunks.
        let records = try await emulator.list("records")
        #expect(records.count == 1)
        let name = try #require(records.first)
        let record = try #require(try await emulator.document("records", name))
        let user = try deviceID(fixture)
        #expect(record["user_id"] as? String == user)
        #expect(name == "\(user)___\((record["timestamp"] as? Int64) ?? -1)")
        #expect(record["session_id"] as? String == session.id)
        #expect(record["point_count"] as? Int64 == Int64(session.points))
        #expect(record["no_hazard"] as? Bool == false)
        #expect((record["hazards"] as? [String: Any])?.mapValues { ($0 as? Int64) ?? -1 } == Self.survey.mapValues(Int64.init))
        let gscope = try #require(record["gscope_data"] as? [String])
        #expect(gscope.count == session.chunks.count && Set(gscope) == Set(session.chunks.map(\.name)))
        #expect(Set((record["boards"] as? [String]) ?? []) == session.boards)
        #expect(((record["end"] as? Int64) ?? 0) > ((record["start"] as? Int64) ?? .max))
        let violations = schemaViolations(record, try loadDocumentSchema("records", repositoryRoot: Self.repositoryRoot))
        #expect(violations.isEmpty, "records/\(name): \(violations.prefix(5))")
        #expect(try fixture.query("SELECT COUNT(*) FROM chunks WHERE session_id = '\(session.id)' AND upload_state != 'sent'") == "0")
    }

    // MARK: PostgreSQL

    @Test(.enabled(if: PostgresServer.missing == nil, "\(PostgresServer.missing ?? "")"))
    func postgresSinkLogsInWithTheCredentialAndLosesNothingWhenTheServerGoesAwayMidSession() async throws {
        let server = try await PostgresServer.launch()
        defer { server.destroy() }
        // A role of its own that must log in with its password: the fixture trusts every
        // other login, but the first matching pg_hba line wins.
        let password = "correct horse \(UUID().uuidString.prefix(8))"
        try await server.query("CREATE ROLE gateway LOGIN PASSWORD '\(password)'")
        try await server.query("CREATE DATABASE mwgate OWNER gateway")
        let hba = "\(server.dir)/data/pg_hba.conf"
        let rules = try String(contentsOfFile: hba, encoding: .utf8)
        try ("host all gateway 127.0.0.1/32 scram-sha-256\n" + rules).write(toFile: hba, atomically: false, encoding: .utf8)
        #expect(try await server.query("SELECT pg_reload_conf()") == "t")

        let fixture = try DaemonFixture(sessionMode: "manual", extraConfiguration: """
            [sink]
            type = "postgres"

            [sink.postgres]
            host = "127.0.0.1"
            port = \(server.port)
            user = "gateway"
            database = "mwgate"
            sslmode = "disable"
            password_credential = "postgres-password"
            """)
        defer { fixture.tearDown() }
        // As systemd delivers LoadCredential=postgres-password:FILE (a trailing newline included).
        try await startGateway(fixture, credentials: ["postgres-password": password + "\n"])

        // Upstream up: the session arrives.
        let first = try await recordSession(fixture)
        try await waitUntil("the first session's records row", within: .seconds(90)) {
            (try? await server.query("SELECT COUNT(*) FROM records WHERE session_id = '\(first.id)'", database: "mwgate")) == "1"
        }
        try await expectSessionInPostgres(first, server: server, user: try deviceID(fixture), expectLocations: true)
        // The test's own psql sessions (as the superuser) may still be ending: only the others count.
        #expect(try await server.query("SELECT DISTINCT usename FROM pg_stat_activity WHERE datname = 'mwgate' AND usename <> current_user")
            == "gateway")

        // The server goes away while the next session records, and stays away past the stop
        // and the survey: uploads fail, everything waits in the backlog.
        let second = try await recordSession(fixture) { await server.halt(mode: "immediate") }
        try await expectFailingSync(fixture, holding: second)
        try await server.restart()
        try await waitUntil("the second session's records row", within: .seconds(120)) {
            (try? await server.query("SELECT COUNT(*) FROM records WHERE session_id = '\(second.id)'", database: "mwgate")) == "1"
        }
        try await expectRecoveredSync(fixture)
        try await expectSessionInPostgres(second, server: server, user: try deviceID(fixture), expectLocations: false)
        try await expectSessionInPostgres(first, server: server, user: try deviceID(fixture), expectLocations: true)
        #expect(try await server.query("SELECT COUNT(*) FROM realtime_data", database: "mwgate") == "\(first.chunks.count + second.chunks.count)")
        #expect(try await server.query("SELECT COUNT(*) FROM records", database: "mwgate") == "2")
    }

    /// The session's rows: one realtime_data row per chunk with its points, one records row.
    func expectSessionInPostgres(_ session: RecordedSession, server: PostgresServer, user: String, expectLocations: Bool) async throws {
        let rows = try await server.query("""
            SELECT name, board, seq, schema_version, point_count, jsonb_array_length(data),
                   (SELECT COUNT(*) FROM jsonb_array_elements(data) p WHERE jsonb_typeof(p->'gyroscope') = 'object'),
                   (SELECT COUNT(*) FROM jsonb_array_elements(data) p WHERE jsonb_typeof(p->'location') = 'object'),
                   (SELECT COUNT(*) FROM jsonb_array_elements(data) p
                    WHERE jsonb_typeof(p->'location') = 'object' OR p->>'location_missing' IN ('no_fix', 'stale_fix'))
            FROM realtime_data WHERE session_id = '\(session.id)' ORDER BY board, seq
            """, database: "mwgate")
        var located = 0
        var arrived: [RecordedSession.Chunk] = []
        for line in rows.split(separator: "\n") {
            let f = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            try #require(f.count == 9, "row \(line)")
            let points = Int(f[5]) ?? -1
            arrived.append(.init(name: f[0], board: f[1], seq: Int(f[2]) ?? -1, points: points))
            #expect(f[3] == "1", "schema_version")
            #expect(f[4] == f[5], "point_count column equals the points stored")
            #expect(f[6] == f[5], "every point has a gyroscope object")
            located += Int(f[7]) ?? 0
            #expect(f[8] == f[5], "every point has a location or says why not")
        }
        #expect(arrived == session.chunks)
        // The fixture replays ten minutes of fixes from the daemon's start: the first session is
        // sure to record inside them, the second (after an outage of unknown length) is not.
        if expectLocations { #expect(located > 0) }

        let text = try await server.query("""
            SELECT json_build_object('name', name, 'user_id', user_id, 'timestamp', "timestamp", 'hazards', hazards,
                                     'gscope_data', gscope_data, 'no_hazard', no_hazard, 'schema_version', schema_version,
                                     'boards', boards, 'start', "start", 'end', "end", 'point_count', point_count,
                                     'time_source', time_source)
            FROM records WHERE session_id = '\(session.id)'
            """, database: "mwgate")
        let record = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
        let timestamp = (record["timestamp"] as? NSNumber)?.int64Value ?? -1
        #expect(record["user_id"] as? String == user)
        #expect(record["name"] as? String == "\(user)___\(timestamp)")
        #expect((record["point_count"] as? NSNumber)?.intValue == session.points)
        #expect((record["no_hazard"] as? NSNumber)?.boolValue == false)
        #expect((record["hazards"] as? [String: Any])?.mapValues { ($0 as? NSNumber)?.intValue ?? -1 } == Self.survey)
        let gscope = (record["gscope_data"] as? [String]) ?? []
        #expect(gscope.count == session.chunks.count && Set(gscope) == Set(session.chunks.map(\.name)))
        #expect(Set((record["boards"] as? [String]) ?? []) == session.boards)
        #expect(((record["end"] as? NSNumber)?.int64Value ?? 0) > ((record["start"] as? NSNumber)?.int64Value ?? .max))
        #expect(["system_clock_synchronised", "gnss_corrected", "unsynchronised_system_clock"].contains(record["time_source"] as? String ?? ""))
    }
}
