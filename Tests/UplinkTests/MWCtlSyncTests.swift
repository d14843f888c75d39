import Foundation
import Testing
@testable import Buffer
@testable import Uplink

@Suite("mwctl sync", .serialized)
struct MWCtlSyncTests {
    func mwctl() throws -> String {
        let candidates = [Bundle.main.bundleURL.deletingLastPathComponent(), Bundle.main.bundleURL,
                          URL(fileURLWithPath: "\(repositoryRoot)/.build/debug")].map { $0.appendingPathComponent("mwctl").path }
        return try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0) },
                            "mwctl not found beside the test bundle (swift build --build-tests builds it)")
    }

    @Test("status shows backlog, last error and dead letters; retry-dead requeues them")
    func statusAndRetryDead() async throws {
        let dir = temporaryDirectory("mwctl")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try fillStore(store, sessions: 1, chunks: 3, size: 10)
        let bad = try #require(try store.recordsDocument(sessionID: "S0")?.gscopeData[1])
        let clock = VirtualClock()
        let sink = FakeSink(clock: clock) { _, docs, _ in docs.contains { $0.name == bad } ? .permanent(reason: "INVALID_ARGUMENT: no") : nil }
        let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(idlePollInterval: 1), clock: clock,
                                  jitter: ScriptedJitter(fixed: 0))
        try await runService(service) { (try? store.backlogStats().count) == 0 }
        try store.setSyncState(SyncService.StateKeys.lastError, "permanent: INVALID_ARGUMENT: no")

        let tool = try mwctl()
        let json = try run(tool, ["sync", "status", "--json", "--state-dir", dir])
        #expect(json.status == 0, "\(json.output)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any])
        #expect(report["deadLetterCount"] as? Int == 1 && report["backlogCount"] as? Int == 0 && report["sent"] as? Int == 3)
        let dead = report["deadLetters"] as? [[String: Any]]
        #expect(dead?.first?["documentName"] as? String == bad)
        #expect((dead?.first?["reason"] as? String)?.contains("INVALID_ARGUMENT") == true)
        #expect(report["lastSuccess"] as? String != nil)
        let text = try run(tool, ["sync", "status", "--state-dir", dir])
        #expect(text.output.contains("dead letters:   1") && text.output.contains(bad))

        let retry = try run(tool, ["sync", "retry-dead", "--state-dir", dir])
        #expect(retry.status == 0 && retry.output == "requeued 1 document\n", "\(retry.output)")
        #expect(try store.deadLetters().isEmpty && store.backlogStats().count == 1)
        let missing = try run(tool, ["sync", "status", "--state-dir", "\(dir)/nope"])
        #expect(missing.status == 3)
    }
}
