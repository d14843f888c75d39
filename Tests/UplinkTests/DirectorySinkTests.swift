import Foundation
import TestSupport
import Recording
import Testing
import UpstreamFixtures
@testable import Buffer
@testable import Uplink

@Suite("Directory sink")
struct DirectorySinkTests {
    @Test("a recorded session becomes JSON files of the documented schema; replays are no-ops")
    func endToEnd() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let session = try recordSession(into: store, boards: 2, seconds: 30)
        let sink = try DirectorySink(root: "\(dir)/out")
        let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(idlePollInterval: 0.2))
        try await runReal(service) { (try? store.backlogStats().count) == 0 }
        let files = try FileManager.default.contentsOfDirectory(atPath: "\(dir)/out/realtime_data")
        #expect(Set(files) == Set(session.chunkNames.map { "\($0).json" }))
        var points = 0
        for name in session.chunkNames {
            let data = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/out/realtime_data/\(name).json"))
            let json = try JSONSerialization.jsonObject(with: data)
            let mine = try #require(try store.realtimeDocument(name: name))
            #expect(jsonEqual(json, try plainJSON(.realtimeData(mine))))
            points += ((json as? [String: Any])?["data"] as? [Any])?.count ?? 0
        }
        #expect(points == session.record.pointCount)
        let record = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(dir)/out/records/\(session.record.name).json")))
        #expect(jsonEqual(record, try plainJSON(.records(session.record))))
        let before = try FileManager.default.attributesOfItem(atPath: "\(dir)/out/records/\(session.record.name).json")[.modificationDate] as? Date
        try await sink.write([.records(session.record)])
        let after = try FileManager.default.attributesOfItem(atPath: "\(dir)/out/records/\(session.record.name).json")[.modificationDate] as? Date
        #expect(before == after)
        await #expect(throws: SinkError.self) {
            try await sink.write([.realtimeData(RealtimeDataDocument(name: "../escape", sessionID: "S", board: "B", seq: 0, points: []))])
        }
    }

    @Test("an idle uploader sends what is queued later at once: the buffer rings it, no timer polls the outbox")
    func doorbellWakesIdleUploader() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        let sink = try DirectorySink(root: "\(dir)/out")
        // The safety net is an hour away: only the doorbell can bring the second session out.
        let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(idlePollInterval: 3600))
        let task = Task { try await service.run() }
        defer { task.cancel() }
        _ = try recordSession(into: store, boards: 1, seconds: 25)
        // Drained, then idle: the service has looked at the empty outbox and now waits.
        let drained = await eventually(timeout: 60) {
            let idle = await service.status.activity == .idle
            return idle && (try? store.backlogStats().count) == 0
        }
        #expect(drained)
        let later = try recordSession(into: store, boards: 2, seconds: 25, startSecond: 1_800_000_100)
        let sent = await eventually(timeout: 60) { (try? store.backlogStats().count) == 0 }
        #expect(sent, "a session queued while the uploader idled waited for its hour-long safety net")
        let files = try FileManager.default.contentsOfDirectory(atPath: "\(dir)/out/realtime_data")
        #expect(Set(later.chunkNames.map { "\($0).json" }).isSubset(of: Set(files)))
        task.cancel()
        try await task.value
    }

    @Test("killed with SIGKILL at random moments, the writer never leaves a partial file")
    func killNine() async throws {
        let candidates = [Bundle.main.bundleURL.deletingLastPathComponent(), Bundle.main.bundleURL,
                          URL(fileURLWithPath: "\(repositoryRoot)/.build/debug")].map { $0.appendingPathComponent("mwuplink-fixture").path }
        let binary = try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0) },
                                  "mwuplink-fixture not found beside the test bundle (swift build --build-tests builds it)")
        let dir = temporaryDirectory("dirkill")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var rng = SystemRandomNumberGenerator()
        var confirmed = Set<String>()
        for _ in 0..<12 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: binary)
            p.arguments = [dir]
            let out = Pipe()
            p.standardOutput = out
            try Spawning.run(p)
            try await Task.sleep(for: .milliseconds(Int.random(in: 150...700, using: &rng)))
            kill(p.processIdentifier, SIGKILL)
            p.waitForExit()
            let printed = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            confirmed.formUnion(printed.split(separator: "\n").map(String.init))
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: "\(dir)/realtime_data")
        let complete = files.filter { $0.hasSuffix(".json") }
        #expect(complete.count >= 3, "the fixture wrote too little to test anything")
        for file in complete {
            let data = try Data(contentsOf: URL(fileURLWithPath: "\(dir)/realtime_data/\(file)"))
            let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            #expect((json?["data"] as? [Any])?.count == 2000, "\(file) is partial (\(data.count) bytes)")
        }
        // Every document reported written is there.
        #expect(confirmed.isSubset(of: Set(complete.map { String($0.dropLast(5)) })))
        // Temp leftovers of the killed writes are swept when the sink opens.
        _ = try DirectorySink(root: dir)
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(dir)/realtime_data").allSatisfy { !$0.hasPrefix(".tmp-") })
    }
}
