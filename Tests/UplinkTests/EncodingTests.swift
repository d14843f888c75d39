import Basics
import Foundation
import Recording
import Testing
import UpstreamFixtures
@testable import Uplink

@Suite("Firestore encoding")
struct EncodingTests {
    @Test("typed values: integers as strings, special doubles as strings, nested maps and arrays")
    func typedValues() {
        let value = FirestoreValue.map([
            ("i", .integer(-5)), ("d", .double(1.5)), ("n", .double(.nan)), ("inf", .double(-.infinity)), ("s", .string("a\"b\n")),
            ("b", .bool(true)), ("z", .null), ("a", .array([.integer(1), .map([])])),
        ])
        var out = ""
        FirestoreEncoding.write(value, to: &out)
        #expect(out == #"{"mapValue":{"fields":{"i":{"integerValue":"-5"},"d":{"doubleValue":1.5},"n":{"doubleValue":"NaN"},"inf":{"doubleValue":"-Infinity"},"s":{"stringValue":"a\"b\n"},"b":{"booleanValue":true},"z":{"nullValue":null},"a":{"arrayValue":{"values":[{"integerValue":"1"},{"mapValue":{"fields":{}}}]}}}}}"#)
        // And back.
        let parsed = try? JSONSerialization.jsonObject(with: Data(out.utf8))
        let plain = parsed.flatMap(FirestoreEncoding.plain) as? [String: Any]
        #expect(plain?["i"] as? Int64 == -5 && plain?["b"] as? Bool == true && (plain?["n"] as? Double)?.isNaN == true)
    }

