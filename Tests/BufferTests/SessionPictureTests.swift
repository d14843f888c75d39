import Basics
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Recording
import Testing
@testable import Buffer

/// A walk east then north at ~1.4 m/s: gyro at `hz` on each board, a fix every second, with a
/// gap on board B1 and a stretch without fixes.
private func walkingDataset(seconds: Int = 60, hz: Int = 50, boards: [String] = ["B1", "B2"]) -> SessionDataset {
    let t0 = 1_800_000_000_000.0
    var out: [SessionDataset.BoardPoint] = []
    let metresPerDegree = 111_195.0
    for (b, board) in boards.enumerated() {
        for i in 0..<(seconds * hz) {
            let t = t0 + Double(i) * 1000 / Double(hz) + Double(b)
            let s = Double(i) / Double(hz)
            // 20..25 s: no fix; first half east, second half north.
            var location: PointLocation?
            if !(20..<25).contains(s) {
                let second = s.rounded(.down)
                let east = min(second, Double(seconds) / 2) * 1.4, north = max(0, second - Double(seconds) / 2) * 1.4
                location = PointLocation(latitude: 47 + north / metresPerDegree,
                                         longitude: 8 + east / (metresPerDegree * cos(47 * Double.pi / 180)),
                                         timestamp: t0 + second * 1000, accuracy: 3, age: 0)
            }
            // B1 lost 25 samples (half a second) before its sample at 40 s.
            if board == "B1", (Int(40 * Double(hz))..<Int(40.5 * Double(hz))).contains(i) { continue }
            let missed = board == "B1" && i == Int(40.5 * Double(hz)) ? Int(0.5 * Double(hz)) : 0
            // The gap's duration as recorded: from the previous sample (39.98 s) to this one.
            let gap = missed > 0 ? 520 : 0
            let phase = 2 * Double.pi * 1.8 * s
            out.append(.init(board: board, point: RecordedPoint(
                gyroscope: GyroReading(x: Float(120 * sin(phase)), y: Float(60 * cos(phase)), z: Float(30 * sin(2 * phase)), timestamp: t),
                location: location, missedBefore: missed, gapMilliseconds: gap)))
        }
    }
    out.sort { $0.point.gyroscope.timestamp < $1.point.gyroscope.timestamp }
    return SessionDataset(sessionID: "PICTURE", startedAt: t0, endedAt: t0 + Double(seconds) * 1000, state: "submitted",
                          timeSource: "gnss_corrected", boards: boards, points: out, chunkNames: [],
                          survey: .hazards(["pothole": 3, "broken pavement": 1]), distanceMetres: 84)
}

/// Occurrences of `needle` in `text`.
private func count(_ needle: String, in text: String) -> Int { text.components(separatedBy: needle).count - 1 }

/// The `d` attribute of the first path with `class`.
private func pathData(_ svg: String, class name: String) -> String? {
    guard let start = svg.range(of: "class=\"\(name)\"") else { return nil }
    guard let d = svg.range(of: " d=\"", range: start.upperBound..<svg.endIndex) else { return nil }
    guard let end = svg.range(of: "\"", range: d.upperBound..<svg.endIndex) else { return nil }
    return String(svg[d.upperBound..<end.lowerBound])
}

