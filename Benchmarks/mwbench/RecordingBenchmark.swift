import Basics
import Buffer
import Foundation
import MetaWear
import Recording

/// Recording and buffer: samples/s through time rebuild, merge, chunking and sealing; seal
/// latency; history over a year of sessions; seal throughput for the peer comparison.
/// Prints `key=value` lines; scripts/bench/recording.sh turns them into Markdown.
enum RecordingBenchmark {
    /// `recording [DIR] [--seals-only [--crc-in-seal]] [--documents-only]`: `--documents-only`
    /// prints just the document bytes per point; `--seals-only` repeats just the seal
    /// case, which the script alternates with the peer several times on a shared machine;
    /// `--crc-in-seal` has the store checksum the blob inside the seal (as before the recorder
    /// kept the checksum while the chunk fills).
    static func run(_ arguments: [String]) {
        if arguments.contains("--documents-only") { return documentBytes() }
        let sealsOnly = arguments.contains("--seals-only")
        let crcInSeal = arguments.contains("--crc-in-seal")
        let root = arguments.first { !$0.hasPrefix("--") }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("mwbench-recording-\(getpid())").path
        try? FileManager.default.removeItem(atPath: root)
        try? FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        do {
            if sealsOnly { return try seals(root + "/seals", crcInSeal: crcInSeal) }
            try pipeline(root + "/pipeline")
            try seals(root + "/seals")
            try history(root + "/history")
            documentBytes()
        } catch {
            fail("recording benchmark: \(error)")
        }
    }

    static func store(_ dir: String) throws -> BufferStore {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return try BufferStore(path: BufferStore.path(inStateDirectory: dir),
                               configuration: .init(userID: "BENCH", budget: DiskBudget(maxBytes: 1 << 40, minFreeBytes: 0), log: { _ in }))
    }

    /// 100 Hz gyro of one board for 20 minutes of stream time, with 1 Hz fixes, through a
    /// SessionController into a real database (checkpoints each stream second, 2,000-point
    /// seals), as fast as one core allows.
    static func pipeline(_ dir: String) throws {
        let db = try store(dir)
        let controller = SessionController(store: db, timeBase: TimeBase(wallNanoseconds: 1_800_000_000_000_000_000,
                                                                         monotonicNanoseconds: 0, systemClockSynchronised: true))
        controller.attach(board: "B", gyroRateHertz: 100)
        try controller.start(trigger: .controlAPI, now: 0)
        let samples = 120_000
        let start = DispatchTime.now().uptimeNanoseconds
        var nextFix: Int64 = 0
        for n in 0..<samples {
            let t = Int64(n) * 10_000_000 + 10_000_000 + Int64((n * 7919) % 20) * 1_000_000
            while nextFix <= t {
                let when = Date(timeIntervalSince1970: 1_800_000_000 + Double(nextFix) / 1e9)
                controller.ingest(fix: .init(time: when, timeOfDay: .init(microseconds: 0), mode: .threeD, latitude: 47 + Double(nextFix) / 1e14,
                                             longitude: 8, hdop: 1, systemClockOffset: 0, arrival: when), now: nextFix)
                nextFix += 1_000_000_000
            }
            let raw = RawVector(x: Int16(truncatingIfNeeded: n), y: 3, z: -3)
            controller.ingest(board: "B", event: .gyro(MotionSamples(single: raw, scale: 16.4)), receivedAt: t)
            if n % 100 == 0 { controller.tick(now: t) }
        }
        try controller.stop(trigger: .controlAPI, now: Int64(samples) * 10_000_000 + 2_000_000_000)
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        print("pipeline_samples=\(samples)")
        print("pipeline_samples_per_s=\(Int(Double(samples) / seconds))")
        print("pipeline_realtime_factor=\(Int(Double(samples) / 100 / seconds))")
    }

    /// Seals of identical 2,000-point chunks: latency per seal and chunks/s. The peer writes
    /// the same blob with the same durability (scripts/bench/recording_peer.py).
    static func seals(_ dir: String, crcInSeal: Bool = false) throws {
        let db = try store(dir)
        let points = (0..<2000).map { i in
            RecordedPoint(gyroscope: GyroReading(x: Float(i), y: 1, z: 2, timestamp: 1.8e12 + Double(i) * 10),
                          location: PointLocation(latitude: 47, longitude: 8, timestamp: 1.8e12, accuracy: 3, age: 5))
        }
        let blob = PointCodec.encode(points)
        try Data(blob).write(to: URL(fileURLWithPath: dir + "/chunk.bin"))
        try db.beginSession(SessionStart(sessionID: "S", startedAt: 1.8e12, trigger: .controlAPI))
        // The recorder hands the seal a checksum kept while the chunk filled (53 bytes per
        // point, as each arrives); its cost is reported here, outside the seal.
        let crcStart = DispatchTime.now().uptimeNanoseconds
        var checksum: UInt32 = 0
        for _ in 0..<50 { checksum = CRC32.checksum(blob) }
        let crcMicroseconds = Double(DispatchTime.now().uptimeNanoseconds - crcStart) / 1e3 / 50
        let count = 200
        var latencies: [Double] = []
        let cpu0 = ProcessCPU.ownSeconds()
        let start = DispatchTime.now().uptimeNanoseconds
        for seq in 0..<count {
            let t0 = DispatchTime.now().uptimeNanoseconds
            var chunk = ChunkToSeal(sessionID: "S", board: "B", seq: seq, bytes: blob, pointCount: 2000, firstTimestamp: 1.8e12,
                                    lastTimestamp: 1.8e12 + 19_990, timeSource: .systemClockSynchronised, missedSamples: 0)
            if !crcInSeal { chunk.checksum = checksum }
            try db.seal(chunk)
            latencies.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
        }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        let cpu = ProcessCPU.ownSeconds() - cpu0
        latencies.sort()
        print("seal_blob_bytes=\(blob.count)")
        print("seal_count=\(count)")
        print("seal_median_ms=\(String(format: "%.3f", latencies[count / 2]))")
        print("seal_p99_ms=\(String(format: "%.3f", latencies[min(count - 1, count * 99 / 100)]))")
        print("seal_chunks_per_s=\(String(format: "%.1f", Double(count) / seconds))")
        // User + system CPU of this process per seal (the kernel's WAL copy and fsync
        // submission included), independent of how long the disk takes to flush.
        print("seal_cpu_ms_per_seal=\(String(format: "%.3f", cpu * 1000 / Double(count)))")
        print("seal_blob_path=\(dir)/chunk.bin")
        print("crc_us_per_chunk=\(String(format: "%.1f", crcMicroseconds))")
    }

