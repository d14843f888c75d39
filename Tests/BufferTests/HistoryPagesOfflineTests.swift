import Foundation
import Recording
import ExportFormats
import TestSupport
import Testing
@testable import Buffer

/// `mwctl history --html DIR --state-dir STATE`: the built mwctl reads a stopped gateway's
/// buffer (written by the store, then closed) and writes a picture page per session and an
/// index linking them, as an operator hands the directory to a researcher.
@Suite("mwctl history --html offline")
struct HistoryPagesOfflineTests {
    struct Run {
        var status: Int32
        var stdout: String
        var stderr: String
    }

    /// Runs the built mwctl in `timeZone` (the gateway's, UTC here, by default) and collects its output.
    static func mwctl(_ arguments: [String], timeZone: String = "UTC") throws -> Run {
        let child = try ChildProcess(try BuiltExecutable.path("mwctl"), arguments,
                                     environment: ["TZ": timeZone, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"])
        // mwctl writes at most a line to stderr, so reading the pipes in turn cannot block.
        let out = child.output.readDataToEndOfFile()
        let err = child.errors.readDataToEndOfFile()
        return Run(status: child.wait(), stdout: String(decoding: out, as: UTF8.self), stderr: String(decoding: err, as: UTF8.self))
    }

    /// The `href` targets of the page's links.
    static func links(_ html: String) -> [String] {
        html.components(separatedBy: "<a href=\"").dropFirst().compactMap { $0.split(separator: "\"", maxSplits: 1).first.map(String.init) }
    }

    @Test("index.html links a self-contained page per session with its traces; submitted pages are kept on the next run")
    func pagesFromAStoppedGatewaysBuffer() throws {
        let state = temporaryDirectory()
        let pictures = state + "/pictures"
        defer { try? FileManager.default.removeItem(atPath: state) }
        // Two walks of the last hours (history shows days counted back from now), one surveyed,
        // one awaiting its survey; an ID with characters a file name cannot carry.
        let now = Date().timeIntervalSince1970 * 1000
        let surveyed = "walk/1 <morning>", waiting = UUID().uuidString
        do {
            let store = try openStore(state, clock: TestClock(Date()))
            try recordSession(store, id: surveyed, start: now - 2 * 3_600_000, chunks: 2, size: 300, board: "C4:01",
                              submit: .hazards(["pothole": 3]))
            try recordSession(store, id: waiting, start: now - 3_600_000, chunks: 1, size: 200, board: "D7:02")
        }

        let first = try Self.mwctl(["history", "--days", "7", "--state-dir", state, "--html", pictures])
        #expect(first.status == 0, "exit \(first.status): \(first.stderr)")
        #expect(first.stderr.isEmpty, "\(first.stderr)")
        let lastLine = first.stdout.split(separator: "\n").last.map(String.init)
        #expect(lastLine == "pictures: \(pictures)/index.html (2 session page(s), 2 written now)", "\(first.stdout)")

        let index = try String(contentsOfFile: pictures + "/index.html", encoding: .utf8)
        let linked = Self.links(index)
        let expectedFiles = [surveyed, waiting].map { PictureIndexPage.fileName(sessionID: $0) }
        #expect(Set(linked) == Set(expectedFiles), "index links \(linked)")
        #expect(index.contains("walk/1 &lt;morning&gt;") && index.contains(waiting), "the index names each session")
        let dayFormatter = DateFormatter()
        dayFormatter.timeZone = TimeZone(identifier: "UTC")
        dayFormatter.dateFormat = "yyyy-MM-dd"
        #expect(index.contains("<h2>\(dayFormatter.string(from: Date(timeIntervalSince1970: now / 1000 - 7_200)))</h2>"), "the day's heading")
        #expect(index.contains("600 points") && index.contains("200 points"), "each session's points on the index")

        for (id, file, board, points, survey) in [(surveyed, expectedFiles[0], "C4:01", "600", "pothole: intensity 3"),
                                                  (waiting, expectedFiles[1], "D7:02", "200", "Not answered yet")] {
            let path = pictures + "/" + file
            let page = try #require(try? String(contentsOfFile: path, encoding: .utf8), "\(file) exists")
            #expect(page.hasPrefix("<!DOCTYPE html>") && page.hasSuffix("</html>\n"), "\(file) is a whole page")
            #expect(page.contains(PictureText.escaped(id)), "\(file) names its session")
            // Self-contained: nothing fetched (no scripts, stylesheets, images or links out).
            for outside in ["<script", "<link", "<img", "src=", "url(", "href=\"http"] {
                #expect(!page.contains(outside), "\(file) refers outside itself: \(outside)")
            }
            // The board's x, y and z traces are drawn with points, not an empty chart.
            #expect(page.contains("board \(board)"), "\(file) has the trace of board \(board)")
            for axis in ["x", "y", "z"] {
                let start = try #require(page.range(of: "class=\"axis-\(axis)\""), "\(file) draws the \(axis) axis")
                let d = try #require(page.range(of: " d=\"M", range: start.upperBound..<page.endIndex), "\(file) \(axis) path data")
                #expect(page[d.upperBound...].prefix(while: { $0 != "\"" }).contains("L"), "\(file) \(axis) trace has segments")
            }
            #expect(page.contains("\(points) gyro samples"), "\(file) counts its \(points) points")
            #expect(page.contains(survey), "\(file) shows the survey: \(survey)")
        }

        // Again: the surveyed session's page no longer changes and is kept; the waiting one is
        // rewritten (its survey may have come).
        let again = try Self.mwctl(["history", "--days", "7", "--state-dir", state, "--html", pictures])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.stdout.hasSuffix("pictures: \(pictures)/index.html (2 session page(s), 1 written now)\n"), "\(again.stdout)")

        // A copied SD card read in another time zone: the sessions are listed under the days the
        // gateway filed them in, none left out. Chosen so the first walk's local day differs from UTC's.
        let startHour = Calendar(identifier: .gregorian).dateComponents(in: TimeZone(identifier: "UTC")!,
                                                                        from: Date(timeIntervalSince1970: now / 1000 - 7_200)).hour ?? 0
        let elsewhere = startHour < 12 ? "Etc/GMT+12" : "Etc/GMT-14"
        let away = try Self.mwctl(["history", "--days", "7", "--state-dir", state, "--html", pictures + "-away"], timeZone: elsewhere)
        #expect(away.status == 0, "\(away.stderr)")
        #expect(away.stdout.hasSuffix("(2 session page(s), 2 written now)\n"), "TZ=\(elsewhere): \(away.stdout)")
        let awayIndex = (try? String(contentsOfFile: pictures + "-away/index.html", encoding: .utf8)) ?? ""
        #expect(Set(Self.links(awayIndex)) == Set(expectedFiles), "TZ=\(elsewhere): index links \(Self.links(awayIndex))")

        // With --json stdout stays one JSON document and the line goes to stderr.
        let json = try Self.mwctl(["history", "--json", "--days", "7", "--state-dir", state, "--html", pictures])
        #expect(json.status == 0 && (try? JSONSerialization.jsonObject(with: Data(json.stdout.utf8))) != nil, "\(json.stdout)")
        #expect(json.stderr == "pictures: \(pictures)/index.html (2 session page(s), 1 written now)\n", "\(json.stderr)")
    }
}