@Suite("Session pictures")
struct SessionPictureTests {
    @Test("html: one self-contained page with numbers, survey, track and a trace per board")
    func page() throws {
        let html = SessionPicture.html(walkingDataset())
        // Nothing is fetched: no scripts, links, images, imports or URLs beyond the SVG namespace.
        for forbidden in ["<script", "<link", "<img", "@import", "url(", "src=", "href="] {
            #expect(!html.contains(forbidden), "page refers to something outside itself: \(forbidden)")
        }
        #expect(html.replacingOccurrences(of: "http://www.w3.org/2000/svg", with: "").contains("http") == false)
        #expect(count("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"trace\"", in: html) == 2)
        #expect(html.contains("board B1") && html.contains("board B2"))
        for axis in ["x", "y", "z"] { #expect(count("class=\"axis-\(axis)\"", in: html) == 2) }
        #expect(count("class=\"track-line\"", in: html) == 1)
        #expect(html.contains("class=\"start\"") && html.contains("class=\"end\""))
        #expect(html.contains("pothole: intensity 3") && html.contains("broken pavement: intensity 1"))
        #expect(html.contains("<th>Duration</th><td>1 min 0 s</td>"))
        #expect(html.contains("<th>Points</th><td>5\u{2009}975 gyro samples</td>"))
        #expect(html.contains("<th>Loss</th><td>25 samples missed in 1 gap (0.42 %)</td>"))
        #expect(html.contains("<th>Distance</th><td>84 m</td>"))
        #expect(html.contains("Drawn decimated: 5\u{2009}975 samples"))
    }

    @Test("svg: one well-formed standalone image with the same pieces")
    func image() throws {
        let svg = SessionPicture.svg(walkingDataset())
        let parser = XMLParser(data: Data(svg.utf8))
        #expect(parser.parse(), "not well-formed XML: \(String(describing: parser.parserError))")
        #expect(count("class=\"trace\"", in: svg) == 2)
        #expect(svg.contains("class=\"track-line\"") && svg.contains("class=\"gap\"") && svg.contains("class=\"no-fix\""))
        #expect(svg.contains("pothole: intensity 3"))
    }

    @Test("gaps are shaded where they happened; backfilled stretches get their own shade and key")
    func shading() throws {
        let model = SessionPictureModel(walkingDataset())
        let b1 = try #require(model.traces.first { $0.board == "B1" })
        #expect(b1.shaded.count == 1)
        let gap = try #require(b1.shaded.first)
        #expect(gap.kind == .gap(missedSamples: 25))
        #expect(abs(gap.start - (1_800_000_000_000 + 39_980)) < 1e-6 && abs(gap.end - (1_800_000_000_000 + 40_500)) < 1e-6)
        // A point without a recorded duration (older data): the previous sample bounds the gap.
        var older = b1
        older.shaded = SessionPictureModel.trace(board: "B1", points: [
            RecordedPoint(gyroscope: GyroReading(x: 0, y: 0, z: 0, timestamp: 1000), location: nil),
            RecordedPoint(gyroscope: GyroReading(x: 0, y: 0, z: 0, timestamp: 1300), location: nil, missedBefore: 29),
        ]).shaded
        #expect(older.shaded == [.init(kind: .gap(missedSamples: 29), start: 1000, end: 1300)])
        let chart = SessionPicture.Layout(model).chart
        let svg = chart.svg(b1)
        // 39.98 s .. 40.5 s of a 59.98 s axis over 1000 columns: columns 666 to 675.
        #expect(svg.contains("<rect class=\"gap\" x=\"\(56 + 666)\" y=\"26\" width=\"10\""))
        #expect(!svg.contains("class=\"backfilled\""))
        #expect(!SessionPicture.html(model).contains("backfilled later"))

        var withBackfill = model
        withBackfill.traces[0].shaded.append(.init(kind: .backfilled, start: 1_800_000_010_000, end: 1_800_000_012_000))
        let page = SessionPicture.html(withBackfill)
        #expect(page.contains("<rect class=\"backfilled\""))
        #expect(page.contains("backfilled later"))
    }

    @Test("thousands of tiny gaps merge into at most one shaded rectangle per pixel column")
    func manyGaps() throws {
        let t0 = 1_800_000_000_000.0
        let samples = (0..<100_000).map { SessionPictureModel.Sample(time: t0 + Double($0) * 10, x: 1, y: 2, z: 3, breaksLine: $0 % 7 == 0) }
        let shaded = stride(from: 7, to: 100_000, by: 7).map {
            SessionPictureModel.ShadedStretch(kind: .gap(missedSamples: 1), start: t0 + Double($0 - 1) * 10, end: t0 + Double($0) * 10)
        }
        let chart = TraceChart(plotWidth: 1000, plotHeight: 100, range: t0...(t0 + 999_990))
        let svg = chart.svg(.init(board: "B", samples: samples, shaded: shaded))
        #expect(count("<rect class=\"gap\"", in: svg) == 1)
        #expect(svg.contains("14\u{2009}285 gaps: 14\u{2009}285 samples missed"))
    }

    @Test("decimation keeps every peak and bounds the vertices by the pixel columns")
    func decimation() throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("decimation seed \(seed)")
        var rng = SeededRandom(seed: seed)
        let t0 = 1_800_000_000_000.0
        var samples = (0..<200_000).map { i in
            SessionPictureModel.Sample(time: t0 + Double(i) * 10, x: Double.random(in: -100...100, using: &rng), y: 0, z: 0)
        }
        let spike = Int.random(in: 0..<samples.count, using: &rng)
        samples[spike].x = 1500
        samples[(spike + 100_000) % samples.count].x = -1700
        let decimator = TraceDecimator(columns: 1000, range: t0...(t0 + 1_999_990))
        let runs = decimator.runs(samples, value: \.x)
        let vertices = runs.flatMap { $0 }
        #expect(vertices.count <= 2000)
        #expect(vertices.map(\.value).max() == 1500)
        #expect(vertices.map(\.value).min() == -1700)
        #expect(runs.count == 1)
        // Every column's extremes: the column of the spike shows it.
        let column = Double(decimator.column(of: samples[spike].time)) + 0.5
        #expect(vertices.contains(TraceDecimator.Vertex(column: column, value: 1500)))
        // A short session draws every sample.
        let few = Array(samples.prefix(300))
        #expect(TraceDecimator(columns: 1000, range: t0...(t0 + 2990)).runs(few, value: \.x).flatMap { $0 }.count == 300)
    }

