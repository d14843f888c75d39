import Basics
import Foundation
import GNSS
import MetaWear
import MetaWearBoardModel
import Testing
@testable import Recording

@Suite("Location merge")
struct MergeTests {
    /// A straight track at a known speed: position is a linear function of time.
    func truth(_ t: Double) -> (lat: Double, lon: Double) { (47.0 + t * 1e-8, 8.0 + t * 2e-8) }

    @Test("samples between fixes get the interpolated truth; fix age and accuracy travel")
    func interpolation() {
        var merger = LocationMerger<Int>(maxWait: 1000, freshness: 2000)
        var out: [LocationMerger<Int>.Located] = []
        for second in 0..<10 {
            let ft = 1_000_000.0 + Double(second) * 1000
            out += merger.add(fix: LocatedFix(time: ft, latitude: truth(ft).lat, longitude: truth(ft).lon, accuracy: 3 + Double(second)), now: ft + 200)
            for k in 0..<100 {
                let t = ft + Double(k) * 10 + 5
                out += merger.add(k, time: t, now: t + 50)
            }
        }
        out += merger.flush()
        #expect(out.count == 1000)
        let inner = out.filter { $0.time < 1_009_000 }
        for l in inner {
            let loc = try! #require(l.location)
            #expect(abs(loc.latitude - truth(l.time).lat) < 1e-9)
            #expect(abs(loc.longitude - truth(l.time).lon) < 1e-9)
            #expect(loc.age <= 500)
            #expect(loc.timestamp == l.time)
            #expect(loc.accuracy != nil)
        }
        // The last second has no later fix: it waited at most one fix interval and then took
        // the last fix, with its age.
        let tail = out.filter { $0.time >= 1_009_000 }
        #expect(tail.allSatisfy { $0.location?.timestamp == 1_009_000 && $0.location!.age == $0.time - 1_009_000 })
    }

    @Test("output waits at most one fix interval")
    func boundedWait() {
        var merger = LocationMerger<Int>(maxWait: 1000, freshness: 2000)
        _ = merger.add(fix: LocatedFix(time: 0, latitude: 1, longitude: 2, accuracy: nil), now: 0)
        #expect(merger.add(1, time: 100, now: 150).isEmpty)
        #expect(merger.release(now: 1149).isEmpty)
        let released = merger.release(now: 1150)
        #expect(released.count == 1)
        #expect(released[0].location?.latitude == 1)
    }

    @Test("no fix, or a stale one, gives a null location with the reason")
    func missing() {
        var merger = LocationMerger<Int>(maxWait: 0, freshness: 2000)
        let early = merger.add(1, time: 100, now: 100)
        #expect(early.first?.location == nil && early.first?.missing == .noFix)
        _ = merger.add(fix: LocatedFix(time: 1000, latitude: 1, longitude: 2, accuracy: 4), now: 1000)
        let stale = merger.add(2, time: 3500, now: 3500)
        #expect(stale.first?.location == nil && stale.first?.missing == .staleFix)
        let fresh = merger.add(3, time: 2900, now: 3500)
        #expect(fresh.first?.location?.accuracy == 4)
    }

    @Test("fixes far apart are not interpolated across")
    func longGap() {
        let merger = { () -> LocationMerger<Int> in
            var m = LocationMerger<Int>(maxWait: 1000, freshness: 2000, maxBracket: 5000)
            _ = m.add(fix: LocatedFix(time: 0, latitude: 0, longitude: 0, accuracy: 1), now: 0)
            _ = m.add(fix: LocatedFix(time: 60_000, latitude: 1, longitude: 1, accuracy: 1), now: 60_000)
            return m
        }()
        #expect(merger.locate(0, 30_000).missing == .staleFix)
        #expect(merger.locate(0, 1000).location?.latitude == 0)
    }

