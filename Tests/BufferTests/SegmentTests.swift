import Basics
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

    /// The journal files beside the store's database.
    static func journalFiles(_ dir: String) -> [String] {
        SegmentJournal.files(databasePath: BufferStore.path(inStateDirectory: dir)).map(\.path)
    }

    static func record(_ session: String, first: Int, xs: [Int], times: (Int) -> Double, held: Bool = false) -> OpenSegment {
        let p = xs.map { x in
            RecordedPoint(gyroscope: GyroReading(x: Float(x), y: 1, z: 2, timestamp: times(x)), location: nil, missingLocation: .noFix)
        }
        return OpenSegment(sessionID: session, board: board, firstIndex: first, bytes: PointCodec.encode(p), pointCount: p.count,
                           timeSource: .systemClockSynchronised, held: held)
    }

    /// A board's points held after a gap (issue 21): the first points after the gap were
    /// written provisionally at indices 100... with times inside the gap (before it was
    /// known); held records then carry them again with their times and the backfilled
    /// samples placed so far; at the release the whole hold is written at its final indices.
    @Test("held records replace the provisional points after a gap, and the released hold replaces them")
    func heldRecords() throws {
        let t0 = 1_800_000_000_000.0
        let right: (Int) -> Double = { t0 + Double($0) * 10 }
        for released in [false, true] {
            let dir = temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            do {
                let store = try openStore(dir)
                try store.beginSession(SessionStart(sessionID: "S", startedAt: t0, trigger: .controlAPI))
                try store.append([Self.record("S", first: 0, xs: Array(0..<100), times: right)])
                // Samples 100..199 lost by the stream; 200..249 stamped into the gap at first.
                try store.append([Self.record("S", first: 100, xs: Array(200..<250), times: { t0 + Double($0 - 100) * 10 })])
                try store.append([Self.record("S", first: 100, xs: Array(200..<260), times: right, held: true)])
                try store.append([Self.record("S", first: 100, xs: Array(100..<150) + Array(260..<270), times: right, held: true)])
                try store.seal(Self.chunk("S", seq: 0, first: 0, count: 100, through: 100))
                if released {
                    try store.append([Self.record("S", first: 100, xs: Array(100..<280), times: right)])
                }
                #expect(Self.journalFiles(dir).count == 1, "the held records are needed until the hold's first chunk is sealed")
            }
            let store = try openStore(dir)
            #expect(try store.recoverInterruptedSessions() == ["S"])
            let points = try store.dataset(sessionID: "S").points.map(\.point)
            let expected = released ? Array(0..<280) : Array(0..<150) + Array(200..<270)
            #expect(points.map { Int($0.gyroscope.x) } == expected, "released \(released)")
            #expect(points.allSatisfy { $0.gyroscope.timestamp == right(Int($0.gyroscope.x)) })
        }
    }

    /// Issue 21: a point journaled provisionally before its accelerometer reading arrived is
    /// journaled again, at its index, once the reading is known; recovery keeps the later
    /// record. Points without a later record (and journals written before, which have none)
    /// recover as they were journaled.
    @Test("a point journaled again with its accelerometer reading replaces its provisional record")
    func accelerometerReadingsJournaledAgain() throws {
        let t0 = 1_800_000_000_000.0
        func record(_ indices: Range<Int>, withReadings: Bool) -> OpenSegment {
            let p = indices.map { i in
                RecordedPoint(gyroscope: GyroReading(x: Float(i), y: 1, z: 2, timestamp: t0 + Double(i) * 10), location: nil,
                              missingLocation: .noFix,
                              accelerometer: withReadings ? AccelerometerReading(x: Float(i) / 8192, y: 0, z: 1, timestamp: t0 + Double(i) * 10) : nil)
            }
            return OpenSegment(sessionID: "S", board: Self.board, firstIndex: indices.lowerBound, bytes: PointCodec.encode(p),
                               pointCount: p.count, timeSource: .systemClockSynchronised)
        }
        for journaledAgain in [false, true] {
            let dir = temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            do {
                let store = try openStore(dir)
                try store.beginSession(SessionStart(sessionID: "S", startedAt: t0, trigger: .controlAPI))
                try store.append([record(0..<100, withReadings: false)])
                try store.append([record(100..<150, withReadings: false)] + (journaledAgain ? [record(40..<60, withReadings: true)] : []))
                if journaledAgain { try store.append([record(90..<95, withReadings: true)]) }
            }
            let store = try openStore(dir)
            #expect(try store.recoverInterruptedSessions() == ["S"])
            let points = try store.dataset(sessionID: "S").points.map(\.point)
            #expect(points.map { Int($0.gyroscope.x) } == Array(0..<150))
            let withReading = points.filter { $0.accelerometer != nil }.map { Int($0.gyroscope.x) }
            #expect(withReading == (journaledAgain ? Array(40..<60) + Array(90..<95) : []), "journaled again \(journaledAgain)")
            #expect(points.allSatisfy { $0.accelerometer.map { Int($0.x * 8192) } ?? Int($0.gyroscope.x) == Int($0.gyroscope.x) })
            #expect(points.allSatisfy { $0.gyroscope.timestamp == t0 + Double($0.gyroscope.x) * 10 })
        }
    }

    /// Issue 21: the gap a restart left is kept by the store until the board's log fills it,
    /// so a second restart before that still knows it (and where it ended). A session whose
    /// survey went in keeps its gap (the filling revises its records document); a deleted
    /// session's goes.
    @Test("a restart gap is kept across restarts until it is filled, survey or not; a deleted session's goes")
    func restartGapsKept() throws {
        let t0 = 1_800_000_000_000.0
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        for id in ["S", "T"] {
            let store = try openStore(dir)
            let start = t0 + (id == "S" ? 0 : 10_000)
            try store.beginSession(SessionStart(sessionID: id, startedAt: start, trigger: .controlAPI))
            try store.append([Self.record(id, first: 0, xs: Array(0..<150), times: { start + Double($0) * 10 })])
            #expect(try store.recoverInterruptedSessions() == [id])
        }
        var store = try openStore(dir)
        #expect(try store.restartGaps().map(\.sessionID) == ["S", "T"])
        #expect(try store.restartGaps().allSatisfy { $0.until == nil && $0.tail.count == 150 && $0.nextSeq == 1 })
        try store.restartGapBounded(sessionID: "S", board: Self.board, until: t0 + 9_000)
        _ = try store.submitSurvey(sessionID: "T", survey: .noHazard, submittedAt: Date(timeIntervalSince1970: 1_800_000_100))
        store = try openStore(dir)
        #expect(try store.recoverInterruptedSessions().isEmpty)
        let gaps = try store.restartGaps()
        #expect(gaps.map(\.sessionID) == ["S", "T"], "the submitted session keeps its gap")
        #expect(gaps.first?.until == t0 + 9_000)
        #expect(gaps.first?.head.count == 150, "what the session after the gap stored: its anchors")
        try store.restartGapClosed(sessionID: "S", board: Self.board)
        store = try openStore(dir)
        #expect(try store.restartGaps().map(\.sessionID) == ["T"])
        try store.deleteSession("T")
        #expect(try store.restartGaps().isEmpty, "the deleted session's gap is gone")
    }

    @Test("a seal keeps the segments it does not cover; recovery seals the rest from where the chunks end, each point once")
    func recoveryFromSegments() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let store = try openStore(dir)
            try store.beginSession(SessionStart(sessionID: "S", startedAt: 1_800_000_000_000, trigger: .controlAPI))
            try store.append([Self.segment("S", first: 0, count: 150)])
            try store.append([Self.segment("S", first: 150, count: 150)])
            // The chunk ends inside the second segment, which is still needed: the file stays.
            try store.seal(Self.chunk("S", seq: 0, first: 0, count: 200, through: 200))
            #expect(Self.journalFiles(dir).count == 1)
            // The segments are in the journal, not in the database.
            #expect(try store.reader.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM open_segments") } == 0)
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
        #expect(Self.journalFiles(dir).isEmpty)
        #expect(try store.integrityCheck() == "ok")
    }

    @Test("a seal that covers every segment, and the session's end, delete the journal's files")
    func coveredFilesGo() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try store.beginSession(SessionStart(sessionID: "S", startedAt: 1_800_000_000_000, trigger: .controlAPI))
        try store.append([Self.segment("S", first: 0, count: 100)])
        try store.append([Self.segment("S", first: 100, count: 100)])
        #expect(Self.journalFiles(dir).count == 1)
        try store.seal(Self.chunk("S", seq: 0, first: 0, count: 200, through: 200))
        #expect(Self.journalFiles(dir).isEmpty)
        try store.append([Self.segment("S", first: 200, count: 50)])
        #expect(Self.journalFiles(dir).count == 1)
        #expect(try store.storedBytes() == store.storedBytesFromScratch())
        try store.seal(Self.chunk("S", seq: 1, first: 200, count: 50, through: 250))
        try store.append([Self.segment("S", first: 250, count: 10)])
        try store.endSession(SessionEnd(sessionID: "S", endedAt: 1_800_000_010_000, trigger: .controlAPI, boards: ["B1"], pointCount: 260, distance: 0,
                                        timeSource: .systemClockSynchronised))
        #expect(Self.journalFiles(dir).isEmpty)
        #expect(try store.storedBytes() == store.storedBytesFromScratch())
    }

    static func fileSize(_ path: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0
    }

    @Test("a record torn by the crash ends its file: the whole records before it are recovered")
    func tornRecord() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var firstWrite = 0
        do {
            let store = try openStore(dir)
            try store.beginSession(SessionStart(sessionID: "S", startedAt: 1_800_000_000_000, trigger: .controlAPI))
            try store.append([Self.segment("S", first: 0, count: 100)])
            firstWrite = Self.fileSize(try #require(Self.journalFiles(dir).first))
            try store.append([Self.segment("S", first: 100, count: 100)])
        }
        // Power cut in the middle of the second second's write; and, in a copy, one byte of the
        // first record flipped: the CRC refuses it and everything after it.
        let file = try #require(Self.journalFiles(dir).first)
        let bytes = try #require(FileManager.default.contents(atPath: file))
        #expect(SegmentJournal.decode([UInt8](bytes)).map(\.pointCount) == [100, 100])
        var damaged = [UInt8](bytes)
        damaged[40] ^= 0xFF
        #expect(SegmentJournal.decode(damaged).isEmpty)
        try bytes.prefix(firstWrite + 200).write(to: URL(fileURLWithPath: file))
        let store = try openStore(dir)
        #expect(try store.recoverInterruptedSessions() == ["S"])
        #expect(try Self.xs(store, "S") == Array(0..<100))
    }

    @Test("a retired file is written over by the next session's, without growing it; only the new records are read")
    func spareIsRecycled() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let spare = SegmentJournal.sparePath(BufferStore.path(inStateDirectory: dir))
        var spareSize = 0
        do {
            let store = try openStore(dir)
            try store.beginSession(SessionStart(sessionID: "A", startedAt: 1_800_000_000_000, trigger: .controlAPI))
            for first in stride(from: 0, to: 600, by: 100) { try store.append([Self.segment("A", first: first, count: 100)]) }
            try store.endSession(SessionEnd(sessionID: "A", endedAt: 1_800_000_010_000, trigger: .controlAPI, boards: [], pointCount: 0,
                                            distance: 0, timeSource: .systemClockSynchronised))
            spareSize = Self.fileSize(spare)
            #expect(spareSize > 8192 && Self.journalFiles(dir).isEmpty)
            try store.beginSession(SessionStart(sessionID: "B", startedAt: 1_800_000_020_000, trigger: .controlAPI))
            try store.append([Self.segment("B", first: 0, count: 10)])
            // The spare became B's file: same size (written over, not truncated), no spare left.
            #expect(!FileManager.default.fileExists(atPath: spare))
            #expect(Self.fileSize(try #require(Self.journalFiles(dir).first)) == spareSize)
            #expect(try store.storedBytes() == store.storedBytesFromScratch())
        }
        // Crash: B's 10 points come back, nothing of A's old records behind them (another salt).
        let file = try #require(Self.journalFiles(dir).first)
        #expect(SegmentJournal.decode([UInt8](try #require(FileManager.default.contents(atPath: file)))).map(\.sessionID) == ["B"])
        let store = try openStore(dir)
        #expect(try store.recoverInterruptedSessions() == ["B"])
        #expect(try Self.xs(store, "B") == Array(0..<10))
        #expect(try store.storedBytes() == store.storedBytesFromScratch())
    }

    @Test("each second's write ends on a 4 KiB block, so the next one does not write the last block again")
    func writesEndOnBlocks() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try store.beginSession(SessionStart(sessionID: "S", startedAt: 1_800_000_000_000, trigger: .controlAPI))
        var first = 0
        for count in [1, 100, 77, 300, 5] {
            try store.append([Self.segment("S", first: first, count: count)])
            first += count
            #expect(Self.fileSize(try #require(Self.journalFiles(dir).first)) % SegmentJournal.blockSize == 0)
        }
        #expect(try Self.xs(store, "S") == Array(0..<first))
    }

    @Test("packing: lossless for any bytes and stride; a second of gyro points shrinks")
    func packing() throws {
        var rng = SeededRandom(seed: 19)
        print("packing test: \(rng)")
        for _ in 0..<200 {
            let raw = (0..<Int.random(in: 0...300, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) & [0, 1, 0xFF].randomElement(using: &rng)! }
            let stride = Int.random(in: 1...60, using: &rng)
            let packed = SegmentPacking.pack(raw, stride: stride)
            #expect(SegmentPacking.unpack(packed[...], stride: stride, count: raw.count) == raw)
        }
        // 100 gyro points about 10 ms apart (times off the grid by up to 0.3 ms) with readings
        // anywhere in +-300 counts: the flags, the times' high bytes and many readings' sign
        // and exponent go (1,657 of 2,100 bytes remain; steadier readings pack further).
        var t = 1_800_000_000_000.0
        let gyro = PointCodec.encode((0..<100).map { i -> RecordedPoint in
            t += 10 + Double.random(in: -0.3...0.3, using: &rng)
            let count = { Float(Int.random(in: -300...300, using: &rng)) / 16.4 }
            return RecordedPoint(gyroscope: GyroReading(x: count(), y: count(), z: count(), timestamp: t), location: nil)
        })
        let stride = SegmentPacking.stride(of: gyro)
        #expect(stride == 21)
        let packed = SegmentPacking.pack(gyro, stride: stride)
        print("100 gyro points: \(gyro.count) -> \(packed.count) bytes")
        #expect(packed.count < gyro.count * 85 / 100)
        #expect(SegmentPacking.unpack(packed[...], stride: stride, count: gyro.count) == gyro)
    }

    @Test("past the rotation size a new file carries the segments still needed; the old one goes")
    func rotation() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        do {
            let store = try openStore(dir)
            try store.beginSession(SessionStart(sessionID: "S", startedAt: 1_800_000_000_000, trigger: .controlAPI))
            // B2 streams slowly and never fills a chunk; B1 seals every 400 points.
            var slow = Self.segment("S", first: 0, count: 5)
            slow.board = "B2"
            try store.append([slow])
            var first = 0
            var seq = 0
            while first < 40_000 {
                try store.append([Self.segment("S", first: first, count: 200)])
                first += 200
                if first % 400 == 0 {
                    try store.seal(Self.chunk("S", seq: seq, first: first - 400, count: 400, through: first))
                    seq += 1
                }
                #expect(Self.journalFiles(dir).count <= 1)
            }
            try store.append([Self.segment("S", first: first, count: 200)])
            // 40,000 points of 53 bytes went through; the file holds about one rotation's worth.
            let size = try #require(Self.journalFiles(dir).first.flatMap { try FileManager.default.attributesOfItem(atPath: $0)[.size] as? Int })
            #expect(size <= SegmentJournal.rotationBytes + 30_000)
            #expect(try store.storedBytes() == store.storedBytesFromScratch())
        }
        let store = try openStore(dir)
        #expect(try store.recoverInterruptedSessions() == ["S"])
        #expect(try Self.xs(store, "S") == Array(0..<40_200))
        let slowPoints = try store.dataset(sessionID: "S").points.filter { $0.board == "B2" }.count
        #expect(slowPoints == 5)
    }

    @Test("a database of the version before the journal opens, and the segments it holds are recovered")
    func openSegmentsOfVersion5() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = BufferStore.path(inStateDirectory: dir)
        try writeOldDatabase(path, upTo: nil) { db in
            try db.execute(sql: """
                INSERT INTO sessions (id, started_at, start_trigger, state, day)
                VALUES ('S', 1800000000000, 'control_api', 'recording', '2027-01-15');
                """)
            for first in [0, 100] {
                let blob = PointCodec.encode(points(100, t0: 1_800_000_000_000 + Double(first) * 10, startIndex: first))
                try db.execute(sql: """
                    INSERT INTO open_segments (session_id, board, first_index, point_count, time_source, size, points)
                    VALUES ('S', 'B1', ?, 100, 'system_clock_synchronised', ?, ?)
                    """, arguments: [first, blob.count, Data(blob)])
            }
        }
        let store = try openStore(dir)
        #expect(try store.integrityCheck() == "ok")
        #expect(try store.storedBytes() == store.storedBytesFromScratch())
        // A live export still shows them, and recovery seals them.
        #expect(try Self.xs(store, "S") == Array(0..<200))
        #expect(try store.recoverInterruptedSessions() == ["S"])
        #expect(try Self.xs(store, "S") == Array(0..<200))
        #expect(try store.reader.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM open_segments") } == 0)
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
        let blob = PointCodec.encode(points(120, t0: 1_800_000_000_000))
        try writeOldDatabase(path, upTo: "v2-upload-state-in-chunks") { db in
            try db.execute(sql: """
                INSERT INTO sessions (id, started_at, start_trigger, state, day)
                VALUES ('S', 1800000000000, 'control_api', 'recording', '2027-01-15');
                """)
            try db.execute(sql: """
                INSERT INTO open_chunks (session_id, board, seq, point_count, time_source, updated_at, size, points)
                VALUES ('S', 'B1', 0, 120, 'system_clock_synchronised', 0, ?, ?)
                """, arguments: [blob.count, Data(blob)])
        }
        let store = try openStore(dir)
        #expect(try store.integrityCheck() == "ok")
        #expect(try store.recoverInterruptedSessions() == ["S"])
        #expect(try Self.xs(store, "S") == Array(0..<120))
        #expect(try store.storedBytes() == store.storedBytesFromScratch())
    }
}
