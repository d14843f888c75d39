import Foundation
import GRDB
import Recording
import Testing
@testable import Buffer

@Suite("Buffer schema migration")
struct MigrationTests {
    /// A v1 database (the schema before the upload state moved into the chunk rows) with two
    /// sessions: A submitted, its chunks sent / dead / in flight / pending and its records
    /// document pending; B recording. The newest chunk id (9) was deleted, so only
    /// `sqlite_sequence` remembers it.
    static func writeVersion1(_ path: String, blob: [UInt8]) throws {
        try writeOldDatabase(path, upTo: "v1") { db in
            let crc = Int64(CRC32.checksum(blob))
            try db.execute(sql: """
                INSERT INTO sessions (id, started_at, start_trigger, ended_at, stop_trigger, state, boards, point_count,
                                      distance_m, time_source, record_name, submitted_at, hazards, no_hazard, day)
                VALUES ('A', 1000, 'control_api', 61000, 'control_api', 'submitted', '["B1"]', 40, 12.5,
                        'system_clock_synchronised', 'U___100', 100, '{}', 1, '1970-01-01');
                INSERT INTO sessions (id, started_at, start_trigger, state, boards, point_count, day)
                VALUES ('B', 90000000, 'control_api', 'recording', '["B1"]', 10, '1970-01-02');
                """)
            for (id, session, seq) in [(Int64(1), "A", 0), (2, "A", 1), (3, "A", 2), (4, "A", 3), (5, "B", 0)] {
                try db.execute(sql: """
                    INSERT INTO chunks (id, name, session_id, board, seq, point_count, first_ts, last_ts, time_source,
                                        missed, crc32, sealed_at, size, points)
                    VALUES (?, ?, ?, 'B1', ?, 10, 0, 90, 'system_clock_synchronised', ?, ?, ?, ?, ?)
                    """, arguments: [id, "CHUNK-\(id)", session, seq, id == 2 ? 3 : (id == 5 ? 2 : 0), crc,
                                     1000 + Double(id), blob.count, Data(blob)])
            }
            try db.execute(sql: "UPDATE sqlite_sequence SET seq = 9 WHERE name = 'chunks'")
            for (id, name, session, seq, state, kind) in [
                (Int64(1), "CHUNK-1", "A", 0, "sent", "realtime_data"), (2, "CHUNK-2", "A", 1, "dead", "realtime_data"),
                (3, "CHUNK-3", "A", 2, "in_flight", "realtime_data"), (4, "CHUNK-4", "A", 3, "pending", "realtime_data"),
                (6, "CHUNK-5", "B", 0, "pending", "realtime_data"), (5, "U___100", "A", 4, "pending", "records"),
            ] {
                try db.execute(sql: """
                    INSERT INTO outbox (id, kind, doc_name, session_id, seq, state, attempts, reason, bytes, enqueued_at,
                                        updated_at, sent_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1000, 1000, ?)
                    """, arguments: [id, kind, name, session, seq, state, state == "dead" ? 3 : 0,
                                     state == "dead" ? "INVALID_ARGUMENT" : nil, blob.count, state == "sent" ? 2000 : nil])
            }
            try db.execute(sql: """
                INSERT INTO session_summaries VALUES ('A', '1970-01-01', 60000, 12.5, 40, '{}', 'unsynced');
                INSERT INTO session_summaries VALUES ('B', '1970-01-02', 0, 0, 10, '{}', 'unsynced');
                INSERT INTO history_days VALUES ('1970-01-01', 1, 60000, 12.5, 40, '{}', 0, 1, 0);
                INSERT INTO history_days VALUES ('1970-01-02', 1, 0, 0, 10, '{}', 0, 1, 0);
                """)
        }
    }