    @Test("time base: GNSS correction when the system clock is not synchronised")
    func timeBase() {
        var base = TimeBase(wallNanoseconds: 1_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: false)
        #expect(base.source == .unsynchronisedSystemClock)
        let fix = { (offset: Double) in
            GNSSFix(time: Date(timeIntervalSince1970: 1000), timeOfDay: NMEATimeOfDay(microseconds: 0), mode: .threeD,
                    latitude: 1, longitude: 2, systemClockOffset: offset, arrival: Date(timeIntervalSince1970: 1000 - offset))
        }
        base.observe(fix(3600.25), at: 0)
        base.observe(fix(3600.40), at: 0)  // the least delayed report is the best estimate
        #expect(base.source == .gnssCorrected)
        #expect(abs(base.epochMilliseconds(monotonic: 0) - (1_000_000 + 3_600_400)) < 1e-6)
        base.systemClockSynchronised = true
        #expect(base.source == .systemClockSynchronised)
        #expect(base.epochMilliseconds(monotonic: 0) == 1_000_000)
        #expect(TimeSource.allCases.max() == .unsynchronisedSystemClock)
    }
}

/// Keeps everything in memory, as the Buffer would on disk.
final class MemoryStore: RecordingStore {
    var sessions: [String] = []
    var segments: [OpenSegment] = []
    var segmentWrites = 0
    var sealed: [(name: String, chunk: ChunkToSeal)] = []
    var ended: [SessionEnd] = []
    var records: [RecordsDocument] = []
    /// Seal attempts to refuse per board, as a full or failing disk would.
    var refusedSeals: [String: Int] = [:]
    var sealAttempts: [String: Int] = [:]
    struct DiskError: Error {}

    func beginSession(_ start: SessionStart) throws { sessions.append(start.sessionID) }
    func append(_ segments: [OpenSegment]) throws {
        self.segments += segments
        segmentWrites += 1
    }
    func seal(_ chunk: ChunkToSeal) throws -> String {
        sealAttempts[chunk.board, default: 0] += 1
        if let left = refusedSeals[chunk.board], left > 0 {
            refusedSeals[chunk.board] = left - 1
            throw DiskError()
        }
        let name = UUID().uuidString
        sealed.append((name, chunk))
        return name
    }
    func endSession(_ end: SessionEnd) throws { ended.append(end) }
    /// As the Buffer does: the non-backfilled points of the board's sealed chunks at the marks'
    /// times get the marks and the times they move to.
    func reviseGapMarks(sessionID: String, board: String, _ marks: [GapMark]) throws {
        let byTime = Dictionary(marks.map { ($0.timestamp, $0) }, uniquingKeysWith: { $1 })
        for k in sealed.indices where sealed[k].chunk.sessionID == sessionID && sealed[k].chunk.board == board {
            var points = try PointCodec.decode(sealed[k].chunk.bytes)
            for i in points.indices where !points[i].backfilled {
                guard let mark = byTime[points[i].gyroscope.timestamp] else { continue }
                points[i].missedBefore = mark.missedBefore
                points[i].gapMilliseconds = mark.missedBefore > 0 ? mark.gapMilliseconds : 0
                if let time = mark.movedTo { points[i] = points[i].moved(by: time - points[i].gyroscope.timestamp) }
            }
            sealed[k].chunk.bytes = PointCodec.encode(points)
        }
    }
    func submitSurvey(sessionID: String, survey: HazardSurvey, submittedAt: Date) throws -> RecordsDocument {
        let r = RecordsDocument(userID: "U", timestamp: Int64(submittedAt.timeIntervalSince1970), survey: survey,
                                gscopeData: sealed.filter { $0.chunk.sessionID == sessionID }.map(\.name), sessionID: sessionID,
                                boards: [], start: 0, end: 0, pointCount: 0, timeSource: .systemClockSynchronised)
        records.append(r)
        return r
    }
    func sessionsAwaitingSurvey() throws -> [String] {
        ended.map(\.sessionID).filter { id in !records.contains { $0.sessionID == id } }
    }
}

