import Foundation
import Recording
import Testing
import UpstreamFixtures
@testable import Buffer
@testable import Uplink

/// A chunk revised after its upload (issue 21: the flash log filled a gap before one of its
/// points, whose mark is counted again) replaces the stored document in every sink.
@Suite("Uplink: chunks revised for a corrected gap mark", .serialized)
struct ChunkRevisionSyncTests {
    /// A session uploaded through the sink `makeSink` gives for its buffer's directory, then its
    /// first chunk's 100th point given 7 samples missing, uploaded again: the directory, the store,
    /// the revised chunk's name and the point's time.
    static func revisedUpload(sink makeSink: (String) throws -> any Sink) async throws
        -> (dir: String, store: BufferStore, session: RecordedSession, chunk: String, marked: Double) {
        let dir = temporaryDirectory()
        let sink = try makeSink(dir)
        let store = try openStore(dir)
        let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(idlePollInterval: 0.2))
        let session = try recordSession(into: store, boards: 1, seconds: 30)
        try await service.drain()
        let chunk = try #require(session.chunkNames.first)
        let document = try #require(try store.realtimeDocument(name: chunk))
        let point = document.points[99]
        #expect(point.missedBefore == 0)
        try store.reviseGapMarks(sessionID: session.sessionID, board: document.board,
                                 [GapMark(timestamp: point.gyroscope.timestamp, missedBefore: 7, gapMilliseconds: 80)])
        #expect(try store.backlogStats().count == 1)
        try await service.drain()
        #expect(try store.backlogStats().count == 0)
        return (dir, store, session, chunk, point.gyroscope.timestamp)
    }

    /// The `data` array's points marked missing in a stored document's JSON.
    static func marks(_ json: Any?) -> [Int] {
        ((json as? [String: Any])?["data"] as? [[String: Any]] ?? []).compactMap { $0["missed_before"] as? Int }
    }

    @Test("directory: the file is replaced")
    func directory() async throws {
        let run = try await Self.revisedUpload { dir in try DirectorySink(root: "\(dir)/out") }
        defer { try? FileManager.default.removeItem(atPath: run.dir) }
        let file = "\(run.dir)/out/realtime_data/\(run.chunk).json"
        let stored = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file)))
        #expect(Self.marks(stored) == [7], "the stored document is the revised one")
        #expect(jsonEqual(stored, try plainJSON(.realtimeData(try #require(try run.store.realtimeDocument(name: run.chunk))))))
    }

    @Test("Firestore: the document is replaced")
    func firestore() async throws {
        try await withFirestoreEmulator { emulator in
            let sink = try FirestoreSink(configuration: .emulator(host: emulator.host, projectID: emulator.projectID))
            let run = try await Self.revisedUpload { _ in sink }
            defer { try? FileManager.default.removeItem(atPath: run.dir) }
            // Each stored document equals the buffer's, the revised chunk's revision included.
            try await checkSessionInEmulator(emulator, store: run.store, session: run.session)
        }
    }

    @Test("PostgreSQL: the row is updated")
    func postgres() async throws {
        try await withPostgresServer { pg in
            let sink = PostgresSink(configuration: pg.configuration)
            let run = try await Self.revisedUpload { _ in sink }
            defer { try? FileManager.default.removeItem(atPath: run.dir) }
            let data = try await pg.query("SELECT data FROM realtime_data WHERE name = '\(run.chunk)'")
            let points = try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [[String: Any]] ?? []
            #expect(points.compactMap { $0["missed_before"] as? Int } == [7], "the row holds the revised points")
            #expect(try await pg.query("SELECT count(*) FROM realtime_data WHERE name = '\(run.chunk)'") == "1")
            await sink.close()
        }
    }
}
