import Basics
import Buffer
import Foundation
import Logging
import Recording
import Uplink

/// `mwbench uplink WORK [--emulator HOST:PORT] [--project P] [--pg-port N] [--database D]
/// [--peer-database D] [--chunks N] [--no-null-sink] [--bodies-only]`: drains a
/// one-hour backlog of 4 boards at 100 Hz (720 chunks of 2,000 points + the records
/// document) into the Firestore emulator and into PostgreSQL with the real sync service,
/// measuring wall time and this process's CPU. For the plain-client peers it writes the
/// same bodies (Firestore commit JSON, PostgreSQL parameter rows) to files in WORK;
/// `--bodies-only` writes the Firestore bodies and stops. The emulator is expected warm:
/// scripts/bench/uplink.sh warms a fresh one the same way before ours and before the peer.
enum UplinkBenchmark {
    static func run(_ arguments: [String]) async {
        guard let work = arguments.first else {
            fail("usage: mwbench uplink WORK [--emulator HOST:PORT] [--project P] [--pg-port N] [--database D] [--peer-database D] [--chunks N] [--no-null-sink] [--bodies-only]")
        }
        var emulator: String?
        var pgPort: Int?
        var chunks = 720
        var project = "bench-ours"
        var database = "ours"
        var peerDatabase = "peer"
        var withNullSink = true
        var bodiesOnly = false
        var i = 1
        while i < arguments.count {
            let value = i + 1 < arguments.count ? arguments[i + 1] : ""
            switch arguments[i] {
            case "--emulator": emulator = value
            case "--pg-port": pgPort = Int(value)
            case "--chunks": chunks = Int(value) ?? chunks
            case "--project": project = value
            case "--database": database = value
            case "--peer-database": peerDatabase = value
            case "--no-null-sink":
                withNullSink = false
                i += 1
                continue
            case "--bodies-only":
                bodiesOnly = true
                i += 1
                continue
            default: fail("mwbench uplink: unknown option \(arguments[i])")
            }
            i += 2
        }
        // Logs to stderr: stdout carries the key=value results.
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        print("chunks=\(chunks)")
        if bodiesOnly {
            writeFirestoreBodies(work: work, groups: commitGroups(backlog("\(work)/fs-state", chunks: chunks), size: configuration.documentsPerCommit))
            return
        }
        if withNullSink { await nullSink(work: work, chunks: chunks) }
        if let emulator { await firestore(work: work, host: emulator, project: project, chunks: chunks) }
        if let pgPort { await postgres(work: work, port: pgPort, database: database, peerDatabase: peerDatabase, chunks: chunks) }
    }

