import Foundation
import Recording
import Testing
import TestSupport
@testable import Buffer

/// Reads a screenshot (8-bit RGB/RGBA PNG, not interlaced, as Chromium writes them) with the
/// standard library's zlib and prints, as JSON, the size, how many pixels are not the
/// background and, per named colour, how many pixels are close to it and the bounding box of
/// those that are the colour itself (an antialiased edge blends into other colours).
private let pngCensus = #"""
import json, struct, sys, zlib
path, colours = sys.argv[1], json.loads(sys.argv[2])
data = open(path, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, width = 8, b"", 0
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        assert depth == 8 and ctype in (2, 6) and interlace == 0, "unsupported PNG %r" % ((depth, ctype, interlace),)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
raw = zlib.decompress(idat)
stride = width * bpp
rows, prev, i = [], bytearray(stride), 0
for y in range(height):
    f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    rows.append(line)
    prev = line
census = {name: {"count": 0, "box": None, "columns": {}} for name in colours}
background = 0
for y, line in enumerate(rows):
    for x in range(width):
        r, g, b = line[x * bpp], line[x * bpp + 1], line[x * bpp + 2]
        if r > 245 and g > 245 and b > 245:
            background += 1
            continue
        for name, (cr, cg, cb) in colours.items():
            if abs(r - cr) < 40 and abs(g - cg) < 40 and abs(b - cb) < 40:
                entry = census[name]
                entry["count"] += 1
                if abs(r - cr) > 8 or abs(g - cg) > 8 or abs(b - cb) > 8:
                    continue  # counted, but an edge blended with its neighbours: not for the box
                entry["columns"][x] = entry["columns"].get(x, 0) + 1
                box = entry["box"]
                entry["box"] = [x, y, x, y] if box is None else [min(box[0], x), min(box[1], y), max(box[2], x), max(box[3], y)]
for entry in census.values():
    # Columns filled over at least 100 pixels of the colour itself: a shaded band, not a line.
    entry["columns"] = sorted(x for x, n in entry["columns"].items() if n >= 100)
print(json.dumps({"width": width, "height": height, "foreground": width * height - background, "colours": census}))
"""#

private struct Census: Decodable {
    struct Colour: Decodable {
        var count: Int
        /// left, top, right, bottom
        var box: [Int]?
        /// Columns with at least 100 pixels of exactly this colour.
        var columns: [Int]
    }

    var width: Int
    var height: Int
    var foreground: Int
    var colours: [String: Colour]
}

/// Runs `command` through /bin/sh, its output into `log`; the exit status.
private func run(_ command: String, log: String) throws -> Int32 {
    let child = try ChildProcess("/bin/sh", ["-c", command + " >'\(log)' 2>&1"], environment: ProcessInfo.processInfo.environment)
    return child.wait()
}

@Suite("Session pictures in a browser")
struct SessionPictureBrowserTests {
    @Test("headless Chromium draws the page offline: track above the traces, every axis and the gap visible")
    func screenshot() throws {
        let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].first { FileManager.default.isExecutableFile(atPath: $0) }
        let browser = try #require(chromium, "Chromium not found: run scripts/install-deps.sh (Debian package chromium)")
        let dir = temporaryDirectory()
        // MWGATE_KEEP_SCREENSHOT=1 keeps the page and the screenshot to look at.
        let keep = ProcessInfo.processInfo.environment["MWGATE_KEEP_SCREENSHOT"] == "1"
        defer { if keep { print("kept \(dir)/session.html and \(dir)/shot.png") } else { try? FileManager.default.removeItem(atPath: dir) } }

        // 90 s of walking on two boards, a 2 s gap on B1 and 10 s without a fix.
        let t0 = 1_800_000_000_000.0
        var points: [SessionDataset.BoardPoint] = []
        for board in ["B1", "B2"] {
            for i in 0..<(90 * 50) {
                let s = Double(i) / 50
                if board == "B1", (30.0..<32).contains(s) { continue }
                let phase = 2 * Double.pi * 1.7 * s
                let location = (50.0..<60).contains(s) ? nil
                    : PointLocation(latitude: 47 + s * 1.2e-5, longitude: 8 + sin(s / 30) * 4e-4, timestamp: t0 + s.rounded(.down) * 1000,
                                    accuracy: 3, age: 0)
                points.append(.init(board: board, point: RecordedPoint(
                    gyroscope: GyroReading(x: Float(150 * sin(phase)), y: Float(70 * cos(phase)), z: Float(40 * sin(2 * phase)), timestamp: t0 + s * 1000),
                    location: location, missedBefore: board == "B1" && s == 32 ? 100 : 0)))
            }
        }
        points.sort { $0.point.gyroscope.timestamp < $1.point.gyroscope.timestamp }
        let dataset = SessionDataset(sessionID: "BROWSER", startedAt: t0, endedAt: t0 + 90_000, state: "submitted", timeSource: "gnss_corrected",
                                     boards: ["B1", "B2"], points: points, chunkNames: [], survey: .hazards(["pothole": 3]),
                                     distanceMetres: 120)
        let page = dir + "/session.html", shot = dir + "/shot.png"
        try SessionPicture.html(dataset).write(toFile: page, atomically: true, encoding: .utf8)

        // No network: every host name resolves to nothing, and a private profile.
        let status = try run("'\(browser)' --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run"
                             + " --user-data-dir='\(dir)/profile' --host-resolver-rules='MAP * ~NOTFOUND'"
                             + " --window-size=1150,1500 --screenshot='\(shot)' 'file://\(page)'", log: dir + "/chromium.log")
        let log = (try? String(contentsOfFile: dir + "/chromium.log", encoding: .utf8)) ?? ""
        #expect(status == 0, "chromium exited \(status): \(log.suffix(2000))")
        try #require(FileManager.default.fileExists(atPath: shot), "no screenshot: \(log.suffix(2000))")

        let colours: [String: [Int]] = [
            "x": [214, 39, 40], "y": [44, 160, 44], "z": [31, 119, 180], "track": [106, 61, 154],
            "noFix": [230, 85, 13], "gap": [245, 198, 160],
        ]
        let coloursJSON = String(decoding: try JSONEncoder().encode(colours), as: UTF8.self)
        let censusLog = dir + "/census.json"
        #expect(try run("python3 -c '\(pngCensus.replacingOccurrences(of: "'", with: "'\\''"))' '\(shot)' '\(coloursJSON)'",
                        log: censusLog) == 0, "\((try? String(contentsOfFile: censusLog, encoding: .utf8)) ?? "")")
        let census = try JSONDecoder().decode(Census.self, from: Data(contentsOf: URL(fileURLWithPath: censusLog)))
        print("screenshot \(census.width)x\(census.height): \(census.foreground) foreground pixels; "
              + census.colours.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.count) \($0.value.box ?? [])" }.joined(separator: ", "))

        #expect(census.width == 1150 && census.height == 1500)
        #expect(census.foreground > census.width * census.height / 20, "the page is (nearly) blank")
        for name in ["x", "y", "z", "track", "noFix", "gap"] {
            #expect((census.colours[name]?.count ?? 0) > 150, "\(name) is not drawn")
        }
        let track = try #require(census.colours["track"]?.box), z = try #require(census.colours["z"]?.box)
        // The track map sits above the traces and is drawn across it, not as a dot.
        #expect(track[3] < z[1], "track \(track) not above the traces \(z)")
        #expect(max(track[2] - track[0], track[3] - track[1]) > 200, "track spans \(track)")
        // The traces run across the charts' 1,000 columns (the page's margin is 24 px, the axis 56 px).
        #expect(z[0] <= 82 && z[2] >= 1070, "traces span \(z)")
        // The gap at 30-32 s of 90 s: a band over columns 333-356 of the chart and nowhere else.
        let band = census.colours["gap"]?.columns ?? []
        #expect(!band.isEmpty && band.allSatisfy { (80 + 330...80 + 360).contains($0) }, "gap band at \(band)")
    }
}
