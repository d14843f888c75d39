import Foundation
import MetaWear
import Basics
import Recording
import Testing

/// Documents carry the values recorded: every number read back from a document's JSON is the
/// stored value bit for bit, float32 readings printed with their own shortest digits.
@Suite("Values as measured")
struct ValueFidelityTests {
    struct Reading: Decodable { var x: Float, y: Float, z: Float, timestamp: Int64 }
    struct Location: Decodable {
        var latitude: Double, longitude: Double, timestamp: Int64, accuracy: Float?, age_ms: Int64
        var dead_reckoned: Bool?
    }
    struct Point: Decodable { var gyroscope: Reading, location: Location?, accelerometer: Reading? }
    struct Document: Decodable { var data: [Point] }

    /// Every 16-bit count of the ±2000 °/s gyro range and ±8 g accelerometer range, with
    /// positions of 17 significant digits and accuracies from HDOP × 19 m.
    static func recorded() throws -> [RecordedPoint] {
        var points: [RecordedPoint] = []
        for i in stride(from: -32768, through: 32767, by: 7) {
            let raw = RawVector(x: Int16(i), y: Int16(truncatingIfNeeded: i &* 31), z: Int16(truncatingIfNeeded: ~i))
            let t = 1_800_000_000_000 + Double(i + 32768) * 10
            let gyro = GyroReading(MotionSamples(single: raw, scale: 16.4)[0], timestamp: t)
            let accel = AccelerometerReading(MotionSamples(single: raw, scale: 4096)[0], timestamp: t)
            let location = i % 5 == 0 ? nil : PointLocation(
                latitude: 47.376_123_4 + Double(i) / 7e7, longitude: -122.3 + Double(i) / 3e7, timestamp: t,
                accuracy: i % 3 == 0 ? nil : Float(Double(i & 63) / 10 * 19), age: Double(i & 511),
                deadReckoned: i % 4 == 1)
            points.append(RecordedPoint(gyroscope: gyro, location: location, accelerometer: i % 2 == 0 ? accel : nil))
        }
        // What a document is built from: the stored blob, decoded.
        return try PointCodec.decode(PointCodec.encode(points))
    }

    @Test func documentsReadBackToTheStoredValuesBitForBit() throws {
        let stored = try Self.recorded()
        let document = RealtimeDataDocument(name: "N", sessionID: "S", board: "B", seq: 0, points: stored)
        let read = try JSONDecoder().decode(Document.self, from: Data(document.jsonText.utf8))
        #expect(read.data.count == stored.count)
        for (p, r) in zip(stored, read.data) {
            #expect([p.gyroscope.x, p.gyroscope.y, p.gyroscope.z].map(\.bitPattern) == [r.gyroscope.x, r.gyroscope.y, r.gyroscope.z].map(\.bitPattern))
            if let a = p.accelerometer {
                #expect([a.x, a.y, a.z].map(\.bitPattern) == [r.accelerometer?.x, r.accelerometer?.y, r.accelerometer?.z].map { $0?.bitPattern })
            } else {
                #expect(r.accelerometer == nil)
            }
            if let l = p.location {
                let back = try #require(r.location)
                #expect(back.latitude.bitPattern == l.latitude.bitPattern && back.longitude.bitPattern == l.longitude.bitPattern)
                #expect(back.accuracy?.bitPattern == l.accuracy?.bitPattern)
                #expect((back.dead_reckoned ?? false) == l.deadReckoned)
            } else {
                #expect(r.location == nil)
            }
        }
    }

    @Test func float32ReadingsPrintWithTheirOwnDigits() {
        let point = RecordedPoint(
            gyroscope: GyroReading(MotionSamples(single: RawVector(x: 1, y: -200, z: 0), scale: 16.4)[0], timestamp: 1),
            location: PointLocation(latitude: 47.5, longitude: 8.25, timestamp: 1, accuracy: Float(0.9 * 19.0), age: 0))
        let text = RealtimeDataDocument.value(point).jsonText
        #expect(text.contains(#""x":0.06097561,"y":-12.195122,"z":0.0,"#), "\(text)")
        #expect(text.contains(#""accuracy":17.1,"#), "\(text)")
        #expect(!text.contains("dead_reckoned"))
    }

    @Test func deadReckonedLocationsSaySoAndOldBlobsReadUnchanged() throws {
        var point = RecordedPoint(gyroscope: GyroReading(x: 1, y: 2, z: 3, timestamp: 1),
                                  location: PointLocation(latitude: 1, longitude: 2, timestamp: 1, accuracy: 4, age: 0, deadReckoned: true))
        let bytes = PointCodec.encode([point])
        #expect(bytes[0] & 0x30 == 0x10)
        #expect(try PointCodec.decode(bytes) == [point])
        #expect(RealtimeDataDocument.value(point).jsonText.contains(#""age_ms":0,"dead_reckoned":true}"#))
        // A record as written before the flag existed: same bytes without bit 6, a measured location.
        var old = bytes
        old[0] &= ~0x10
        point.location?.deadReckoned = false
        #expect(try PointCodec.decode(old) == [point])
        #expect(RealtimeDataDocument.value(point).firestoreSize + 15 == RealtimeDataDocument.value(try PointCodec.decode(bytes)[0]).firestoreSize)
    }

    @Test func backfilledPointsSaySoInEveryWriterAndOldBlobsReadUnchanged() throws {
        var point = RecordedPoint(gyroscope: GyroReading(x: 1, y: 2, z: 3, timestamp: 1), location: nil, missedBefore: 0, backfilled: true)
        let bytes = PointCodec.encode([point])
        #expect(bytes[0] & 0x80 == 0x80)
        #expect(try PointCodec.decode(bytes) == [point])
        #expect(RealtimeDataDocument.value(point).jsonText.hasSuffix(#""location_missing":"no_fix","backfilled":true}"#))
        var plain = JSONWriter(capacity: 256)
        plain.plainPoint(point)
        #expect(plain.text.hasSuffix(#","backfilled":true}"#), "\(plain.text)")
        // 'backfilled' 11 + bool 1.
        #expect(RealtimeDataDocument.value(point).firestoreSize == RealtimeDataDocument.value(RecordedPoint(
            gyroscope: point.gyroscope, location: nil)).firestoreSize + 12)
        // A record as written before the flag existed: bit 7 clear, a streamed point.
        var old = bytes
        old[0] &= ~0x80
        point.backfilled = false
        #expect(try PointCodec.decode(old) == [point])
        #expect(!RealtimeDataDocument.value(point).jsonText.contains("backfilled"))
    }
}
