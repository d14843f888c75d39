import Foundation
import GRDB
import Recording
import Testing
@testable import Buffer

@Suite("Buffer: open chunks as appended segments")
struct SegmentTests {
    static let board = "B1"

    static func segment(_ session: String, first: Int, count: Int) -> OpenSegment {
        OpenSegment(sessionID: session, board: board, firstIndex: first,
                    bytes: PointCodec.encode(points(count, t0: 1_800_000_000_000 + Double(first) * 10, startIndex: first)),
                    pointCount: count, timeSource: .systemClockSynchronised)
    }

    static func chunk(_ session: String, seq: Int, first: Int, count: Int, through: Int?) -> ChunkToSeal {
        let p = points(count, t0: 1_800_000_000_000 + Double(first) * 10, startIndex: first)
        var chunk = ChunkToSeal(sessionID: session, board: board, seq: seq, bytes: PointCodec.encode(p), pointCount: count,
                                firstTimestamp: p.first!.gyroscope.timestamp, lastTimestamp: p.last!.gyroscope.timestamp,
                                timeSource: .systemClockSynchronised, missedSamples: 0)
        chunk.segmentsThrough = through
        return chunk
    }

    /// x of every point of `board` in the session's dataset, in order.
    static func xs(_ store: BufferStore, _ session: String) throws -> [Int] {
        try store.dataset(sessionID: session).points.filter { $0.board == board }.map { Int($0.point.gyroscope.x) }
    }

    @Test("a seal drops only the segments it covers; recovery seals the rest from where the chunks end, each point once")
    func recoveryFromSegments() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let store = try openStore(dir)
            try store.beginSession(SessionStart(sessionID: "S", startedAt: 1_800_000_000_000, trigger: .controlAPI))
            try store.append([Self.segment("S", first: 0, count: 150)])
            try store.append([Self.segment("S", first: 150, count: 150)])
            // The chunk ends inside the second segment: the first goes, the second stays.
            try store.seal(Self.chunk("S", seq: 0, first: 0, count: 200, through: 200))
            #expect(try store.reader.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM open_segments") } == 1)
            try store.append([Self.segment("S", first: 300, count: 50)])
            // A live export shows sealed and open points once each.
            #expect(try Self.xs(store, "S") == Array(0..<350))
            #expect(try store.storedBytes() == store.storedBytesFromScratch())
        }
        // Crash: reopen and recover.
        let store = try openStore(dir)
        #expect(try store.recoverInterruptedSessions() == ["S"])
        #expect(try Self.xs(store, "S") == Array(0..<350))
        let chunks = try store.reader.read {
            try Row.fetchAll($0, sql: "SELECT seq, point_count FROM chunks WHERE session_id = 'S' ORDER BY seq").map { [$0[0] as Int, $0[1] as Int] }
        }
        #expect(chunks == [[0, 200], [1, 150]])
        #expect(try store.reader.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM open_segments") } == 0)
        #expect(try store.integrityCheck() == "ok")
    }

    @Test("a damaged segment keeps its valid prefix and nothing after the hole it leaves")
    func damagedSegment() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try store.beginSession(SessionStart(sessionID: "S", startedAt: 1_800_000_000_000, trigger: .controlAPI))
        var broken = Self.segment("S", first: 100, count: 100)
        broken.bytes.removeLast(broken.bytes.count / 2)
        try store.append([Self.segment("S", first: 0, count: 100), broken, Self.segment("S", first: 200, count: 100)])
        try store.recoverInterruptedSessions()
        let xs = try Self.xs(store, "S")
        #expect(xs.count > 100 && xs.count < 200)
        #expect(xs == Array(0..<xs.count))
    }

    @Test("a database of the version before segments opens, and its open chunk is recovered")
    func openChunkOfVersion2() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = BufferStore.path(inStateDirectory: dir)
        do {
            let queue = try DatabaseQueue(path: path)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                try db.execute(sql: "VACUUM")
            }
            try BufferStore.migrator.migrate(queue, upTo: "v2-upload-state-in-chunks")
            let blob = PointCodec.encode(points(120, t0: 1_800_000_000_000))
            try queue.write { db in
                try db.execute(sql: """
                    INSERT INTO sessions (id, started_at, start_trigger, state, day)
                    VALUES ('S', 1800000000000, 'control_api', 'recording', '2027-01-15');
                    """)
                try db.execute(sql: """
                    INSERT INTO open_chunks (session_id, board, seq, point_count, time_source, updated_at, size, points)
                    VALUES ('S', 'B1', 0, 120, 'system_clock_synchronised', 0, ?, ?)
                    """, arguments: [blob.count, Data(blob)])
            }
        }
        let store = try openStore(dir)
        #expect(try store.integrityCheck() == "ok")
        #expect(try store.recoverInterruptedSessions() == ["S"])
        #expect(try Self.xs(store, "S") == Array(0..<120))
        #expect(try store.storedBytes() == store.storedBytesFromScratch())
    }
}
