import Foundation
import Recording
import Testing
import UpstreamFixtures
@testable import Buffer
@testable import Uplink

func checkSessionInPostgres(_ pg: PostgresServer, store: BufferStore, session: RecordedSession) async throws {
    let realtimeSchema = try loadSchema("realtime_data")
    let count = try await pg.query("SELECT count(*) FROM realtime_data WHERE session_id = '\(session.sessionID)'")
    #expect(Int(count) == session.chunkNames.count)
    let points = try await pg.query("SELECT coalesce(sum(jsonb_array_length(data)), 0) FROM realtime_data WHERE session_id = '\(session.sessionID)'")
    #expect(Int(points) == session.record.pointCount)
    let pointCounts = try await pg.query("SELECT coalesce(sum(point_count), 0) FROM realtime_data WHERE session_id = '\(session.sessionID)'")
    #expect(Int(pointCounts) == session.record.pointCount)
    let gscope = try await pg.query("SELECT gscope_data FROM records WHERE name = '\(session.record.name)'")
    let names = try JSONSerialization.jsonObject(with: Data(gscope.utf8)) as? [String]
    #expect(names == session.chunkNames)
    let record = try await pg.query("""
        SELECT json_build_object('user_id', user_id, 'timestamp', "timestamp", 'hazards', hazards, 'gscope_data', gscope_data,
               'no_hazard', no_hazard, 'schema_version', schema_version, 'session_id', session_id, 'boards', boards,
               'start', "start", 'end', "end", 'point_count', point_count, 'time_source', time_source)
        FROM records WHERE name = '\(session.record.name)'
        """)
    let row = try JSONSerialization.jsonObject(with: Data(record.utf8))
    #expect(jsonEqual(row, try plainJSON(.records(session.record))))
    // One chunk in full: the stored row equals the buffer's document.
    let name = try #require(session.chunkNames.first)
    let chunk = try await pg.query("""
        SELECT json_build_object('data', data, 'session_id', session_id, 'board', board, 'seq', seq, 'schema_version', schema_version)
        FROM realtime_data WHERE name = '\(name)'
        """)
    let mine = try #require(try store.realtimeDocument(name: name))
    let stored = try JSONSerialization.jsonObject(with: Data(chunk.utf8))
    #expect(jsonEqual(stored, try plainJSON(.realtimeData(mine))))
    // The schema holds for the stored row too (through the typed round trip of the buffer's document).
    let typed = try #require(FirestoreEncoding.plain(try JSONSerialization.jsonObject(with: Data(typedText(.realtimeData(mine)).utf8))) as? [String: Any])
    #expect(schemaViolations(typed, realtimeSchema).isEmpty)
}

func typedText(_ doc: SinkDocument) -> String {
    var s = #"{"mapValue":{"fields":"#
    FirestoreEncoding.writeFields(doc.fields, to: &s)
    return s + "}}"
}

@Suite("PostgreSQL", .serialized)
struct PostgresTests {
    @Test("a recorded session lands in records and realtime_data; replays and a server restart mid-drain leave no duplicates")
    func endToEndAndFaults() async throws {
        try await withPostgresServer { pg in
            let dir = temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = try openStore(dir)
            let first = try recordSession(into: store, boards: 2, seconds: 45)
            let sink = PostgresSink(configuration: pg.configuration)
            let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(idlePollInterval: 0.2))
            try await runReal(service) { (try? store.backlogStats().count) == 0 }
            try await checkSessionInPostgres(pg, store: store, session: first)
            #expect(try await pg.query("SELECT max(version) FROM mwgate_migrations") == "2")

            // A replay after an unknown outcome is a no-op.
            let docs = try first.chunkNames.map { SinkDocument.realtimeData(try #require(try store.realtimeDocument(name: $0))) }
            try await sink.write(docs + [.records(first.record)])
            #expect(try await pg.query("SELECT count(*) FROM realtime_data") == "\(first.chunkNames.count)")

            // The server goes away in the middle of a drain and comes back: everything arrives once.
            let second = try recordSession(into: store, boards: 4, seconds: 60, startSecond: 1_800_002_000)
            let third = try recordSession(into: store, boards: 1, seconds: 30, startSecond: 1_800_004_000)
            let slow = SyncConfiguration(backoff: Backoff(base: 0.05, cap: 0.5), maxCommitsPerSecond: 4, documentsPerCommit: 1,
                                         concurrentSessions: 1, idlePollInterval: 0.2)
            let service2 = SyncService(store: store, sink: sink, configuration: slow)
            let task = Task { try await service2.run() }
            #expect(await eventually { (try? store.sentCount()) ?? 0 >= first.chunkNames.count + 3 })
            await pg.halt(mode: "immediate")
            #expect(await eventually { await service2.status.retries >= 2 })
            try await pg.restart()
            #expect(await eventually(timeout: 120) { (try? store.backlogStats().count) == 0 })
            task.cancel()
            try await task.value
            let total = first.chunkNames.count + second.chunkNames.count + third.chunkNames.count
            #expect(try await pg.query("SELECT count(*) FROM realtime_data") == "\(total)")
            #expect(try await pg.query("SELECT count(*) FROM records") == "3")
            try await checkSessionInPostgres(pg, store: store, session: second)
            try await checkSessionInPostgres(pg, store: store, session: third)
            #expect(await sink.connectionsOpened >= 2)
            await sink.close()
        }
    }
}
