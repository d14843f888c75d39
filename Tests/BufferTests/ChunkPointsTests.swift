import Basics
import Foundation
import GRDB
import Recording
import Testing
@testable import Buffer

@Suite("Buffer: a sealed chunk's points in a row of their own")
struct ChunkPointsTests {
    static func pointRows(_ store: BufferStore) throws -> Int {
        try store.reader.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM chunk_points") ?? -1 }
    }

    static func keptChunks(_ store: BufferStore) throws -> Int {
        try store.reader.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM chunks WHERE points IS NOT NULL") ?? -1 }
    }

    @Test("a chunk sealed before (points in the chunk row) still uploads, exports and expires after the upgrade")
    func chunkOfVersion3() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let blob = PointCodec.encode(points(120, t0: 1_800_000_000_000))
        try writeOldDatabase(BufferStore.path(inStateDirectory: dir), upTo: "v3-open-segments") { db in
            try db.execute(sql: """
                INSERT INTO sessions (id, started_at, start_trigger, ended_at, stop_trigger, state, point_count, boards, day)
                VALUES ('S', 1800000000000, 'control_api', 1800000001200, 'control_api', 'awaiting_survey', 120, '["B1"]',
                        '2027-01-15');
                INSERT INTO chunks (id, name, session_id, board, seq, upload_seq, updated_at, point_count, first_ts, last_ts,
                                    time_source, missed, crc32, sealed_at, size, points)
                VALUES (1, 'C0FFEE00-0000-4000-8000-000000000001', 'S', 'B1', 0, 0, 0, 120, 1800000000000, 1800000001190,
                        'system_clock_synchronised', 0, ?, 0, ?, ?);
                """, arguments: [Int64(CRC32.checksum(blob)), blob.count, Data(blob)])
        }
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let store = try openStore(dir, clock: clock)
        #expect(try store.integrityCheck() == "ok")
        let document = try #require(try store.realtimeDocument(name: "C0FFEE00-0000-4000-8000-000000000001"))
        #expect(document.points.map { Int($0.gyroscope.x) } == Array(0..<120))
        #expect(try store.dataset(sessionID: "S").points.count == 120)
        // Beside it, a chunk sealed now, in the same database.
        let id = try recordSession(store, start: 1_800_000_100_000, chunks: 1, size: 50)
        #expect(try store.dataset(sessionID: id).points.count == 50)
        #expect(try store.storedBytes() == store.storedBytesFromScratch())
        try store.markSent(try store.nextBatch().map(\.id))
        clock.advance(31 * 86_400)
        #expect(try store.applyRetention() == 2)
        #expect(throws: BufferStore.StoreError.expired("S")) { try store.dataset(sessionID: "S") }
        #expect(throws: BufferStore.StoreError.expired(id)) { try store.dataset(sessionID: id) }
        #expect(try Self.pointRows(store) == 0)
    }

    @Test("points leave the database with their chunk: retention, the disk budget and a deleted session keep no orphans")
    func noOrphanPoints() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let chunkBytes = Int64(PointCodec.encode(points(500, t0: 0)).count)
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let store = try openStore(dir, budget: DiskBudget(maxBytes: chunkBytes * 6, minFreeBytes: 0), clock: clock)
        let synced = try recordSession(store, id: "S1", start: 1_000, chunks: 2, size: 500, submit: .noHazard)
        let deleted = try recordSession(store, id: "S2", start: 2_000, chunks: 2, size: 500)
        _ = try recordSession(store, id: "S3", start: 3_000, chunks: 2, size: 500)
        #expect(try Self.pointRows(store) == 6)
        try store.markSent(try store.nextBatch().filter { $0.sessionID == synced }.map(\.id))
        try store.deleteSession(deleted)
        #expect(try Self.pointRows(store) == 4)
        // Over budget: S1's synced chunks are evicted first (their rows stay, points NULL).
        _ = try recordSession(store, id: "S4", start: 4_000, chunks: 4, size: 500)
        #expect(try store.evictionCounts()["synced_chunk", default: 0] >= 1)
        #expect(try Self.keptChunks(store) == 6)
        #expect(try Self.pointRows(store) == 6)
        #expect(try store.storedBytes() == store.storedBytesFromScratch())
        #expect(try store.integrityCheck() == "ok")
    }
}
