import Basics
import Foundation
import Recording
import Testing
@testable import Buffer

@Suite("Buffer store")
struct BufferStoreTests {
    @Test("WAL with synchronous=FULL on the writer; device id is created once")
    func durability() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        #expect(try store.synchronousLevel() == 2)
        #expect(try store.integrityCheck() == "ok")
        let id = try DeviceIdentity.loadOrCreate(stateDirectory: dir)
        #expect(try DeviceIdentity.loadOrCreate(stateDirectory: dir) == id)
        #expect(UUID(uuidString: id) != nil)
        try "garbage".write(toFile: dir + "/device-id", atomically: true, encoding: .utf8)
        #expect(throws: DeviceIdentity.IdentityError.self) { try DeviceIdentity.loadOrCreate(stateDirectory: dir) }
        #expect(throws: BufferStore.StoreError.missingDatabase(dir + "/nope.sqlite")) {
            try BufferStore(readOnlyPath: dir + "/nope.sqlite", configuration: .init(userID: "U"))
        }
    }

    @Test("records document: user_id___time, hazards, gscope_data in seal order")
    func records() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let id = try recordSession(store, start: 1_800_000_000_000, chunks: 3, size: 100)
        #expect(throws: BufferStore.StoreError.self) { try store.endSession(SessionEnd(sessionID: id, endedAt: 0, trigger: .controlAPI, boards: [], pointCount: 0, distance: 0, timeSource: .gnssCorrected)) }
        let record = try store.submitSurvey(sessionID: id, survey: .hazards(["pothole": 2]), submittedAt: Date(timeIntervalSince1970: 1_800_000_100))
        #expect(record.name == "GATEWAY-UUID___1800000100")
        #expect(record.gscopeData.count == 3)
        let docs = try record.gscopeData.map { try #require(try store.realtimeDocument(name: $0)) }
        #expect(docs.map(\.seq) == [0, 1, 2])
        #expect(docs.allSatisfy { $0.name == $0.name.uppercased() && UUID(uuidString: $0.name) != nil })
        #expect(record.jsonText.contains("\"hazards\":{\"pothole\":2}"))
        #expect(throws: BufferStore.StoreError.sessionState(id, "survey already submitted")) {
            try store.submitSurvey(sessionID: id, survey: .noHazard, submittedAt: Date())
        }
        // A second session submitted in the same second gets the next free name.
        let other = try recordSession(store, start: 1_800_000_500_000, chunks: 1, size: 10)
        let second = try store.submitSurvey(sessionID: other, survey: .noHazard, submittedAt: Date(timeIntervalSince1970: 1_800_000_100))
        #expect(second.name == "GATEWAY-UUID___1800000101")
    }

    @Test("a session that recorded nothing gets no records document (its gscope_data would be empty)")
    func emptySessionWritesNoRecord() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let id = try recordSession(store, start: 1_800_000_000_000, chunks: 0, size: 10)
        #expect(throws: BufferStore.StoreError.sessionState(id, "recorded no data (no board streamed), so no records document is written")) {
            try store.submitSurvey(sessionID: id, survey: .noHazard, submittedAt: Date(timeIntervalSince1970: 1_800_000_100))
        }
        #expect(try store.recordsDocument(sessionID: id) == nil)
        #expect(try store.backlogStats().count == 0, "nothing queued for upload")
    }

    @Test("outbox: per-session order, one batch in flight per session, retries, dead letters, restart")
    func outbox() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        var store = try openStore(dir, clock: clock)
        let a = try recordSession(store, id: "A", start: 1_000, chunks: 6, size: 10, submit: .noHazard)
        let b = try recordSession(store, id: "B", start: 2_000, chunks: 2, size: 10)
        clock.advance(30)
        var stats = try store.backlogStats()
        #expect(stats.count == 9 && stats.oldestUnsentAge == 30)
        let first = try store.nextBatch(limit: 16, perSession: 4)
        #expect(first.filter { $0.sessionID == a }.map(\.seq) == [0, 1, 2, 3])
        #expect(first.filter { $0.sessionID == b }.map(\.seq) == [0, 1])
        // Nothing more while each session has something in flight.
        #expect(try store.nextBatch().isEmpty)
        try store.markSent(first.filter { $0.sessionID == b }.map(\.id))
        try store.markFailed(first[0].id, permanent: false, reason: "UNAVAILABLE")
        try store.markFailed(first[1].id, permanent: true, reason: "INVALID_ARGUMENT: too big")
        try store.markSent(first[2...3].map(\.id))
        // The transient failure comes back first; the dead item does not block the rest.
        let second = try store.nextBatch()
        #expect(second.map(\.seq) == [0, 4, 5, 6])
        #expect(second[0].attempts == 1)
        #expect(second.last?.kind == .records)
        #expect(try store.outboxState(of: first[1].documentName)?.state == .dead)
        // A restart returns in-flight items to pending.
        store = try openStore(dir, clock: clock)
        stats = try store.backlogStats()
        #expect(stats.inFlight == 0 && stats.count == 4 && stats.dead == 1)
        #expect(try store.requeueDead() == 1)
        let third = try store.nextBatch()
        #expect(third.map(\.seq) == [0, 1, 4, 5])
        try store.markSent(third.map(\.id))
        try store.markSent(try store.nextBatch().map(\.id))
        #expect(try store.backlogStats().count == 0)
        #expect(try store.history().first?.synced == 1)
    }

    @Test("disk budget: synced data goes first, then the oldest unsent whole session, counted and logged")
    func budget() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let chunkBytes = Int64(PointCodec.encode(points(500, t0: 0)).count)
        let logged = LockedLines()
        let store = try openStore(dir, budget: DiskBudget(maxBytes: chunkBytes * 5, minFreeBytes: 0), log: { logged.add($0) })
        let s1 = try recordSession(store, id: "S1", start: 1_000, chunks: 2, size: 500, submit: .noHazard)
        let s2 = try recordSession(store, id: "S2", start: 2_000, chunks: 2, size: 500, missedPerChunk: 7)
        try store.markSent(try store.nextBatch().filter { $0.sessionID == s1 }.map(\.id))
        // Fifth and sixth chunk: over budget, so S1's synced chunks are dropped first.
        let s3 = try recordSession(store, id: "S3", start: 3_000, chunks: 2, size: 500)
        #expect(try store.storedBytes() <= chunkBytes * 5)
        #expect(try store.evictionCounts() == ["synced_chunk": 1])
        // More data: now S1 is spent, S2 (oldest unsent) goes whole, S3 stays whole.
        _ = try recordSession(store, id: "S4", start: 4_000, chunks: 2, size: 500)
        #expect(try store.storedBytes() <= chunkBytes * 5)
        let counts = try store.evictionCounts()
        #expect(counts["unsent_session"] == 1)
        #expect(throws: BufferStore.StoreError.expired(s2)) { try store.dataset(sessionID: s2) }
        #expect(try store.dataset(sessionID: s3).points.count == 1000)
        #expect(try store.storedBytes() == store.storedBytesFromScratch())
        // A seal that fails (a duplicate seq) rolls back, running total included; a reopened
        // store starts from the same total.
        let before = try store.storedBytes()
        let p = points(500, t0: 0)
        #expect(throws: (any Error).self) {
            try store.seal(ChunkToSeal(sessionID: s3, board: "B1", seq: 0, bytes: PointCodec.encode(p), pointCount: 500,
                                       firstTimestamp: 0, lastTimestamp: 4990, timeSource: .gnssCorrected, missedSamples: 0))
        }
        #expect(try store.storedBytes() == before)
        #expect(try openStore(dir).storedBytes() == before)
        #expect(try store.integrityCheck() == "ok")
        #expect(logged.lines.contains { $0.contains("evicted unsent session S2") })
        #expect(try store.history().first?.lost == 1)
        // Evicting S2's data keeps the count of samples its gaps missed (2 chunks x 7).
        #expect(try store.history().first?.missedSamples == 14)
        #expect(try rounded(store.history()) == rounded(store.historyFromScratch()))
    }

    @Test("chunk names: distinct uppercase random UUIDs (version 4, RFC 4122 variant) across pool refills")
    func chunkNames() throws {
        let generator = ChunkNameGenerator()
        let count = ChunkNameGenerator.poolSize / 16 * 3 + 5
        let names = (0..<count).map { _ in generator.next() }
        #expect(Set(names).count == count)
        for name in names {
            let uuid = try #require(UUID(uuidString: name), "\(name) is not a UUID")
            #expect(uuid.uuidString == name)
            let chars = Array(name)
            #expect(chars[14] == "4")
            #expect("89AB".contains(chars[19]))
        }
        // Not a constant pattern: every hex position takes more than one value.
        for position in Array(names[0]).indices where ![8, 13, 14, 18, 19, 23].contains(position) {
            #expect(Set(names.map { Array($0)[position] }).count > 1, "position \(position) never changes")
        }
    }

    @Test("a failed seal (duplicate seq, unknown session) leaves no transaction open: the next seal commits")
    func failedSealRollsBack() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let id = try recordSession(store, start: 1_800_000_000_000, chunks: 1, size: 10)
        let bytes = PointCodec.encode(points(10, t0: 0))
        func chunk(_ session: String, seq: Int) -> ChunkToSeal {
            ChunkToSeal(sessionID: session, board: "B1", seq: seq, bytes: bytes, pointCount: 10, firstTimestamp: 0,
                        lastTimestamp: 90, timeSource: .gnssCorrected, missedSamples: 0)
        }
        #expect(throws: BufferStore.StoreError.sessionState(id, "chunk 0 of board B1 is already sealed")) {
            try store.seal(chunk(id, seq: 0))
        }
        #expect(throws: BufferStore.StoreError.unknownSession("nope")) { try store.seal(chunk("nope", seq: 0)) }
        let name = try store.seal(chunk(id, seq: 1))
        #expect(try store.realtimeDocument(name: name)?.seq == 1)
        #expect(try store.storedBytes() == store.storedBytesFromScratch())
        // Durable: a second connection sees it (the transaction committed, not left open).
        #expect(try openStore(dir).realtimeDocument(name: name)?.seq == 1)
    }

    @Test("retention drops synced points after the configured days")
    func retention() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let clock = TestClock(Date(timeIntervalSince1970: 1_800_000_000))
        let store = try openStore(dir, clock: clock)
        let id = try recordSession(store, start: 1_000, chunks: 2, size: 10, submit: .noHazard)
        try store.markSent(try store.nextBatch().map(\.id))
        clock.advance(29 * 86_400)
        #expect(try store.applyRetention() == 0)
        clock.advance(2 * 86_400)
        #expect(try store.applyRetention() == 2)
        #expect(throws: BufferStore.StoreError.expired(id)) { try store.dataset(sessionID: id) }
        #expect(try store.history().isEmpty == false)
    }

    @Test("history index and stored-bytes total equal a recomputation from scratch after random edits")
    func historyIncremental() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir, budget: DiskBudget(maxBytes: 400_000, minFreeBytes: 0))
        var rng = SeededRandom(seed: 77)
        var ids: [String] = []
        for step in 0..<120 {
            switch Int.random(in: 0..<10, using: &rng) {
            case 0...3:
                let day = Double(Int.random(in: 0..<5, using: &rng)) * 86_400_000
                let survey: HazardSurvey? = [nil, .noHazard, .hazards(["pothole": 1]), .hazards(["ice": 2, "pothole": 3])].randomElement(using: &rng)!
                ids.append(try recordSession(store, start: 1_800_000_000_000 + day + Double(step) * 1000,
                                             chunks: Int.random(in: 1...3, using: &rng), size: 200, submit: survey,
                                             missedPerChunk: Int.random(in: 0...3, using: &rng)))
            case 4...5:
                try store.markSent(try store.nextBatch(limit: Int.random(in: 1...5, using: &rng)).map(\.id))
            case 6:
                if let id = ids.randomElement(using: &rng), let left = try store.sessionsAwaitingSurvey().first(where: { $0 == id }) {
                    try store.submitSurvey(sessionID: left, survey: .hazards(["crossing": 1]), submittedAt: Date(timeIntervalSince1970: Double(1_900_000_000 + step)))
                }
            case 7:
                if let id = ids.randomElement(using: &rng) {
                    try store.deleteSession(id)
                    ids.removeAll { $0 == id }
                }
            case 8:
                for item in try store.nextBatch(limit: 2) { try store.markFailed(item.id, permanent: Bool.random(using: &rng), reason: "x") }
            default:
                try store.requeueDead()
            }
            #expect(try rounded(store.history()) == rounded(store.historyFromScratch()), "after step \(step)")
            #expect(try store.storedBytes() == store.storedBytesFromScratch(), "after step \(step)")
        }
        #expect(try store.history().count == 5)
    }

    @Test("records document lists each board once, sorted, whatever the seal order")
    func boardsList() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let id = "BOARDS"
        try store.beginSession(SessionStart(sessionID: id, startedAt: 1_800_000_000_000, trigger: .controlAPI))
        for (n, board) in ["C3", "A1", "C3", "B2", "A1"].enumerated() {
            let p = points(10, t0: 1_800_000_000_000 + Double(n) * 100)
            let seq = ["C3", "A1", "C3", "B2", "A1"][..<n].filter { $0 == board }.count
            try store.seal(ChunkToSeal(sessionID: id, board: board, seq: seq, bytes: PointCodec.encode(p), pointCount: 10,
                                       firstTimestamp: p[0].gyroscope.timestamp, lastTimestamp: p[9].gyroscope.timestamp,
                                       timeSource: .gnssCorrected, missedSamples: 0))
        }
        try store.endSession(SessionEnd(sessionID: id, endedAt: 1_800_000_001_000, trigger: .controlAPI, boards: ["A1", "B2", "C3"],
                                        pointCount: 50, distance: 0, timeSource: .gnssCorrected))
        let record = try store.submitSurvey(sessionID: id, survey: .noHazard, submittedAt: Date(timeIntervalSince1970: 1_800_000_100))
        #expect(record.boards == ["A1", "B2", "C3"])
        #expect(record.pointCount == 50)
        #expect(try store.history().first?.samples == 50)
    }

    @Test("export: json, csv, geojson, gpx of one session, ordered across chunks and boards")
    func export() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let id = "EXPORT"
        try store.beginSession(SessionStart(sessionID: id, startedAt: 1_800_000_000_000, trigger: .controlAPI))
        for (board, offset) in [("B1", 0.0), ("B2", 5.0)] {
            for seq in 0..<2 {
                var p = points(30, t0: 1_800_000_000_000 + offset + Double(seq) * 300, startIndex: seq * 30)
                // A gap on B1 before its second chunk: 4 samples missing over 50 ms.
                if board == "B1", seq == 1 { p[0].missedBefore = 4; p[0].gapMilliseconds = 50 }
                try store.seal(ChunkToSeal(sessionID: id, board: board, seq: seq, bytes: PointCodec.encode(p), pointCount: 30,
                                           firstTimestamp: p[0].gyroscope.timestamp, lastTimestamp: p[29].gyroscope.timestamp,
                                           timeSource: .gnssCorrected, missedSamples: 0))
            }
        }
        try store.endSession(SessionEnd(sessionID: id, endedAt: 1_800_000_000_600, trigger: .controlAPI, boards: ["B1", "B2"],
                                        pointCount: 120, distance: 1, timeSource: .gnssCorrected))
        let data = try store.dataset(sessionID: id)
        #expect(data.points.count == 120)
        #expect(zip(data.points, data.points.dropFirst()).allSatisfy { $0.point.gyroscope.timestamp <= $1.point.gyroscope.timestamp })
        let csv = SessionExporter.render(data, format: .csv).split(separator: "\n")
        #expect(csv.count == 121)
        #expect(csv[0].hasPrefix("epoch (ms),time (UTC),elapsed (s),x-axis (deg/s),y-axis (deg/s),z-axis (deg/s)"))
        #expect(csv[1].hasPrefix("1800000000000,2027-01-15T08:00:00.000Z,0.000,0,1,2,B1,"))
        let json = try JSONSerialization.jsonObject(with: Data(SessionExporter.render(data, format: .json).utf8)) as? [String: Any]
        #expect((json?["points"] as? [Any])?.count == 120)
        let geo = try JSONSerialization.jsonObject(with: Data(SessionExporter.render(data, format: .geojson).utf8)) as? [String: Any]
        #expect((geo?["features"] as? [Any])?.count == 2)
        let gpx = SessionExporter.render(data, format: .gpx)
        #expect(gpx.components(separatedBy: "<trkpt").count - 1 == 120)
        // The gap in every format: CSV columns, JSON fields, GeoJSON gaps, a new GPX segment.
        #expect(csv[0].hasSuffix(",missed before,gap (ms),location dead reckoned,backfilled"))
        #expect(csv.filter { $0.hasSuffix(",4,50,,") }.count == 1 && csv.filter { $0.hasSuffix(",0,0,,") }.count == 119)
        let jsonPoints = json?["points"] as? [[String: Any]] ?? []
        #expect(jsonPoints.filter { $0["missed_before"] as? Int == 4 && $0["gap_ms"] as? Int == 50 }.count == 1)
        let features = geo?["features"] as? [[String: Any]] ?? []
        let gapLists = features.map { (($0["properties"] as? [String: Any])?["gaps"] as? [[String: Any]]) ?? [] }
        #expect(gapLists.map(\.count) == [1, 0])
        #expect(gapLists.first?.first?["missed_before"] as? Int == 4 && gapLists.first?.first?["gap_ms"] as? Int == 50)
        #expect(gpx.components(separatedBy: "<trkseg>").count - 1 == 3, "B1 split at its gap, B2 whole")
        #expect(throws: BufferStore.StoreError.unknownSession("nope")) { try store.dataset(sessionID: "nope") }
    }
}

final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [String] = []
    func add(_ s: String) { lock.withLock { stored.append(s) } }
    var lines: [String] { lock.withLock { stored } }
}

/// Sums of doubles in another order differ in the last bits; compare to a micro-unit.
func rounded(_ days: [HistoryDay]) -> [HistoryDay] {
    days.map {
        var d = $0
        d.walkingMinutes = (d.walkingMinutes * 1e6).rounded() / 1e6
        d.distanceMetres = (d.distanceMetres * 1e6).rounded() / 1e6
        return d
    }
}