    /// A buffer holding one session: 4 boards, `chunks` sealed chunks (boards interleaved as
    /// they fill at the same rate), survey submitted.
    static func backlog(_ dir: String, chunks: Int) -> BufferStore {
        try? FileManager.default.removeItem(atPath: dir)
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        do {
            let store = try BufferStore(path: BufferStore.path(inStateDirectory: dir),
                                        configuration: .init(userID: "BENCH-GATEWAY", budget: DiskBudget(maxBytes: 1 << 40, minFreeBytes: 0),
                                                             log: { _ in }))
            let start = 1_800_000_000_000.0
            try store.beginSession(SessionStart(sessionID: "BENCH", startedAt: start, trigger: .controlAPI))
            for n in 0..<chunks {
                let board = "AA:BB:CC:DD:EE:0\(n % 4)"
                let seq = n / 4
                let t0 = start + Double(seq) * 20_000
                let points = (0..<2000).map { k in
                    let t = t0 + Double(k) * 10
                    return RecordedPoint(gyroscope: GyroReading(x: Float(k % 700) * 0.061, y: -12.2, z: 3.05, timestamp: t),
                                         location: PointLocation(latitude: 47.376 + t * 1e-12, longitude: 8.541, timestamp: t - 4,
                                                                 accuracy: 2.5, age: 4))
                }
                try store.seal(ChunkToSeal(sessionID: "BENCH", board: board, seq: seq, bytes: PointCodec.encode(points), pointCount: 2000,
                                           firstTimestamp: points[0].gyroscope.timestamp, lastTimestamp: points[1999].gyroscope.timestamp,
                                           timeSource: .systemClockSynchronised, missedSamples: 0))
            }
            let end = start + Double(chunks / 4) * 20_000
            try store.endSession(SessionEnd(sessionID: "BENCH", endedAt: end, trigger: .controlAPI,
                                            boards: (0..<4).map { "AA:BB:CC:DD:EE:0\($0)" }, pointCount: chunks * 2000, distance: 4000,
                                            timeSource: .systemClockSynchronised))
            try store.submitSurvey(sessionID: "BENCH", survey: .hazards(["pothole": 2]), submittedAt: Date(timeIntervalSince1970: end / 1000))
            // A real backlog was written over an hour and is long on disk: the writes of
            // building it here are flushed before the measured drain, not during it (where
            // they slowed our PostgreSQL commits' fsyncs, the peer having no such setup).
            sync()
            return store
        } catch {
            fail("mwbench uplink: cannot build the backlog: \(error)")
        }
    }

    /// The documents in upload order, grouped as the service commits them.
    static func commitGroups(_ store: BufferStore, size: Int) -> [[SinkDocument]] {
        do {
            guard let record = try store.recordsDocument(sessionID: "BENCH") else { fail("no records document") }
            var docs: [SinkDocument] = []
            for name in record.gscopeData {
                guard let d = try store.realtimeDocument(name: name) else { fail("chunk \(name) missing") }
                docs.append(.realtimeData(d))
            }
            docs.append(.records(record))
            return stride(from: 0, to: docs.count, by: size).map { Array(docs[$0..<min($0 + size, docs.count)]) }
        } catch {
            fail("mwbench uplink: \(error)")
        }
    }

    static let configuration = SyncConfiguration(maxCommitsPerSecond: 1e6, maxBytesPerSecond: 1e12, documentsPerCommit: 4,
                                                 concurrentSessions: 1, idlePollInterval: 0.05)

    static func measure(_ label: String, store: BufferStore, sink: any Sink, documents: Int) async {
        let timeline = TimelineSink(wrapping: sink)
        let service = SyncService(store: store, sink: timeline, configuration: configuration)
        let cpu0 = ProcessCPU.ownSeconds()
        let t0 = Date()
        timeline.start()
        let sent: Int
        do { sent = try await service.drain() } catch { fail("mwbench uplink: \(label) drain failed: \(error)") }
        let wall = Date().timeIntervalSince(t0)
        let cpu = ProcessCPU.ownSeconds() - cpu0
        let status = await service.status
        guard sent == documents, status.deadLetters == 0 else {
            fail("mwbench uplink: \(label) sent \(sent) of \(documents) (dead \(status.deadLetters), last error \(status.lastError ?? "-"))")
        }
        print("\(label)_documents=\(sent)")
        print("\(label)_wall_s=\(String(format: "%.3f", wall))")
        print("\(label)_cpu_s=\(String(format: "%.3f", cpu))")
        print("\(label)_chunks_per_s=\(String(format: "%.1f", Double(sent) / wall))")
        print("\(label)_cpu_ms_per_chunk=\(String(format: "%.2f", cpu * 1000 / Double(sent)))")
        print("\(label)_retries=\(status.retries)")
        if let directory = ProcessInfo.processInfo.environment["MWBENCH_DATA_DIR"] {
            let path = "\(directory)/uplink-\(label)-timeline.csv"
            do { try timeline.csv().write(toFile: path, atomically: true, encoding: .utf8) } catch { fail("\(path): \(error)") }
            print("\(label)_timeline=\(path)")
        }
    }