    /// A year of history: 1,100 sessions over 365 days, then the index read in-process
    /// (`mwctl history` is timed by the script against the same database).
    static func history(_ dir: String) throws {
        let db = try store(dir)
        let day = 86_400_000.0
        let now = Date().timeIntervalSince1970 * 1000
        let tiny = PointCodec.encode([RecordedPoint(gyroscope: GyroReading(x: 1, y: 2, z: 3, timestamp: 0), location: nil)])
        for i in 0..<1100 {
            let start = now - 365 * day + Double(i) * (365 * day / 1100)
            let id = "S\(i)"
            try db.beginSession(SessionStart(sessionID: id, startedAt: start, trigger: .controlAPI))
            try db.seal(ChunkToSeal(sessionID: id, board: "B", seq: 0, bytes: tiny, pointCount: 1, firstTimestamp: start,
                                    lastTimestamp: start, timeSource: .systemClockSynchronised, missedSamples: 0))
            try db.endSession(SessionEnd(sessionID: id, endedAt: start + 1_800_000, trigger: .controlAPI, boards: ["B"], pointCount: 1,
                                         distance: 2000, timeSource: .systemClockSynchronised))
            if i % 3 == 0 { try db.submitSurvey(sessionID: id, survey: .hazards(["pothole": 1]), submittedAt: Date(timeIntervalSince1970: start / 1000 + 2000)) }
        }
        var times: [Double] = []
        var days = 0
        for _ in 0..<50 {
            let t0 = DispatchTime.now().uptimeNanoseconds
            days = try db.history(days: 366).count
            times.append(Double(DispatchTime.now().uptimeNanoseconds - t0) / 1e6)
        }
        times.sort()
        print("history_sessions=1100")
        print("history_days=\(days)")
        print("history_inprocess_median_ms=\(String(format: "%.3f", times[25]))")
        print("history_state_dir=\(dir)")
    }

    /// Plain-JSON bytes per point of a `realtime_data` document (what the directory and
    /// PostgreSQL sinks store and, typed, what Firestore receives), for walking-speed gyro
    /// counts at ±2000 °/s and 1 Hz fixes interpolated at 100 Hz: with and without a location,
    /// as written now (float32 readings with their own shortest digits) and as before (the
    /// same float32 values widened to doubles, `17.1` printed as `17.100000381469727`).
    static func documentBytes() {
        let n = 2000
        var located: [RecordedPoint] = []
        var unlocated: [RecordedPoint] = []
        for i in 0..<n {
            let t = 1_800_000_000_000 + Double(i) * 10 + Double((i * 7919) % 7) / 8
            func count(_ phase: Int) -> Int16 { Int16((i * 37 + phase * 211) % 1601 - 800) }
            let raw = RawVector(x: count(0), y: count(1), z: count(2))
            let gyro = GyroReading(MotionSamples(single: raw, scale: 16.4)[0], timestamp: t)
            let fraction = Double(i % 100) / 100
            let location = PointLocation(latitude: 47.376_123_4 + fraction * 0.000_012_3, longitude: 8.541_234_5 + fraction * 0.000_004_5,
                                         timestamp: t, accuracy: Float(0.9 * 19.0), age: Double(min(i % 100, 100 - i % 100) * 10))
            located.append(RecordedPoint(gyroscope: gyro, location: location))
            unlocated.append(RecordedPoint(gyroscope: gyro, location: nil, missingLocation: .noFix))
        }
        func bytes(_ points: [RecordedPoint], widened: Bool) -> Double {
            var total = 0
            for p in points {
                var value = RealtimeDataDocument.value(p)
                if widened { value = widen(value) }
                total += value.jsonText.utf8.count + 1  // the separating comma
            }
            return Double(total) / Double(points.count)
        }
        print("document_bytes_per_point_location=\(String(format: "%.1f", bytes(located, widened: false)))")
        print("document_bytes_per_point_no_location=\(String(format: "%.1f", bytes(unlocated, widened: false)))")
        print("document_bytes_per_point_location_before=\(String(format: "%.1f", bytes(located, widened: true)))")
        print("document_bytes_per_point_no_location_before=\(String(format: "%.1f", bytes(unlocated, widened: true)))")
    }

    /// The value as documents wrote it before float32 readings printed at their own precision.
    static func widen(_ value: FirestoreValue) -> FirestoreValue {
        switch value {
        case let .float(f): .double(Double(f))
        case let .array(a): .array(a.map(widen))
        case let .map(m): .map(m.map { ($0.0, widen($0.1)) })
        default: value
        }
    }
}
