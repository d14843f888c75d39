import Foundation
import GRDB
import Recording
import Testing
@testable import Buffer

/// A board's flash log fills a gap of a session after its survey went in (issue 21): the
/// correction chunk is sealed into the session and its records document is revised (same name,
/// the chunk named after the others), queued for upload after the chunk.
@Suite("Buffer: records revised after the survey")
struct RecordRevisionTests {
    /// A correction chunk of `board` for `sessionID`: `count` points from epoch ms `t0`, marked backfilled.
    static func correction(_ sessionID: String, seq: Int, t0: Double, count: Int = 300, board: String = "B1") -> ChunkToSeal {
        let p = points(count, t0: t0, startIndex: 100_000 + seq * 1000).map {
            var backfilled = $0
            backfilled.backfilled = true
            return backfilled
        }
        return ChunkToSeal(sessionID: sessionID, board: board, seq: seq, bytes: PointCodec.encode(p), pointCount: count,
                           firstTimestamp: p.first!.gyroscope.timestamp, lastTimestamp: p.last!.gyroscope.timestamp,
                           timeSource: .systemClockSynchronised, missedSamples: 0)
    }

    @Test("a correction sealed after the uploaded survey revises the record: chunk first, then the record, once")
    func revisedAfterUpload() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let id = try recordSession(store, start: 1_800_000_000_000, chunks: 2, submit: .noHazard)
        let first = try #require(try store.recordsDocument(sessionID: id))
        // Everything uploaded.
        let sent = try store.uploadCandidates(limit: 10, perSession: 10)
        #expect(sent.map(\.kind) == [.realtimeData, .realtimeData, .records])
        try store.markSent(sent.map(\.id))
        #expect(try store.backlogStats().count == 0)

        let name = try store.seal(Self.correction(id, seq: 2, t0: 1_800_000_040_000))
        let revised = try #require(try store.recordsDocument(sessionID: id))
        #expect(revised.name == first.name, "the same document")
        #expect(revised.gscopeData == first.gscopeData + [name], "the correction named after the others")
        #expect(revised.pointCount == first.pointCount + 300)
        #expect(revised.revision == 1)
        #expect(revised.revisedAt == 1_800_000_000_000)
        #expect(first.revision == 0 && !first.jsonText.contains("revision"), "a record never revised keeps the original fields")
        #expect(revised.jsonText.contains(#""revision":1"#) && revised.jsonText.contains(#""revised_at":1800000000000"#))