    @Test("a v1 database migrates: upload states, order, dead letters, history and id floor carry over")
    func fromVersion1() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let blob = PointCodec.encode(points(10, t0: 0))
        try Self.writeVersion1(BufferStore.path(inStateDirectory: dir), blob: blob)
        let store = try openStore(dir)
        #expect(try store.integrityCheck() == "ok")
        #expect(try store.outboxState(of: "CHUNK-1")?.state == .sent)
        let dead = try #require(try store.outboxState(of: "CHUNK-2"))
        #expect(dead.state == .dead && dead.attempts == 3 && dead.reason == "INVALID_ARGUMENT")
        // The in-flight item went back to pending at open; per-session order is the old seq.
        let stats = try store.backlogStats()
        #expect(stats.count == 4 && stats.dead == 1 && stats.inFlight == 0)
        let batch = try store.nextBatch(limit: 16, perSession: 4)
        #expect(batch.filter { $0.sessionID == "A" }.map(\.documentName) == ["CHUNK-3", "CHUNK-4", "U___100"])
        #expect(batch.filter { $0.sessionID == "A" }.map(\.seq) == [2, 3, 4])
        #expect(batch.first { $0.sessionID == "A" }?.kind == .realtimeData)
        #expect(batch.last { $0.sessionID == "A" }?.kind == .records)
        #expect(batch.filter { $0.sessionID == "B" }.map(\.documentName) == ["CHUNK-5"])
        #expect(try store.realtimeDocument(name: "CHUNK-4")?.points.count == 10)
        #expect(try rounded(store.history()) == rounded(store.historyFromScratch()))
        #expect(try store.history().map(\.samples).sorted() == [10, 40])
        // Samples missed in gaps counted from the chunks: A's stored total, B's live.
        #expect(try store.history().map(\.missedSamples) == [2, 3])
        #expect(try store.history().map(\.lost) == [0, 0])
        // The next seal of B continues B's upload order and never reuses a deleted id (9).
        try store.markSent(batch.map(\.id))
        let p = points(10, t0: 90_000_000)
        let name = try store.seal(ChunkToSeal(sessionID: "B", board: "B1", seq: 1, bytes: PointCodec.encode(p), pointCount: 10,
                                              firstTimestamp: p[0].gyroscope.timestamp, lastTimestamp: p[9].gyroscope.timestamp,
                                              timeSource: .systemClockSynchronised, missedSamples: 4))
        let next = try store.nextBatch()
        #expect(next.map(\.documentName) == [name])
        #expect(next.first?.seq == 1)
        #expect((next.first?.id ?? 0) > 9)
        #expect(try store.requeueDead(sessionID: "A") == 1)
        #expect(try store.history().first { $0.day == "1970-01-02" }?.samples == 20)
        #expect(try store.history().first { $0.day == "1970-01-02" }?.missedSamples == 6)
        #expect(try rounded(store.history()) == rounded(store.historyFromScratch()))
    }

    @Test("chunk ids are never reused, even after the newest chunks are deleted")
    func idsNeverReused() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let old = try recordSession(store, id: "OLD", start: 1_000, chunks: 3, size: 10)
        let handles = try store.nextBatch().map(\.id)
        try store.deleteSession(old)
        _ = try recordSession(store, id: "NEW", start: 2_000, chunks: 3, size: 10)
        let fresh = try store.nextBatch().map(\.id)
        #expect(Set(fresh).isDisjoint(with: handles))
        #expect(fresh.min()! > handles.max()!)
        // A stale handle from the deleted session changes nothing.
        try store.markSent(handles)
        #expect(try store.backlogStats().count == 3)
    }
}

@Suite("History while recording")
struct LiveHistoryTests {
    @Test("a recording session's samples show live and stay in the day after a stop that changes nothing else")
    func liveSamples() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try store.beginSession(SessionStart(sessionID: "R", startedAt: 5_000, trigger: .controlAPI))
        for seq in 0..<3 {
            let p = points(10, t0: 5_000 + Double(seq) * 100)
            try store.seal(ChunkToSeal(sessionID: "R", board: "B1", seq: seq, bytes: PointCodec.encode(p), pointCount: 10,
                                       firstTimestamp: p[0].gyroscope.timestamp, lastTimestamp: p[9].gyroscope.timestamp,
                                       timeSource: .systemClockSynchronised, missedSamples: 0))
            #expect(try store.history().first?.samples == (seq + 1) * 10)
            #expect(try rounded(store.history()) == rounded(store.historyFromScratch()))
        }
        // Seals do not write the session row: its points and boards are read live.
        #expect(try store.sessions().first { $0.id == "R" }?.points == 30)
        #expect(try store.dataset(sessionID: "R").boards == ["B1"])
        // Ended at its start with no distance: only the sample count moves into the day row.
        try store.endSession(SessionEnd(sessionID: "R", endedAt: 5_000, trigger: .controlAPI, boards: ["B1"], pointCount: 30,
                                        distance: 0, timeSource: .unsynchronisedSystemClock))
        #expect(try store.history().first?.samples == 30)
        #expect(try rounded(store.history()) == rounded(store.historyFromScratch()))
        #expect(try store.sessions().first { $0.id == "R" }?.points == 30)
        // A late seal into the stopped session takes the general path and is counted too.
        let p = points(5, t0: 6_000)
        try store.seal(ChunkToSeal(sessionID: "R", board: "B1", seq: 3, bytes: PointCodec.encode(p), pointCount: 5,
                                   firstTimestamp: p[0].gyroscope.timestamp, lastTimestamp: p[4].gyroscope.timestamp,
                                   timeSource: .systemClockSynchronised, missedSamples: 0))
        #expect(try store.history().first?.samples == 35)
        #expect(try store.sessions().first { $0.id == "R" }?.points == 35)
        #expect(try rounded(store.history()) == rounded(store.historyFromScratch()))
        #expect(throws: BufferStore.StoreError.self) {
            try store.seal(ChunkToSeal(sessionID: "R", board: "B1", seq: 3, bytes: PointCodec.encode(p), pointCount: 5,
                                       firstTimestamp: p[0].gyroscope.timestamp, lastTimestamp: p[4].gyroscope.timestamp,
                                       timeSource: .systemClockSynchronised, missedSamples: 0))
        }
    }
}