    @Test("a gap breaks the line; a gap inside one pixel column does not")
    func lineBreaks() {
        let t0 = 0.0
        // Sample 55 is the first of pixel column 55 of 100, and in the middle of column 5 of 10.
        let samples = (0..<100).map { SessionPictureModel.Sample(time: t0 + Double($0), x: 1, y: 0, z: 0, breaksLine: $0 == 55) }
        #expect(TraceDecimator(columns: 100, range: 0...100).runs(samples, value: \.x).count == 2)
        #expect(TraceDecimator(columns: 10, range: 0...100).runs(samples, value: \.x).count == 1)
    }

    @Test("a two-hour session at 100 Hz on four boards renders to a bounded page")
    func longSession() throws {
        let t0 = 1_800_000_000_000.0
        let n = 2 * 3600 * 100
        let traces = (1...4).map { b in
            SessionPictureModel.BoardTrace(board: "B\(b)", samples: (0..<n).map { i in
                let t = t0 + Double(i) * 10
                return .init(time: t, x: 200 * sin(Double(i) / 40 + Double(b)), y: 90 * cos(Double(i) / 40), z: Double(i % 97) - 48)
            }, shaded: [])
        }
        let track = (0..<7200).map { SessionPictureModel.Fix(latitude: 47 + Double($0) * 1e-5, longitude: 8 + sin(Double($0) / 500) * 1e-3,
                                                             time: t0 + Double($0) * 1000) }
        let model = SessionPictureModel(sessionID: "LONG", startedAt: t0, endedAt: t0 + Double(n) * 10, state: "submitted",
                                        timeSource: nil, traces: traces, track: track, outages: [], survey: .noHazard,
                                        distanceMetres: 8000, locatedPoints: 4 * n)
        let html = SessionPicture.html(model)
        print("two hours, four boards at 100 Hz: page of \(html.utf8.count) bytes")
        // 2.88 million samples; per board and axis at most two vertices of ~12 bytes per column.
        #expect(html.utf8.count < 4 * 3 * 2 * 1000 * 14 + 200_000, "page is \(html.utf8.count) bytes")
        let vertices = pathData(html, class: "axis-x").map { $0.filter { $0 == "L" || $0 == "M" }.count } ?? 0
        #expect(vertices > 1000 && vertices <= 2000)
        #expect(html.contains("Drawn decimated: 2\u{2009}880\u{2009}000 samples"))
        #expect(html.contains("<th>Duration</th><td>2 h 0 min</td>"))
        #expect(html.contains("No hazard reported."))
    }

    @Test("the track is drawn to scale with a scale bar; missing fixes are drawn and counted")
    func track() throws {
        let model = SessionPictureModel(walkingDataset())
        #expect(model.outages.count == 1)
        let outage = try #require(model.outages.first)
        #expect(outage.before != nil && outage.after != nil)
        let map = TrackMap(width: 1068, height: 420)
        let svg = map.svg(model)
        #expect(count("<line class=\"no-fix\"", in: svg) == 1)
        // The walk is 42 m east then 40.6 m north: equal metres are equal pixels.
        let projection = TrackMap.Projection(fixes: model.track, fallback: model.track[0], width: 1068, height: 420, margin: 28)
        let corner = try #require(model.track.first { $0.time == 1_800_000_030_000 })
        let start = projection.point(model.track[0]), turn = projection.point(corner), end = projection.point(model.track.last!)
        let east = hypot(turn.x - start.x, turn.y - start.y), north = hypot(end.x - turn.x, end.y - turn.y)
        #expect(abs(east / north - 30 / 29) < 0.01, "east \(east) px, north \(north) px")
        #expect(abs(turn.y - start.y) < 0.01 && end.y < turn.y, "north is up")
        #expect(abs(east * projection.metresPerPixel - 42) < 0.1)
        // The scale bar's length in pixels matches its label.
        let bar = try #require(svg.range(of: "<g class=\"scale-bar\"><path d=\"M12 401 v5 h"))
        let pixels = Double(svg[bar.upperBound...].prefix { $0 != " " }) ?? 0
        // 40.6 m north over 364 px limits the scale: a fifth of the width is 24 m, rounded up to 50 m.
        #expect(svg.contains(">50 m</text>"))
        #expect(abs(pixels * projection.metresPerPixel - 50) < 0.1)
        let page = SessionPicture.html(model)
        let legend = page.components(separatedBy: "<p class=\"legend\">").dropFirst().first?.prefix(200) ?? ""
        #expect(legend.contains("dashed orange: no fix (1 stretch, longest 5.0 s)"), "\(legend)")
        let located = page.components(separatedBy: "<th>Located</th>").dropFirst().first?.prefix(80) ?? ""
        #expect(located.hasPrefix("<td>91.6 % of points, 1 stretch without a fix</td>"), "\(located)")
    }

