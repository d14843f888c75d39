import Foundation
import MetaWear
import Recording
import Testing

@testable import Buffer

/// Export prints the stored values: every number of CSV, GeoJSON and GPX reads back to the
/// value in the database bit for bit, and a dead-reckoned position says so in each format.
@Suite("Export fidelity")
struct ExportFidelityTests {
    struct GeoJSON: Decodable {
        struct Feature: Decodable {
            struct Properties: Decodable { var dead_reckoned: [Bool]; var backfilled: [Bool] }
            struct Geometry: Decodable { var coordinates: [[Double]] }
            var properties: Properties
            var geometry: Geometry
        }
        var features: [Feature]
    }

    static func session() throws -> (SessionDataset, [RecordedPoint], String) {
        let dir = temporaryDirectory()
        let store = try openStore(dir)
        let id = "FIDELITY"
        try store.beginSession(SessionStart(sessionID: id, startedAt: 1_800_000_000_000, trigger: .controlAPI))
        let points: [RecordedPoint] = (0..<200).map { i in
            let t = 1_800_000_000_000 + Double(i) * 10
            let raw = RawVector(x: Int16(i * 97 - 9000), y: 1, z: Int16(-i))
            return RecordedPoint(
                gyroscope: GyroReading(MotionSamples(single: raw, scale: 16.4)[0], timestamp: t),
                location: i % 9 == 0 ? nil : PointLocation(latitude: 0.000_012_345 + Double(i) / 3e5, longitude: -8.123_456_789_012 - Double(i) / 7e5,
                                                            timestamp: t, accuracy: Float(Double(i) * 0.17), age: 3, deadReckoned: i % 5 == 0),
                accelerometer: AccelerometerReading(MotionSamples(single: raw, scale: 4096)[0], timestamp: t),
                backfilled: (40..<60).contains(i))
        }
        try store.seal(ChunkToSeal(sessionID: id, board: "B1", seq: 0, bytes: PointCodec.encode(points), pointCount: points.count,
                                   firstTimestamp: points[0].gyroscope.timestamp, lastTimestamp: points[199].gyroscope.timestamp,
                                   timeSource: .gnssCorrected, missedSamples: 0))
        return (try store.dataset(sessionID: id), points, dir)
    }

    @Test func csvCellsReadBackBitForBit() throws {
        let (data, points, dir) = try Self.session()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let rows = SessionExporter.render(data, format: .csv).split(separator: "\n").map { $0.split(separator: ",", omittingEmptySubsequences: false).map(String.init) }
        let header = rows[0]
        func column(_ name: String) throws -> Int { try #require(header.firstIndex(of: name), "no column \(name)") }
        let x = try column("x-axis (deg/s)"), ax = try column("accel x (g)"), lat = try column("latitude (deg)")
        let lon = try column("longitude (deg)"), accuracy = try column("accuracy (m)"), dr = try column("location dead reckoned")
        let backfilled = try column("backfilled")
        #expect(rows.count == points.count + 1)
        for (p, row) in zip(points, rows.dropFirst()) {
            #expect(row.count == header.count)
            #expect(row[backfilled] == (p.backfilled ? "true" : ""))
            #expect(Float(row[x])?.bitPattern == p.gyroscope.x.bitPattern, "\(row[x])")
            #expect(Float(row[ax])?.bitPattern == p.accelerometer?.x.bitPattern, "\(row[ax])")
            #expect([x, ax, lat, lon, accuracy].allSatisfy { !row[$0].contains("e") }, "no exponent: \(row)")
            if let l = p.location {
                #expect(Double(row[lat])?.bitPattern == l.latitude.bitPattern, "\(row[lat])")
                #expect(Double(row[lon])?.bitPattern == l.longitude.bitPattern, "\(row[lon])")
                #expect(Float(row[accuracy])?.bitPattern == l.accuracy?.bitPattern, "\(row[accuracy])")
                #expect(row[dr] == (l.deadReckoned ? "true" : ""))
            } else {
                #expect(row[lat].isEmpty && row[dr].isEmpty)
            }
        }
    }

    @Test func geoJSONAndGPXTracksReadBackBitForBit() throws {
        let (data, points, dir) = try Self.session()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let located = points.compactMap(\.location)
        // JSONDecoder reads numbers correctly rounded (Linux JSONSerialization does not).
        let geo = try JSONDecoder().decode(GeoJSON.self, from: Data(SessionExporter.render(data, format: .geojson).utf8))
        let feature = try #require(geo.features.first)
        let coordinates = feature.geometry.coordinates
        let flags = feature.properties.dead_reckoned
        #expect(coordinates.map { $0[1] } == located.map(\.latitude))
        #expect(coordinates.map { $0[0] } == located.map(\.longitude))
        #expect(flags == located.map(\.deadReckoned))
        let locatedPoints = points.filter { $0.location != nil }
        #expect(feature.properties.backfilled == locatedPoints.map(\.backfilled))
        #expect(feature.properties.backfilled.contains(true))

        let gpx = SessionExporter.render(data, format: .gpx)
        let trackpoints = gpx.components(separatedBy: "<trkpt ").dropFirst()
        #expect(trackpoints.count == located.count)
        for (p, text) in zip(locatedPoints, trackpoints) {
            #expect(text.contains("<cmt>backfilled from the board's flash log</cmt>") == p.backfilled)
        }
        for (l, text) in zip(located, trackpoints) {
            let fields = text.split(separator: "\"")
            #expect(Double(String(fields[1]))?.bitPattern == l.latitude.bitPattern, "\(fields[1])")
            #expect(Double(String(fields[3]))?.bitPattern == l.longitude.bitPattern, "\(fields[3])")
            #expect(!fields[1].contains("e") && !fields[3].contains("e"), "GPX decimals have no exponent")
            #expect(text.contains("<type>dead reckoning</type>") == l.deadReckoned)
        }
    }
}