        let queued = try store.uploadCandidates(limit: 10, perSession: 10)
        #expect(queued.map(\.kind) == [.realtimeData, .records], "the chunk, then the revised record")
        #expect(queued.first?.documentName == name)
        #expect(queued.last?.documentName == first.name)
        #expect(queued[0].seq < queued[1].seq)
        #expect(try store.history().first?.samples == first.pointCount + 300, "history counts the correction")
        #expect(try store.dataset(sessionID: id).points.count == first.pointCount + 300)
        try store.markSent(queued.map(\.id))
        #expect(try store.backlogStats().count == 0)
    }

    @Test("a revision while the first version is unsent replaces it: one upload of the record")
    func revisedBeforeUpload() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let id = try recordSession(store, start: 1_800_000_000_000, chunks: 1, submit: .noHazard)
        let name = try store.seal(Self.correction(id, seq: 1, t0: 1_800_000_020_000))
        let second = try store.seal(Self.correction(id, seq: 2, t0: 1_800_000_030_000))
        let queued = try store.uploadCandidates(limit: 10, perSession: 10)
        #expect(queued.map(\.kind) == [.realtimeData, .realtimeData, .realtimeData, .records])
        #expect(queued.filter { $0.kind == .records }.count == 1, "one upload of the record")
        #expect(queued.map(\.seq) == queued.map(\.seq).sorted())
        let last = try #require(queued.last)
        let record = try #require(try store.recordsDocument(forUpload: last).document)
        #expect(record.gscopeData.suffix(2) == [name, second])
        #expect(record.revision == 2)
    }

    @Test("an upload of the old version under way cannot mark the revision sent")
    func oldVersionInFlight() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let id = try recordSession(store, start: 1_800_000_000_000, chunks: 1, submit: .noHazard)
        let taken = try store.uploadCandidates(limit: 10, perSession: 10)
        let oldRecord = try #require(taken.last)
        #expect(oldRecord.kind == .records)
        #expect(try store.recordsDocument(forUpload: oldRecord).document?.revision == 0)
        // The board's log comes while the first version is on its way.
        try store.seal(Self.correction(id, seq: 1, t0: 1_800_000_020_000))
        let replaced = try store.recordsDocument(forUpload: oldRecord)
        #expect(replaced.document == nil, "the old version is no longer the one to upload")
        guard case .replaced = replaced else {
            Issue.record("replaced, not \(replaced): the old row's upload is skipped, not dead-lettered")
            return
        }
        try store.markSent(taken.map(\.id))
        let queued = try store.uploadCandidates(limit: 10, perSession: 10)
        #expect(queued.map(\.kind) == [.realtimeData, .records], "the correction and the revision still go up")
        let last = try #require(queued.last)
        #expect(try store.recordsDocument(forUpload: last).document?.revision == 1)
    }

    @Test("a records upload of a session without a records document says it is missing, not replaced")
    func missingRecord() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let id = try recordSession(store, start: 1_800_000_000_000, chunks: 1, submit: .noHazard)
        var item = try #require(try store.uploadCandidates(limit: 10, perSession: 10).last)
        #expect(item.kind == .records)
        item.sessionID = id + "-gone"
        let upload = try store.recordsDocument(forUpload: item)
        guard case .missing = upload else {
            Issue.record("missing, not \(upload): the upload is dead-lettered as having no survey")
            return
        }
    }

    @Test("a v7 buffer migrates: its sessions, chunks and uploads carry over, its records unrevised until a correction")
    func fromVersion7() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let blob = PointCodec.encode(points(10, t0: 1_800_000_000_000))
        try writeOldDatabase(BufferStore.path(inStateDirectory: dir), upTo: "v7-logged-rests") { db in
            try db.execute(sql: """
                INSERT INTO sessions (id, started_at, start_trigger, ended_at, stop_trigger, state, boards, point_count,
                                      distance_m, time_source, record_name, submitted_at, hazards, no_hazard, day, missed)
                VALUES ('A', 1800000000000, 'control_api', 1800000000100, 'control_api', 'submitted', '["B1"]', 10, 12.5,
                        'system_clock_synchronised', 'GATEWAY-UUID___1800000001', 1800000001, '{"pothole":2}', 0, '2027-01-15', 0);
                INSERT INTO chunks (id, name, session_id, board, seq, upload_seq, upload_state, updated_at, sent_at, point_count,
                                    first_ts, last_ts, time_source, missed, crc32, sealed_at, size, points)
                VALUES (1, 'CHUNK-1', 'A', 'B1', 0, 0, 'sent', 1000, 1000, 10, 1800000000000, 1800000000090,
                        'system_clock_synchronised', 0, \(Int64(CRC32.checksum(blob))), 1000, \(blob.count), X'');
                INSERT INTO record_uploads (doc_name, session_id, upload_seq, state, bytes, enqueued_at, updated_at, sent_at)
                VALUES ('GATEWAY-UUID___1800000001', 'A', 1, 'sent', 300, 1000, 1000, 1000);
                """)
            try db.execute(sql: "INSERT INTO chunk_points (chunk_id, points) VALUES (1, ?)", arguments: [Data(blob)])
        }
        let store = try openStore(dir)
        let record = try #require(try store.recordsDocument(sessionID: "A"))
        #expect(record.name == "GATEWAY-UUID___1800000001")
        #expect(record.gscopeData == ["CHUNK-1"] && record.pointCount == 10 && record.survey == .hazards(["pothole": 2]))
        #expect(record.revision == 0 && record.revisedAt == nil)
        #expect(try store.realtimeDocument(name: "CHUNK-1")?.points.count == 10, "accepted data kept")
        #expect(try store.backlogStats().count == 0, "what was sent stays sent")
        let name = try store.seal(Self.correction("A", seq: 1, t0: 1_800_000_000_100, count: 5))
        let revised = try #require(try store.recordsDocument(sessionID: "A"))
        #expect(revised.gscopeData == ["CHUNK-1", name] && revised.pointCount == 15 && revised.revision == 1)
        #expect(try store.uploadCandidates(limit: 10, perSession: 10).map(\.kind) == [.realtimeData, .records])
    }
}