@Suite("Sessions and documents")
struct SessionTests {
    /// Streams `seconds` of simulated 100 Hz gyro from `boards` boards into a controller.
    func record(boards: Int, seconds: Double, store: MemoryStore, accelerometer: Bool = false) throws -> SessionController {
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        let controller = SessionController(store: store, timeBase: base)
        var sims: [SimulatedBoard] = []
        for i in 0..<boards {
            var b = SimulatedBoard(profile: .metaMotionR, seed: UInt32(i + 1))
            for p in Commands.startGyro(GyroConfiguration(rate: .hz100, range: .dps2000), mode: .single, chip: .bmi160) { _ = b.write(p.bytes) }
            if accelerometer {
                for p in Commands.startAccelerometer(try AccelerometerConfiguration(rateHertz: 50, rangeG: 4), mode: .single, chip: .bmi160) { _ = b.write(p.bytes) }
            }
            sims.append(b)
            controller.attach(board: "B\(i)", gyroRateHertz: 100, accelerometerRateHertz: accelerometer ? 50 : nil)
        }
        try controller.start(trigger: .controlAPI, now: 0)
        let decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps2000, accelerometerRange: .g4)
        var now: Int64 = 0
        var rng = SeededRandom(seed: 5)
        var nextFix: Int64 = 0
        while Double(now) < seconds * 1e9 {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            while nextFix <= now {
                let when = Date(timeIntervalSince1970: 1_800_000_000 + Double(nextFix) / 1e9)
                controller.ingest(fix: GNSSFix(time: when, timeOfDay: NMEATimeOfDay(microseconds: 0), mode: .threeD,
                                               latitude: 47 + Double(nextFix) / 1e9 * 1e-5, longitude: 8, hdop: 0.9,
                                               systemClockOffset: 0, arrival: when), now: nextFix)
                nextFix += 1_000_000_000
            }
            for i in sims.indices {
                for n in sims[i].advance(to: UInt64(now)) {
                    controller.ingest(board: "B\(i)", event: decoder.decode(n.bytes), receivedAt: now)
                }
            }
            controller.tick(now: now)
        }
        try controller.stop(trigger: .button(board: "B0"), now: now)
        return controller
    }

    @Test("chunks hold exactly 2,000 points, one board each, sealed when full and at stop")
    func chunkBoundaries() throws {
        let store = MemoryStore()
        let controller = try record(boards: 2, seconds: 50.5, store: store)
        #expect(controller.awaitingSurvey.count == 1)
        let perBoard = Dictionary(grouping: store.sealed.map(\.chunk), by: \.board)
        #expect(perBoard.keys.sorted() == ["B0", "B1"])
        for (_, chunks) in perBoard {
            #expect(chunks.map(\.seq) == Array(0..<chunks.count))
            #expect(chunks.dropLast().allSatisfy { $0.pointCount == 2000 })
            #expect(chunks.last!.pointCount > 0 && chunks.last!.pointCount < 2000)
            let total = chunks.reduce(0) { $0 + $1.pointCount }
            #expect(total == 5050)
            // Every point decodes, in time order, and carries the simulated signal in order.
            let points = try chunks.flatMap { try PointCodec.decode($0.bytes) }
            #expect(points.count == total)
            #expect(zip(points, points.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp })
            let raw = points.map { Int(($0.gyroscope.x * 16.4).rounded()) }
            #expect(raw == (0..<total).map { Int(Int16(truncatingIfNeeded: $0)) })
            #expect(points.dropFirst(200).allSatisfy { $0.location != nil })
            // The checksum kept while each chunk filled is the CRC-32 of its sealed bytes.
            #expect(chunks.allSatisfy { $0.checksum == CRC32.checksum($0.bytes) })
        }
        let end = try #require(store.ended.first)
        #expect(end.pointCount == 10_100)
        #expect(end.trigger == .button(board: "B0"))
        #expect(end.timeSource == .systemClockSynchronised)
        #expect(end.distance > 40 && end.distance < 70)  // 1.1 m/s for 50 s
        // A write at least once a second of stream time, for all boards at once; each wrote only
        // what was new: per board the segments follow each other without overlap or hole
        // from the first point, and every point of the session was written once.
        #expect(store.segmentWrites >= 45 && store.segmentWrites <= 52)
        for board in ["B0", "B1"] {
            let mine = store.segments.filter { $0.board == board }
            #expect(mine.first?.firstIndex == 0)
            #expect(zip(mine, mine.dropFirst()).allSatisfy { $0.firstIndex + $0.pointCount == $1.firstIndex })
            let written = mine.reduce(0) { $0 + $1.pointCount }
            // Points that came in the last second before the stop are sealed without a segment.
            #expect(written <= 5050 && written >= 5050 - 130)
            let xs = try mine.flatMap { try PointCodec.decode($0.bytes) }.map { Int(($0.gyroscope.x * 16.4).rounded()) }
            #expect(xs == (0..<written).map { Int(Int16(truncatingIfNeeded: $0)) })
        }
    }

    @Test("a store that refuses seals is retried with backoff; other boards go on; order is kept after it recovers")
    func refusedSealsAreRetriedInOrder() throws {
        let store = MemoryStore()
        store.refusedSeals = ["B0": .max]
        let controller = try record(boards: 2, seconds: 50.5, store: store)
        #expect(controller.lastStoreError?.contains("B0") == true)
        // B0's first chunk failed at about 20 s: retries at 1, 2, 4, 8 s intervals, then the
        // forced one at stop, not one per tick (thousands).
        let attempts = store.sealAttempts["B0", default: 0]
        #expect(attempts >= 3 && attempts <= 10, "B0 seal attempts: \(attempts)")
        #expect(!store.sealed.contains { $0.chunk.board == "B0" })
        let b1 = store.sealed.map(\.chunk).filter { $0.board == "B1" }
        #expect(b1.map(\.seq) == [0, 1, 2])

        // The disk recovers: the next tick seals B0's chunks, in their order.
        store.refusedSeals["B0"] = 0
        controller.tick(now: 120_000_000_000)
        let b0 = store.sealed.map(\.chunk).filter { $0.board == "B0" }
        #expect(b0.map(\.seq) == [0, 1, 2])
        #expect(b0.reduce(0) { $0 + $1.pointCount } == 5050)
    }

    @Test("accelerometer samples ride along with the nearest gyro sample")
    func accelerometer() throws {
        let store = MemoryStore()
        _ = try record(boards: 1, seconds: 10, store: store, accelerometer: true)
        let points = try store.sealed.flatMap { try PointCodec.decode($0.chunk.bytes) }
        let withAccel = points.filter { $0.accelerometer != nil }
        #expect(withAccel.count > points.count * 9 / 10)
        #expect(withAccel.allSatisfy { abs($0.accelerometer!.timestamp - $0.gyroscope.timestamp) <= 11 })
    }

    @Test("survey: hazards or an explicit no-hazard; bad surveys are refused with the reason")
    func survey() throws {
        let store = MemoryStore()
        let controller = try record(boards: 1, seconds: 2, store: store)
        #expect(throws: SessionController.CommandError.invalidSurvey("empty hazard list: submit \"no hazard\" instead")) {
            try controller.submitSurvey(.hazards([:]), submittedAt: Date())
        }
        #expect(throws: SessionController.CommandError.self) { try controller.submitSurvey(.hazards(["ice": -1]), submittedAt: Date()) }
        let record = try controller.submitSurvey(.noHazard, submittedAt: Date(timeIntervalSince1970: 1_800_000_100))
        #expect(record.name == "U___1800000100")
        #expect(record.gscopeData.count == store.sealed.count)
        #expect(controller.awaitingSurvey.isEmpty)
        #expect(throws: SessionController.CommandError.unknownSession("(none)")) { try controller.submitSurvey(.noHazard, submittedAt: Date()) }
    }

    @Test("a session without points gets no record: the survey says why and moves on to the next session")
    func emptySession() throws {
        let store = MemoryStore()
        let c = SessionController(store: store, timeBase: TimeBase(wallNanoseconds: 0, monotonicNanoseconds: 0, systemClockSynchronised: true))
        c.attach(board: "B", gyroRateHertz: 100)
        let id = try c.start(trigger: .controlAPI, now: 0)
        try c.stop(trigger: .controlAPI, now: 1_000_000_000)
        #expect(throws: SessionController.CommandError.emptySession(id)) { try c.submitSurvey(.noHazard, submittedAt: Date()) }
        #expect(c.awaitingSurvey.isEmpty)
    }

    @Test("start and stop: button toggles, double start refused, always mode starts on data")
    func triggers() throws {
        let store = MemoryStore()
        let c = SessionController(store: store, timeBase: TimeBase(wallNanoseconds: 0, monotonicNanoseconds: 0, systemClockSynchronised: true))
        c.attach(board: "B", gyroRateHertz: 100)
        try c.buttonPressed(board: "B", now: 0)
        guard case .recording = c.state else { Issue.record("not recording"); return }
        #expect(throws: SessionController.CommandError.self) { try c.start(trigger: .controlAPI, now: 1) }
        try c.buttonPressed(board: "B", now: 2)
        #expect(c.state == .idle)
        #expect(throws: SessionController.CommandError.notRecording) { try c.stop(trigger: .controlAPI, now: 3) }

        var config = SessionController.Configuration()
        config.alwaysMode = true
        let always = SessionController(store: store, timeBase: TimeBase(wallNanoseconds: 0, monotonicNanoseconds: 0, systemClockSynchronised: true),
                                       configuration: config)
        always.attach(board: "B", gyroRateHertz: 100)
        always.ingest(board: "B", event: .gyro(MotionSamples(single: RawVector(x: 1, y: 2, z: 3), scale: 16.4)), receivedAt: 10)
        guard case .recording = always.state else { Issue.record("always mode did not start"); return }
    }
}