    /// Passes writes through and notes when each commit started and completed, for the
    /// report's backlog-drain plot and the gaps between commits (one lock per commit:
    /// nothing next to a network round trip).
    final class TimelineSink: Sink, @unchecked Sendable {
        let inner: any Sink
        var name: String { inner.name }
        private let lock = NSLock()
        private var origin = ContinuousClock.now
        private var points: [(seconds: Double, documents: Int, started: Double)] = []
        private var documents = 0

        init(wrapping inner: any Sink) { self.inner = inner }

        func start() {
            lock.withLock { origin = .now; points = [(0, 0, 0)]; documents = 0 }
        }

        func write(_ batch: [SinkDocument]) async throws(SinkError) {
            let started = lock.withLock { seconds(since: origin) }
            try await inner.write(batch)
            lock.withLock {
                documents += batch.count
                points.append((seconds(since: origin), documents, started))
            }
        }

        private func seconds(since start: ContinuousClock.Instant) -> Double {
            let elapsed = ContinuousClock.now - start
            return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        }

        func prepare(_ batch: [SinkDocument]) async { await inner.prepare(batch) }
        func close() async { await inner.close() }

        func csv() -> String {
            lock.withLock {
                "seconds,documents,started\n" + points.map { String(format: "%.4f,%ld,%.4f\n", $0.seconds, $0.documents, $0.started) }.joined()
            }
        }
    }

    /// The service and buffer alone: a sink that stores nothing.
    struct NullSink: Sink {
        let name = "null"
        func write(_ documents: [SinkDocument]) async throws(SinkError) {}
        func close() async {}
    }

    static func nullSink(work: String, chunks: Int) async {
        let store = backlog("\(work)/null-state", chunks: chunks)
        await measure("null", store: store, sink: NullSink(), documents: chunks + 1)
    }

    static func firestore(work: String, host: String, project: String, chunks: Int) async {
        let store = backlog("\(work)/fs-state", chunks: chunks)
        let c0 = ProcessCPU.ownSeconds()
        let groups = commitGroups(store, size: configuration.documentsPerCommit)
        let c1 = ProcessCPU.ownSeconds()
        let n = Double(groups.reduce(0) { $0 + $1.count })
        var typedBytes = 0
        for g in groups { typedBytes += FirestoreEncoding.commitBodyBytes(g, databasePath: "projects/x/databases/(default)").count }
        let c2 = ProcessCPU.ownSeconds()
        var plainBytes = 0
        for g in groups { for d in g { plainBytes += d.jsonBytes.count } }
        let c3 = ProcessCPU.ownSeconds()
        // What the Firestore sink did per document before the direct writer (value-tree
        // encoding, and the size check through the tree in both prepare and write), and what
        // it does now, for before/after in the same run.
        let path = "projects/x/databases/(default)"
        var before = 0
        for g in groups {
            for d in g {
                let size = FirestoreSize.document(collection: d.collection, documentID: d.name, fields: d.fields)
                    + FirestoreSize.document(collection: d.collection, documentID: d.name, fields: d.fields)
                before += FirestoreEncoding.valueTreeWriteBytes(d, databasePath: path).count + size % 2
            }
        }
        let c4 = ProcessCPU.ownSeconds()
        var after = 0
        for g in groups {
            for d in g { after += FirestoreEncoding.writeBytes(d, databasePath: path).count + (d.firestoreSize + d.firestoreSize) % 2 }
        }
        let c5 = ProcessCPU.ownSeconds()
        print("cpu_ms_per_document_load_decode=\(String(format: "%.2f", (c1 - c0) * 1000 / n))")
        print("cpu_ms_per_document_typed_json=\(String(format: "%.2f", (c2 - c1) * 1000 / n)) (\(typedBytes / Int(n)) B)")
        print("cpu_ms_per_document_plain_json=\(String(format: "%.2f", (c3 - c2) * 1000 / n)) (\(plainBytes / Int(n)) B)")
        print("cpu_ms_per_document_sink_encoding_before=\(String(format: "%.2f", (c4 - c3) * 1000 / n)) (\(before / Int(n)) B)")
        print("cpu_ms_per_document_sink_encoding_after=\(String(format: "%.2f", (c5 - c4) * 1000 / n)) (\(after / Int(n)) B)")
        writeFirestoreBodies(work: work, groups: groups)
        let sink: FirestoreSink
        do { sink = try FirestoreSink(configuration: .emulator(host: host, projectID: project)) } catch { fail("\(error)") }
        await measure("firestore", store: store, sink: sink, documents: groups.reduce(0) { $0 + $1.count })
    }