    @Test("commit body: create-only preconditions; records gscope_data through appendMissingElements in seal order")
    func commitBody() throws {
        let record = RecordsDocument(userID: "U", timestamp: 1_800_000_000, survey: .noHazard, gscopeData: ["C1", "C2", "C3"],
                                     sessionID: "S", boards: ["B"], start: 1, end: 2, pointCount: 3, timeSource: .gnssCorrected)
        let chunk = RealtimeDataDocument(name: "C1", sessionID: "S", board: "B", seq: 0, points: [])
        let body = FirestoreEncoding.commitBody([.realtimeData(chunk), .records(record)], databasePath: "projects/p/databases/(default)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
        let writes = try #require(json["writes"] as? [[String: Any]])
        #expect(writes.count == 2)
        for w in writes { #expect((w["currentDocument"] as? [String: Any])?["exists"] as? Bool == false) }
        #expect((writes[0]["update"] as? [String: Any])?["name"] as? String == "projects/p/databases/(default)/documents/realtime_data/C1")
        let transforms = try #require(writes[1]["updateTransforms"] as? [[String: Any]])
        #expect(transforms.first?["fieldPath"] as? String == "gscope_data")
        let values = (transforms.first?["appendMissingElements"] as? [String: Any])?["values"] as? [[String: Any]]
        #expect(values?.compactMap { $0["stringValue"] as? String } == ["C1", "C2", "C3"])
    }

    @Test("the schema checker used by the end-to-end tests catches wrong types, missing and unknown fields")
    func schemaCheckerCanFail() throws {
        let schema = try loadSchema("records")
        let good: [String: Any] = ["user_id": "U", "timestamp": Int64(1), "hazards": ["ice": Int64(2)], "gscope_data": ["A"],
                                   "no_hazard": false, "schema_version": Int64(1)]
        #expect(schemaViolations(good, schema).isEmpty)
        var bad = good
        bad["timestamp"] = "1"
        #expect(!schemaViolations(bad, schema).isEmpty)
        bad = good
        bad["gscope_data"] = nil
        #expect(!schemaViolations(bad, schema).isEmpty)
        bad = good
        bad["extra"] = true
        #expect(!schemaViolations(bad, schema).isEmpty)
        bad = good
        bad["no_hazard"] = Int64(0)
        #expect(!schemaViolations(bad, schema).isEmpty)
    }
}

@Suite("Fast JSON writer")
struct FastJSONTests {
    /// Points of every shape, with numbers that stress the formatter (integral, tiny, huge,
    /// negative zero, 17 significant digits, non-finite in the typed-only fields).
    static func points(_ n: Int) -> [RecordedPoint] {
        var generator = SystemRandomNumberGenerator()
        return (0..<n).map { i in
            let t = 1_800_000_000_000 + Double(i) * 10.37
            let odd: [Double] = [0, -0.0, 1, -1, 1e15, 1e15 - 1, 9.007_199_254_740_993e15, 1e-300, .leastNonzeroMagnitude, 1.7976931348623157e308,
                                 0.1, 1.0 / 3, -2.5e-7, 123_456_789.123_456_79]
            let x = i < odd.count ? odd[i] : Double.random(in: -2000...2000, using: &generator)
            let location = i % 7 == 0 ? nil : PointLocation(latitude: Double.random(in: -90...90, using: &generator),
                                                            longitude: i % 2 == 0 ? -8.5 : Double(bitPattern: generator.next() >> 2),
                                                            timestamp: t - 3, accuracy: i % 5 == 0 ? nil : Float(2.5 + Double(i) / 3),
                                                            age: Double(i % 9) + 0.5, deadReckoned: i % 4 == 1)
            return RecordedPoint(gyroscope: GyroReading(x: Float(x), y: -1e-7 * Float(i), z: i % 13 == 0 ? .infinity : 1e20, timestamp: t),
                                 location: location, missingLocation: location == nil ? (i % 2 == 0 ? .staleFix : nil) : nil,
                                 accelerometer: i % 3 == 0 ? AccelerometerReading(x: 0.5, y: i % 17 == 0 ? .nan : -1, z: 0.98, timestamp: t) : nil,
                                 missedBefore: i % 11 == 0 ? 2 : 0, gapMilliseconds: i % 11 == 0 ? 30 : 0)
        }
    }

    @Test("the direct realtime_data writers give the same bytes as the value-tree encoders")
    func directWritersMatchTree() {
        let doc = RealtimeDataDocument(name: "N", sessionID: "S\"q\\ \u{1}ü", board: "AA:BB", seq: -3, points: Self.points(600))
        var direct = JSONWriter()
        direct.typedRealtimeFields(doc)
        var tree = JSONWriter()
        tree.typedFields(doc.fields)
        #expect(direct.bytes == tree.bytes)
        var plain = JSONWriter()
        plain.plainPoints(doc.points)
        var plainTree = JSONWriter()
        plainTree.plain(.array(doc.points.map(RealtimeDataDocument.value)))
        #expect(plain.bytes == plainTree.bytes)
        let empty = RealtimeDataDocument(name: "E", sessionID: "S", board: "B", seq: 0, points: [])
        var emptyDirect = JSONWriter()
        emptyDirect.typedRealtimeFields(empty)
        var emptyTree = JSONWriter()
        emptyTree.typedFields(empty.fields)
        #expect(emptyDirect.bytes == emptyTree.bytes)
    }

    @Test("numbers are written as Swift's description writes them")
    func numbersMatchDescription() {
        var generator = SystemRandomNumberGenerator()
        var doubles: [Double] = [0, -0.0, 1, 0.1, 1e15, 1e16, 1e-5, 1e-4, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -.greatestFiniteMagnitude,
                                 .leastNormalMagnitude, 47.376_000_000_001_8, 2.220_446_049_250_313e-16]
        for _ in 0..<20_000 { doubles.append(Double(bitPattern: generator.next())) }
        for d in doubles where d.isFinite {
            var out = JSONWriter()
            out.number(d)
            #expect(String(decoding: out.bytes, as: UTF8.self) == d.description)
        }
        var integers: [Int64] = [0, 1, -1, 9, 10, -10, .max, .min, 1_800_000_000_000]
        for _ in 0..<2_000 { integers.append(Int64(bitPattern: generator.next())) }
        for i in integers {
            var out = JSONWriter()
            out.number(i)
            #expect(String(decoding: out.bytes, as: UTF8.self) == String(i))
        }
    }

    @Test("realtime_data size is the Firestore rules' size of its fields")
    func sizeMatchesRules() {
        let doc = RealtimeDataDocument(name: UUID().uuidString, sessionID: "S-ü", board: "AA:BB", seq: 7, points: Self.points(300))
        #expect(doc.firestoreSize == FirestoreSize.document(collection: RealtimeDataDocument.collection, documentID: doc.name, fields: doc.fields))
    }

    @Test("plain JSON bytes equal Recording's jsonText for points of every shape")
    func plainMatchesRecording() throws {
        var points: [RecordedPoint] = []
        for i in 0..<200 {
            let t = 1_800_000_000_000 + Double(i) * 10.37
            let location = i % 7 == 0 ? nil : PointLocation(latitude: 47.123456789 + Double(i) * 1e-7, longitude: -8.5, timestamp: t - 3,
                                                            accuracy: i % 5 == 0 ? nil : Float(2.5 + Double(i) / 3), age: Double(i % 9))
            points.append(RecordedPoint(gyroscope: GyroReading(x: Float(i) * 0.061, y: -1e-7 * Float(i), z: 1e20, timestamp: t),
                                        location: location, missingLocation: location == nil ? .staleFix : nil,
                                        accelerometer: i % 3 == 0 ? AccelerometerReading(x: 0.5, y: -1, z: 0.98, timestamp: t) : nil,
                                        missedBefore: i % 11 == 0 ? 2 : 0))
        }
        let doc = RealtimeDataDocument(name: "N", sessionID: "S\"q\\ \u{1}", board: "AA:BB", seq: 3, points: points)
        #expect(String(decoding: SinkDocument.realtimeData(doc).jsonBytes, as: UTF8.self) == doc.jsonText)
        let record = RecordsDocument(userID: "U", timestamp: 5, survey: .hazards(["ice": 1, "größe": 2]), gscopeData: ["A", "B"], sessionID: "S",
                                     boards: ["B1"], start: 1, end: 2, pointCount: 200, timeSource: .systemClockSynchronised)
        #expect(String(decoding: SinkDocument.records(record).jsonBytes, as: UTF8.self) == record.jsonText)
        // And the typed form decodes back to the same plain values.
        var typed = ""
        FirestoreEncoding.writeFields(doc.fields, to: &typed)
        let back = try #require(FirestoreEncoding.plain(["mapValue": ["fields": try JSONSerialization.jsonObject(with: Data(typed.utf8))]]))
        #expect(jsonEqual(back, try plainJSON(.realtimeData(doc))))
    }
}