@Suite("Document sizes")
struct DocumentSizeTests {
    /// Every optional field present, longest values.
    static func worstPoint(_ i: Int) -> RecordedPoint {
        RecordedPoint(gyroscope: GyroReading(x: -2000, y: 2000, z: 1999.9, timestamp: 1.8e12 + Double(i)),
                      location: PointLocation(latitude: -89.123456789, longitude: 179.123456789, timestamp: 1.8e12,
                                              accuracy: 99.9, age: 1999, deadReckoned: true),
                      accelerometer: AccelerometerReading(x: 16, y: -16, z: 1, timestamp: 1.8e12), missedBefore: 65535,
                      gapMilliseconds: 655_360, backfilled: true)
    }

    @Test("Firestore size formula matches hand-computed values")
    func formula() {
        // "a": string 2 + 1 key; map {"a": "xy"} = (1+1) + (2+1) = 5.
        #expect(FirestoreValue.map([("a", .string("xy"))]).firestoreSize == 5)
        #expect(FirestoreValue.array([.integer(1), .double(2), .null, .bool(true)]).firestoreSize == 18)
        // Name: "realtime_data" 14 + 36-char id 37 + 16 = 67; fields {} = 0; + 32.
        #expect(FirestoreSize.document(collection: "realtime_data", documentID: String(repeating: "A", count: 36), fields: []) == 99)
    }

