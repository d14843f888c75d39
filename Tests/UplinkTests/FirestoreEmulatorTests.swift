import Foundation
import Logging
import Recording
import Testing
import UpstreamFixtures
@testable import Buffer
@testable import Uplink

/// Reads every document of a recorded session back from the emulator and checks it against
/// docs/schema and against the buffer's own documents.
func checkSessionInEmulator(_ emulator: FirestoreEmulator, store: BufferStore, session: RecordedSession) async throws {
    let realtimeSchema = try loadSchema("realtime_data")
    let recordsSchema = try loadSchema("records")
    let record = try #require(try await emulator.document("records", session.record.name), "records document missing")
    #expect(schemaViolations(record, recordsSchema).isEmpty, "\(schemaViolations(record, recordsSchema).prefix(5))")
    #expect(jsonEqual(record, try plainJSON(.records(session.record))))
    let gscope = record["gscope_data"] as? [Any] ?? []
    #expect(gscope.compactMap { $0 as? String } == session.chunkNames)
    var points = 0
    for name in session.chunkNames {
        let doc = try #require(try await emulator.document("realtime_data", name), "realtime_data/\(name) missing")
        let violations = schemaViolations(doc, realtimeSchema)
        #expect(violations.isEmpty, "\(name): \(violations.prefix(5))")
        let mine = try #require(try store.realtimeDocument(name: name))
        #expect(jsonEqual(doc, try plainJSON(.realtimeData(mine))), "realtime_data/\(name) differs from the buffer")
        points += (doc["data"] as? [Any])?.count ?? 0
    }
    #expect(points == session.record.pointCount)
}

@Suite("Firestore emulator", .serialized)
struct FirestoreEmulatorTests {
    @Test("a recorded session lands as documents of the documented schema, point counts intact")
    func endToEnd() async throws {
        try await withFirestoreEmulator { emulator in
            let dir = temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = try openStore(dir)
            // 2 boards for 45 s at 100 Hz: 9,000 points in 6 chunks (two partial).
            let session = try recordSession(into: store, boards: 2, seconds: 45)
            #expect(session.chunkNames.count >= 4)
            #expect(session.record.pointCount > 8_500)
            let sink = try FirestoreSink(configuration: .emulator(host: emulator.host, projectID: emulator.projectID))
            let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(idlePollInterval: 0.2))
            try await runReal(service) { (try? store.backlogStats().count) == 0 }
            #expect(try store.sentCount() == session.chunkNames.count + 1)
            try await checkSessionInEmulator(emulator, store: store, session: session)
            // A replay of everything (as after a crash before markSent) changes nothing.
            let docs = try session.chunkNames.map { SinkDocument.realtimeData(try #require(try store.realtimeDocument(name: $0))) }
            try await sink.write(docs + [.records(session.record)])
            #expect(try await emulator.list("realtime_data").count == session.chunkNames.count)
            try await checkSessionInEmulator(emulator, store: store, session: session)
        }
    }

    @Test("through a proxy that drops responses after committing, and an upstream outage: no duplicates, nothing lost")
    func faults() async throws {
        try await withFirestoreEmulator { emulator in
            let dir = temporaryDirectory()
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let store = try openStore(dir)
            let first = try recordSession(into: store, boards: 1, seconds: 50, startSecond: 1_800_000_000)
            let second = try recordSession(into: store, boards: 2, seconds: 25, startSecond: 1_800_001_000)
            let upstream = "http://\(emulator.host)"
            let faults = ProxyFaults()
            let proxy = try await TestHTTPServer { request in
                switch await faults.next() {
                case .down: return .drop
                case .dropAfterForwarding:
                    _ = await TestHTTPServer.forward(request, to: upstream)
                    return .drop
                case .pass:
                    guard let r = await TestHTTPServer.forward(request, to: upstream) else { return .drop }
                    return .reply(status: r.status, headers: r.headers, body: r.body)
                }
            }
            defer { Task { await proxy.stop() } }
            // Every 3rd commit lands upstream but its answer is lost; then 12 requests find the
            // upstream down.
            await faults.set(dropEvery: 3, downFor: 0)
            let sink = try FirestoreSink(configuration: .emulator(host: "127.0.0.1:\(proxy.port)", projectID: emulator.projectID))
            let config = SyncConfiguration(backoff: Backoff(base: 0.05, cap: 0.5), documentsPerCommit: 2, idlePollInterval: 0.2)
            let service = SyncService(store: store, sink: sink, configuration: config)
            let task = Task { try await service.run() }
            #expect(await eventually { (try? store.sentCount()) ?? 0 >= 3 })
            await faults.set(dropEvery: 3, downFor: 12)
            #expect(await eventually(timeout: 120) { (try? store.backlogStats().count) == 0 })
            task.cancel()
            try await task.value
            let status = await service.status
            #expect(status.retries >= 12, "\(status.summary)")
            #expect(await faults.dropped >= 1)
            #expect(status.deadLetters == 0)
            let names = try await emulator.list("realtime_data")
            #expect(names.count == first.chunkNames.count + second.chunkNames.count)
            #expect(Set(names) == Set(first.chunkNames + second.chunkNames))
            try await checkSessionInEmulator(emulator, store: store, session: first)
            try await checkSessionInEmulator(emulator, store: store, session: second)
        }
    }
}

/// Runs a real-clock service until `done` or 120 s.
func runReal(_ service: SyncService, until done: @escaping @Sendable () async -> Bool) async throws {
    let task = Task { try await service.run() }
    let ok = await eventually(timeout: 120) { await done() }
    task.cancel()
    try await task.value
    let summary = await service.status.summary
    #expect(ok, "sync did not finish: \(summary)")
}

actor ProxyFaults {
    enum Action { case pass, dropAfterForwarding, down }
    private var count = 0
    private var dropEvery = 0
    private var downRemaining = 0
    private(set) var dropped = 0
    func set(dropEvery: Int, downFor: Int) {
        self.dropEvery = dropEvery
        downRemaining = downFor
    }
    func next() -> Action {
        if downRemaining > 0 {
            downRemaining -= 1
            return .down
        }
        count += 1
        if dropEvery > 0, count % dropEvery == 0 {
            dropped += 1
            return .dropAfterForwarding
        }
        return .pass
    }
}
