import Foundation
import Recording
import Testing
import UpstreamFixtures
@testable import Buffer
@testable import Uplink

/// A correction chunk sealed into a session whose survey is in (a board's flash log filled a
/// gap late, issue 21) `count` points after `last`, marked backfilled; returns its name.
@discardableResult
func sealLateCorrection(_ store: BufferStore, session: RecordedSession, count: Int = 150) throws -> String {
    let dataset = try store.dataset(sessionID: session.sessionID)
    let last = try #require(dataset.points.last)
    let seq = dataset.chunkNames.count
    let points = (1...count).map { k -> RecordedPoint in
        var p = last.point
        p.gyroscope.timestamp += Double(k) * 10
        p.gyroscope.x = Float(k)
        p.backfilled = true
        return p
    }
    return try store.seal(ChunkToSeal(sessionID: session.sessionID, board: last.board, seq: seq, bytes: PointCodec.encode(points),
                                      pointCount: count, firstTimestamp: points.first!.gyroscope.timestamp,
                                      lastTimestamp: points.last!.gyroscope.timestamp, timeSource: .systemClockSynchronised,
                                      missedSamples: 0))
}

/// A session uploaded through `sink`, then revised (a late correction sealed) and uploaded again.
struct RevisedUpload {
    /// The buffer's state directory (``remove()`` deletes it).
    var dir: String
    var store: BufferStore
    var service: SyncService
    /// The session as first uploaded.
    var session: RecordedSession
    var correction: String
    var revised: RecordsDocument

    /// Records `boards` boards for 30 s into a buffer in a new directory and runs the two uploads
    /// through the sink `makeSink` gives for that directory.
    init(boards: Int = 1, sink makeSink: (String) throws -> any Sink) async throws {
        dir = temporaryDirectory()
        let sink = try makeSink(dir)
        store = try openStore(dir)
        service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(idlePollInterval: 0.2))
        session = try recordSession(into: store, boards: boards, seconds: 30)
        try await service.drain()
        correction = try sealLateCorrection(store, session: session)
        revised = try #require(try store.recordsDocument(sessionID: session.sessionID))
        try await service.drain()
    }

    func remove() { try? FileManager.default.removeItem(atPath: dir) }

    /// The session as upstream should now have it.
    var upstream: RecordedSession {
        RecordedSession(sessionID: session.sessionID, record: revised, chunkNames: session.chunkNames + [correction])
    }
}

/// A sink that keeps the names it was given, in order, then hands the documents on.
actor WriteLog: Sink {
    nonisolated var name: String { "log" }
    let inner: any Sink
    private(set) var written: [SinkDocument] = []
    init(_ inner: any Sink) { self.inner = inner }

    func write(_ documents: [SinkDocument]) async throws(SinkError) {
        try await inner.write(documents)
        written += documents
    }

    func close() async { await inner.close() }

    /// Records writes that named a chunk not written before them (what a reader would see as a
    /// name without its chunk).
    func namesWithoutChunk() -> [String] {
        var seen: Set<String> = []
        var missing: [String] = []
        for doc in written {
            switch doc {
            case let .realtimeData(d): seen.insert(d.name)
            case let .records(r): missing += r.gscopeData.filter { !seen.contains($0) }
            }
        }
        return missing
    }

    func records() -> [RecordsDocument] {
        written.compactMap { if case let .records(r) = $0 { r } else { nil } }
    }
}

@Suite("Uplink: records revised after the survey", .serialized)
struct RecordRevisionSyncTests {
    @Test("directory: the revision replaces the record file after its chunk; a revision before the first upload goes up once")
    func directory() async throws {
        var made: WriteLog?
        let run = try await RevisedUpload { dir in
            let sink = WriteLog(try DirectorySink(root: "\(dir)/out"))
            made = sink
            return sink
        }
        defer { run.remove() }
        let (dir, log) = (run.dir, try #require(made))
        let (store, service, session, correction, revised) = (run.store, run.service, run.session, run.correction, run.revised)
        #expect(revised.gscopeData == session.chunkNames + [correction] && revised.revision == 1)
        let file = "\(dir)/out/records/\(session.record.name).json"
        let stored = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(jsonEqual(stored, try plainJSON(.records(revised))), "the file is the revised record")
        #expect(FileManager.default.fileExists(atPath: "\(dir)/out/realtime_data/\(correction).json"))
        #expect(schemaViolations(try #require(stored as? [String: Any]), try loadSchema("records")).isEmpty)
        #expect(await log.namesWithoutChunk().isEmpty, "a record never names a chunk not written before it")
        #expect(await log.records().map(\.revision) == [0, 1])

        // Revised twice before its first upload: one upload of the record, after its chunks.
        let other = try recordSession(into: store, boards: 1, seconds: 20, startSecond: 1_800_001_000)
        try sealLateCorrection(store, session: other)
        try sealLateCorrection(store, session: other, count: 40)
        try await service.drain()
        let uploads = await log.records().filter { $0.sessionID == other.sessionID }
        #expect(uploads.map(\.revision) == [2], "one upload of the record")
        #expect(uploads.first?.gscopeData.count == other.chunkNames.count + 2)
        #expect(await log.namesWithoutChunk().isEmpty)
        #expect(try store.backlogStats().count == 0)
    }

    @Test("Firestore: the revision replaces the first version (same name), a replay changes nothing")
    func firestore() async throws {
        try await withFirestoreEmulator { emulator in
            let sink = try FirestoreSink(configuration: .emulator(host: emulator.host, projectID: emulator.projectID))
            let run = try await RevisedUpload(boards: 2) { _ in sink }
            defer { run.remove() }
            try await checkSessionInEmulator(emulator, store: run.store, session: run.upstream)
            #expect(try await emulator.list("records").count == 1, "one record per session")
            // A replay of the revision (its mark lost in a crash) writes the same document.
            try await sink.write([.records(run.revised)])
            try await checkSessionInEmulator(emulator, store: run.store, session: run.upstream)
        }
    }

    @Test("PostgreSQL: the revision updates the row; a replay of an older version does not undo it")
    func postgres() async throws {
        try await withPostgresServer { pg in
            let sink = PostgresSink(configuration: pg.configuration)
            let run = try await RevisedUpload { _ in sink }
            defer { run.remove() }
            let (session, correction, revised) = (run.session, run.correction, run.revised)
            func stored() async throws -> (names: [String]?, points: String, revision: String) {
                let gscope = try await pg.query("SELECT gscope_data FROM records WHERE name = '\(session.record.name)'")
                return (try JSONSerialization.jsonObject(with: Data(gscope.utf8)) as? [String],
                        try await pg.query("SELECT point_count FROM records WHERE name = '\(session.record.name)'"),
                        try await pg.query("SELECT revision FROM records WHERE name = '\(session.record.name)'"))
            }
            var row = try await stored()
            #expect(row.names == session.chunkNames + [correction])
            #expect(row.points == "\(revised.pointCount)" && row.revision == "1")
            #expect(try await pg.query("SELECT count(*) FROM realtime_data WHERE name = '\(correction)'") == "1")
            #expect(try await pg.query("SELECT count(*) FROM records") == "1")
            try await sink.write([.records(session.record)])
            row = try await stored()
            #expect(row.names == session.chunkNames + [correction] && row.revision == "1", "the older version is not written back")
            await sink.close()
        }
    }
}
