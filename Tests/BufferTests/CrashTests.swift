import Foundation
import Recording
import Testing
import TestSupport
@testable import Buffer

/// The fixture executable, built beside the test bundle.
func fixturePath() throws -> URL {
    let candidates = [
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
        Bundle.main.bundleURL.deletingLastPathComponent(),
        Bundle.main.bundleURL,
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../.build/debug"),
    ]
    for dir in candidates {
        var d = dir
        for _ in 0..<4 {
            let f = d.appendingPathComponent("mwrecord-fixture")
            if FileManager.default.isExecutableFile(atPath: f.path) { return f }
            d = d.deletingLastPathComponent()
        }
    }
    throw FixtureMissing()
}

struct FixtureMissing: Error, CustomStringConvertible {
    var description: String { "mwrecord-fixture not found beside the test bundle (swift build --build-tests builds it)" }
}

let nmeaCapture = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../../../shared/testdata/nmea/quectel-l76k-nmea.log").standardized.path

/// Waits (up to 60 s) until the fixture has written a line starting with `prefix`, or exited.
private func waitForLine(startingWith prefix: String, in path: String, while process: Process) {
    let deadline = Date().addingTimeInterval(60)
    while process.isRunning, Date() < deadline {
        if let text = try? String(contentsOfFile: path, encoding: .utf8),
           text.split(separator: "\n").contains(where: { $0.hasPrefix(prefix) }) { return }
        Thread.sleep(forTimeInterval: 0.01)
    }
}

@Suite("Crash safety", .serialized)
struct CrashTests {
    @Test("kill -9 at random moments, 50 times: database intact, sealed chunks intact, at most 1 s lost")
    func killLoop() async throws {
        let fixture = try fixturePath()
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let db = BufferStore.path(inStateDirectory: dir)
        var rng = SystemRandomNumberGenerator()
        var everSealed: [String: Int] = [:]
        var sessionsChecked = 0
        let rate = 100.0
        for iteration in 0..<50 {
            let out = URL(fileURLWithPath: dir).appendingPathComponent("out-\(iteration).txt")
            _ = FileManager.default.createFile(atPath: out.path, contents: nil)
            // Start, wait, kill: blocking work, on a thread of its own rather than the test
            // pool's (the checks stay here, in the test's own context).
            let delay = Double.random(in: 0...0.8, using: &rng)
            let outPath = out.path
            let reason = try await onOwnThread {
                try Self.runAndKill(fixture: fixture, arguments: ["--db", db, "--speed", "40", "--seed", String(iteration), "--boards", "2",
                                                                  "--nmea", nmeaCapture],
                                    output: outPath, anchor: iteration.isMultiple(of: 2) ? "sealed " : "session ", delay: delay)
            }
            #expect(reason.killed, "fixture exited by itself: \(reason.status)")

            var session: String?
            var accepted: [String: Int] = [:]
            for line in try String(contentsOf: out, encoding: .utf8).split(separator: "\n") {
                let f = line.split(separator: " ").map(String.init)
                switch f.first {
                case "session": session = f[1]
                case "sealed" where f.count == 5: everSealed[f[1]] = Int(f[4])
                case "accepted" where f.count == 3: accepted[f[1]] = Int(f[2])
                default: break
                }
            }
            let store = try openStore(dir)
            #expect(try store.integrityCheck() == "ok")
            #expect(try store.synchronousLevel() == 2)
            // Every chunk ever reported sealed is there, checksum and point count intact.
            for (name, count) in everSealed {
                let doc = try store.realtimeDocument(name: name)
                #expect(doc?.points.count == count, "sealed chunk \(name) missing or damaged")
            }
            try store.recoverInterruptedSessions()
            guard let session else { continue }
            sessionsChecked += 1
            let data = try store.dataset(sessionID: session)
            for (board, n) in accepted {
                let kept = data.points.filter { $0.board == board }
                // The samples carry x = sample index: the survivors are exactly the first ones,
                // in order, with nothing duplicated.
                let xs = kept.map { Int(($0.point.gyroscope.x * 16.4).rounded()) }
                let firstWrong = xs.indices.first { xs[$0] != Int(Int16(truncatingIfNeeded: $0)) }
                #expect(firstWrong == nil, "board \(board): sample \(firstWrong ?? -1) of \(xs.count) is not the next in order")
                #expect(kept.count >= n - Int(rate) - 4, "lost \(n - kept.count) samples of \(board) (more than 1 s)")
            }
        }
        #expect(sessionsChecked >= 40)
        #expect(everSealed.count >= 10)
    }

    /// Runs the fixture, kills it `delay` seconds after it printed a line starting with
    /// `anchor` (the kill moment counts from what it has done, not from its start, so a loaded
    /// machine that starts it slowly still gets the same coverage: from its session start,
    /// kills with only an open chunk or just after the first seal, about 0.6 s in at 40× of
    /// 100 Hz; from its first seal, kills with sealed chunks behind them), and reaps it.
    private static func runAndKill(fixture: URL, arguments: [String], output: String, anchor: String,
                                   delay: Double) throws -> (killed: Bool, status: Int32) {
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        defer { try? handle.close() }
        let p = Process()
        p.executableURL = fixture
        p.arguments = arguments
        p.standardOutput = handle
        try Spawning.run(p)
        waitForLine(startingWith: anchor, in: output, while: p)
        Thread.sleep(forTimeInterval: delay)
        kill(p.processIdentifier, SIGKILL)
        p.waitForExit()
        return (p.terminationReason == .uncaughtSignal, p.terminationStatus)
    }
}