    @Test("a walk that ends where it began: the end's label goes below, clear of the start's")
    func loopLabels() throws {
        let fixes = [(47.0, 8.0), (47.001, 8.0), (47.001, 8.0015), (47.00001, 8.0)].enumerated().map {
            SessionPictureModel.Fix(latitude: $0.element.0, longitude: $0.element.1, time: Double($0.offset) * 1000)
        }
        let model = SessionPictureModel(sessionID: "LOOP", startedAt: 0, endedAt: 3000, state: "submitted", timeSource: nil, traces: [],
                                        track: fixes, outages: [], survey: .noHazard, distanceMetres: 400, locatedPoints: 0)
        let svg = TrackMap(width: 1068, height: 420).svg(model)
        func labelY(_ name: String) -> Double? {
            guard let end = svg.range(of: ">\(name)</text>") else { return nil }
            let tag = svg[..<end.lowerBound]
            guard let y = tag.range(of: " y=\"", options: .backwards) else { return nil }
            return Double(tag[y.upperBound...].prefix { $0 != "\"" })
        }
        let start = try #require(labelY("start")), end = try #require(labelY("end"))
        #expect(end - start > 20, "start label at y \(start), end label at y \(end)")
    }

    @Test("no fix at all, no samples, no survey yet: the page says so instead of drawing nothing")
    func emptySession() throws {
        let d = SessionDataset(sessionID: "EMPTY", startedAt: 1_800_000_000_000, endedAt: nil, state: "recording", timeSource: nil,
                               boards: ["B1"], points: [], chunkNames: [], survey: nil, distanceMetres: nil)
        let html = SessionPicture.html(d)
        #expect(html.contains("no GNSS fix in this session"))
        #expect(html.contains("no samples from this board"))
        #expect(html.contains("Not asked yet: the session is still recording."))
        #expect(html.contains("<th>Stopped</th><td>still recording</td>"))
        let svg = SessionPicture.svg(d)
        #expect(XMLParser(data: Data(svg.utf8)).parse())
    }

    @Test("names from the data are escaped")
    func escaping() throws {
        var d = walkingDataset(seconds: 5)
        d.survey = .hazards(["<b>ice & \"snow\"</b>": 2])
        d.sessionID = "A<B"
        let html = SessionPicture.html(d)
        #expect(!html.contains("<b>ice") && html.contains("&lt;b&gt;ice &amp; &quot;snow&quot;&lt;/b&gt;: intensity 2"))
        #expect(XMLParser(data: Data(SessionPicture.svg(d).utf8)).parse())
    }

    @Test("export through the buffer: survey, stored distance and the html format")
    func throughTheStore() throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let id = try recordSession(store, start: 1_800_000_000_000, chunks: 2, size: 100, submit: .hazards(["pothole": 4]))
        let data = try store.dataset(sessionID: id)
        #expect(data.survey == .hazards(["pothole": 4]))
        #expect(data.distanceMetres == 12.5)
        let html = SessionExporter.render(data, format: .html)
        #expect(html.contains("pothole: intensity 4") && html.contains("<th>Distance</th><td>12 m</td>"))
        #expect(SessionExporter.render(data, format: .svg).hasPrefix("<?xml"))
        let waiting = try recordSession(store, start: 1_800_000_100_000, chunks: 1, size: 10)
        #expect(try store.dataset(sessionID: waiting).survey == nil)
        #expect(SessionExporter.render(try store.dataset(sessionID: waiting), format: .html).contains("Not answered yet"))
    }
}
