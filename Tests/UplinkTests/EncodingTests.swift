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
    @Test("plain JSON bytes equal Recording's jsonText for points of every shape")
    func plainMatchesRecording() throws {
        var points: [RecordedPoint] = []
        for i in 0..<200 {
            let t = 1_800_000_000_000 + Double(i) * 10.37
            let location = i % 7 == 0 ? nil : PointLocation(latitude: 47.123456789 + Double(i) * 1e-7, longitude: -8.5, timestamp: t - 3,
                                                            accuracy: i % 5 == 0 ? nil : 2.5 + Double(i) / 3, age: Double(i % 9))
            points.append(RecordedPoint(gyroscope: GyroReading(x: Double(i) * 0.061, y: -1e-7 * Double(i), z: 1e20, timestamp: t),
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