    @Test("the worst-case 2,000-point document stays under 1 MiB")
    func worstCase() {
        let doc = RealtimeDataDocument(name: UUID().uuidString, sessionID: UUID().uuidString, board: "C4:5A:2B:00:00:01",
                                       seq: 999_999, points: (0..<2000).map(Self.worstPoint))
        let size = doc.firestoreSize
        #expect(size < FirestoreSize.documentLimit)
        #expect(size == 2000 * 278 + 211, "size \(size)")  // docs/data-model.md
        // A plain nested point without accelerometer matches the reference's 137 B/point.
        let plain = RecordedPoint(gyroscope: GyroReading(x: 1, y: 2, z: 3, timestamp: 1),
                                  location: PointLocation(latitude: 1, longitude: 2, timestamp: 3, accuracy: 4, age: 0))
        #expect(RealtimeDataDocument.value(plain).firestoreSize == 137 + 15)  // + age_ms
    }

    @Test("point blob round-trips and refuses truncation")
    func codec() throws {
        let points = (0..<50).map(Self.worstPoint) + [RecordedPoint(gyroscope: GyroReading(x: 0.5, y: 0, z: 0, timestamp: 1), location: nil, missingLocation: .staleFix)]
        let bytes = PointCodec.encode(points)
        let back = try PointCodec.decode(bytes)
        #expect(back.count == points.count)
        #expect(back.last?.missingLocation == .staleFix && back.last?.location == nil)
        #expect(back[3].missedBefore == 65535 && back[3].location?.accuracy == Float(99.9))
        #expect(throws: PointCodec.DecodingError.self) { try PointCodec.decode(Array(bytes.dropLast())) }
    }
}