    /// The commits ours sends, for the peer's own project (a replay into ours would only
    /// measure ALREADY_EXISTS) and for the emulator warm-ups: one JSON body per line.
    static func writeFirestoreBodies(work: String, groups: [[SinkDocument]]) {
        var lines = ""
        for g in groups { lines += FirestoreEncoding.commitBody(g, databasePath: "projects/bench-peer/databases/(default)") + "\n" }
        do { try lines.write(toFile: "\(work)/fs-bodies.jsonl", atomically: true, encoding: .utf8) } catch { fail("\(error)") }
        print("firestore_bodies=\(work)/fs-bodies.jsonl")
        print("firestore_commits=\(groups.count)")
        print("firestore_body_bytes=\(lines.utf8.count - groups.count)")
    }

    static func postgres(work: String, port: Int, database: String, peerDatabase: String, chunks: Int) async {
        let store = backlog("\(work)/pg-state", chunks: chunks)
        let groups = commitGroups(store, size: configuration.documentsPerCommit)
        // Peer rows: the same parameters our sink binds, one JSON array per transaction.
        var lines = ""
        for g in groups {
            var rows: [[Any]] = []
            for d in g {
                switch d {
                case let .realtimeData(c):
                    rows.append(["realtime_data", c.name, c.sessionID, c.board, c.seq, 1, c.points.count,
                                 FirestoreValue.array(c.points.map(RealtimeDataDocument.value)).jsonText])
                case let .records(r):
                    rows.append(["records", r.name, r.userID, r.timestamp,
                                 FirestoreValue.map(r.survey.hazards.sorted { $0.key < $1.key }.map { ($0.key, .integer(Int64($0.value))) }).jsonText,
                                 FirestoreValue.array(r.gscopeData.map { .string($0) }).jsonText, r.survey == .noHazard, 1, r.sessionID,
                                 FirestoreValue.array(r.boards.map { .string($0) }).jsonText, r.start, r.end, r.pointCount, r.timeSource.rawValue])
                }
            }
            guard let data = try? JSONSerialization.data(withJSONObject: rows) else { fail("cannot encode peer rows") }
            lines += String(decoding: data, as: UTF8.self) + "\n"
        }
        do { try lines.write(toFile: "\(work)/pg-rows.jsonl", atomically: true, encoding: .utf8) } catch { fail("\(error)") }
        print("postgresql_rows=\(work)/pg-rows.jsonl")
        print("postgresql_commits=\(groups.count)")
        // Tables for the peer, created by our migration.
        let peer = PostgresSink(configuration: PostgresSinkConfiguration(endpoint: .tcp(host: "127.0.0.1", port: port), username: "postgres",
                                                                        database: peerDatabase, tls: .disable))
        do { try await peer.prepare() } catch { fail("mwbench uplink: peer database: \(error)") }
        await peer.close()
        let sink = PostgresSink(configuration: PostgresSinkConfiguration(endpoint: .tcp(host: "127.0.0.1", port: port), username: "postgres",
                                                                        database: database, tls: .disable))
        await measure("postgresql", store: store, sink: sink, documents: groups.reduce(0) { $0 + $1.count })
        await sink.close()
    }
}
