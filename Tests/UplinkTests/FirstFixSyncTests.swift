import Foundation
import GNSS
import MetaWear
import Recording
import Testing
import UpstreamFixtures
@testable import Buffer
@testable import Uplink

/// Chunks uploaded before the gateway's first GNSS fix while the system clock was not
/// synchronised carry the system clock's times; the fix converts them onto GNSS time (issue
/// 21), and each sink ends up with the converted documents under the same names, one copy each.
@Suite("Uplink: chunks sealed before the first GNSS fix", .serialized)
struct FirstFixSyncTests {
    /// UTC at the monotonic clock's 0, and the system clock's error: 116 days ahead.
    static let utc = 1_785_909_000.0
    static let clockAhead = 116.0 * 86_400

    /// What a run left: the buffer, the session and the chunks uploaded before the first fix.
    struct Run {
        var dir: String
        var store: BufferStore
        var session: RecordedSession
        var uploadedBeforeTheFix: [String]
    }

    /// Records 40 s of 100 Hz gyro in 500-point chunks on the clock 116 days ahead into a new
    /// buffer, the first fix at 20 s; uploads to `sink` at 15 s (the chunks sealed by then, on
    /// the system clock) and after the stop and the survey; checks the buffer's documents are
    /// on GNSS time. The caller removes `dir`.
    static func recordThroughTheFirstFix(sink makeSink: (String) throws -> any Sink) async throws -> Run {
        let dir = temporaryDirectory()
        let store = try openStore(dir)
        let service = SyncService(store: store, sink: try makeSink(dir), configuration: SyncConfiguration(idlePollInterval: 0.2))
        var configuration = SessionController.Configuration()
        configuration.chunkSize = 500
        let base = TimeBase(wallNanoseconds: Int64((utc + clockAhead) * 1e9), monotonicNanoseconds: 0, systemClockSynchronised: false)
        let controller = SessionController(store: store, timeBase: base, configuration: configuration)
        let board = "AA:BB:CC:DD:EE:00"
        controller.attach(board: board, gyroRateHertz: 100)
        let sessionID = try controller.start(trigger: .controlAPI, now: 0)
        var (now, k, nextFix): (Int64, Int, Int64) = (0, 0, 20_000_000_000)
        var uploadedBeforeTheFix: [String] = []
        while now < 40_000_000_000 {
            now += 10_000_000
            k += 1
            while nextFix <= now {
                let second = Double(nextFix) / 1e9
                controller.ingest(fix: GNSSFix(time: Date(timeIntervalSince1970: utc + second), timeOfDay: NMEATimeOfDay(microseconds: 0),
                                               mode: .threeD, latitude: 47 + second * 1e-5, longitude: 8.5, hdop: 0.9,
                                               systemClockOffset: -clockAhead,
                                               arrival: Date(timeIntervalSince1970: utc + clockAhead + second)), now: nextFix)
                nextFix += 1_000_000_000
            }
            let raw = RawVector(x: Int16(truncatingIfNeeded: k), y: 0, z: -7)
            controller.ingest(board: board, event: .gyro(MotionSamples(single: raw, scale: 16.4)),
                              receivedAt: now + Int64(k * 7919 % 5) * 1_000_000)
            controller.tick(now: now)
            if now == 15_000_000_000 {
                _ = try await service.drain()
                uploadedBeforeTheFix = try store.dataset(sessionID: sessionID).chunkNames
            }
        }
        _ = try controller.stop(trigger: .controlAPI, now: now)
        let record = try controller.submitSurvey(.noHazard, sessionID: sessionID,
                                                 submittedAt: Date(timeIntervalSince1970: utc + clockAhead + 60))
        _ = try await service.drain()
        #expect(try store.backlogStats().count == 0, "everything is uploaded")
        let run = Run(dir: dir, store: store, session: RecordedSession(sessionID: sessionID, record: record, chunkNames: record.gscopeData),
                      uploadedBeforeTheFix: uploadedBeforeTheFix)
        try expectOnGNSSTime(run)
        return run
    }

    /// Every point's time of the buffer's documents, in seal order: on GNSS time and in order.
    static func expectOnGNSSTime(_ run: Run) throws {
        let store = run.store
        let times = try run.session.chunkNames.flatMap { try #require(try store.realtimeDocument(name: $0)).points.map(\.gyroscope.timestamp) }
        print("first fix sync: \(run.uploadedBeforeTheFix.count) chunks uploaded before the fix, \(run.session.chunkNames.count) in all, "
              + "times \(times.first ?? .nan)...\(times.last ?? .nan)")
        #expect(!run.uploadedBeforeTheFix.isEmpty && run.uploadedBeforeTheFix.allSatisfy(run.session.chunkNames.contains),
                "chunks uploaded before the fix keep their names")
        #expect(times.allSatisfy { $0 > utc * 1000 && $0 < (utc + 41) * 1000 }, "every time is GNSS time")
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 }, "in order")
        #expect(run.session.record.timeSource == .gnssCorrected && run.session.record.start < Int64(times[0]))
    }

    @Test("directory: the files are replaced, one per chunk")
    func directory() async throws {
        let run = try await Self.recordThroughTheFirstFix { dir in try DirectorySink(root: "\(dir)/out") }
        defer { try? FileManager.default.removeItem(atPath: run.dir) }
        let files = try FileManager.default.contentsOfDirectory(atPath: "\(run.dir)/out/realtime_data")
        #expect(Set(files) == Set(run.session.chunkNames.map { "\($0).json" }), "one file per chunk")
        for name in run.session.chunkNames {
            let file = "\(run.dir)/out/realtime_data/\(name).json"
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: file)))
            #expect(jsonEqual(json, try plainJSON(.realtimeData(try #require(try run.store.realtimeDocument(name: name))))),
                    "realtime_data/\(name) is the buffer's")
        }
    }

    @Test("Firestore: the documents are replaced")
    func firestore() async throws {
        try await withFirestoreEmulator { emulator in
            let sink = try FirestoreSink(configuration: .emulator(host: emulator.host, projectID: emulator.projectID))
            let run = try await Self.recordThroughTheFirstFix { _ in sink }
            defer { try? FileManager.default.removeItem(atPath: run.dir) }
            try await checkSessionInEmulator(emulator, store: run.store, session: run.session)
        }
    }

    @Test("PostgreSQL: the rows are updated, one per chunk")
    func postgres() async throws {
        try await withPostgresServer { pg in
            let sink = PostgresSink(configuration: pg.configuration)
            let run = try await Self.recordThroughTheFirstFix { _ in sink }
            defer { try? FileManager.default.removeItem(atPath: run.dir) }
            #expect(try await pg.query("SELECT count(*) FROM realtime_data") == "\(run.session.chunkNames.count)")
            for name in run.session.chunkNames {
                let data = try await pg.query("SELECT data FROM realtime_data WHERE name = '\(name)'")
                let points = try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [[String: Any]] ?? []
                let mine = try #require(try run.store.realtimeDocument(name: name))
                // The row's JSON numbers come back at 15 significant digits (0.01 ms here).
                let times = points.compactMap { ($0["gyroscope"] as? [String: Any])?["timestamp"] as? Double }
                let off = zip(times, mine.points).map { abs($0 - $1.gyroscope.timestamp) }.max() ?? .infinity
                #expect(times.count == mine.points.count && off < 0.01, "realtime_data \(name) holds the converted times: \(off) ms off")
            }
            await sink.close()
        }
    }
}
