import Foundation
import Testing
import UpstreamFixtures
@testable import Buffer
@testable import Uplink

/// The Firestore fault test's sequence (a commit stored upstream whose answer is lost, a
/// backoff, then a probe), in memory: the service must stop on cancel wherever it is, with
/// every confirmed document marked sent and nothing else.
@Suite("Sync cancellation")
struct SyncCancellationTests {
    @Test("cancelled while the probe after a lost answer hangs: run returns, confirmed documents are marked sent, the rest is pending")
    func cancelDuringProbeAfterLostAnswer() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        // Two sessions of 5 chunks and a records document: 12 documents.
        try fillStore(store, sessions: 2, chunks: 5, size: 10)
        // Round 1: commits 1 and 2 (one per session); round 2: commits 3 and 4, the answer to
        // commit 3 lost; then a single probe, commit 5, which never answers.
        let sink = LostThenHangingSink(lostAnswer: 3, hangFrom: 5)
        let configuration = SyncConfiguration(backoff: Backoff(base: 0.05, cap: 0.5), documentsPerCommit: 2, concurrentSessions: 2,
                                              idlePollInterval: 1)
        let service = SyncService(store: store, sink: sink, configuration: configuration, clock: VirtualClock(),
                                  jitter: ScriptedJitter(fixed: 0.5))
        let task = Task { try await service.run() }
        #expect(await eventually { sink.hanging })
        task.cancel()
        try await task.value
        let (stored, lost) = sink.snapshot
        #expect(stored.count == 8 && lost.count == 2, "stored \(stored), lost \(lost)")
        // Confirmed: commits 1, 2 and 4. Commit 3 is upstream but unconfirmed, so it goes
        // again (harmless: fixed names); the probe's document was never stored.
        let confirmed = stored.filter { !lost.contains($0) }
        for name in confirmed { #expect(try store.outboxState(of: name)?.state == .sent, "\(name) not marked sent") }
        for name in lost { #expect(try store.outboxState(of: name)?.state == .pending, "\(name) not pending") }
        #expect(try store.sentCount() == 6)
        let stats = try store.backlogStats()
        #expect(stats.count == 6 && stats.inFlight == 0 && stats.dead == 0)
        let status = await service.status
        #expect(status.activity == .stopped && status.sent == 6 && status.retries == 1, "\(status.summary)")
    }
}

/// Stores each commit until `hangFrom`; commit `lostAnswer` is stored but answered like a
/// dropped connection (as the Firestore fault test's proxy does); from `hangFrom` on a commit
/// waits until it is cancelled (an upstream that never answers).
final class LostThenHangingSink: Sink, @unchecked Sendable {
    let name = "lost-then-hanging"
    private let lock = NSLock()
    private let lostAnswer: Int
    private let hangFrom: Int
    private var commits = 0
    private var stored: [String] = []
    private var lost: [String] = []
    private var waiting = false

    init(lostAnswer: Int, hangFrom: Int) {
        self.lostAnswer = lostAnswer
        self.hangFrom = hangFrom
    }

    /// True once a commit is waiting for an answer that never comes.
    var hanging: Bool { lock.withLock { waiting } }
    /// Names stored upstream, and those of them whose answer was lost.
    var snapshot: (stored: [String], lost: [String]) { lock.withLock { (stored, lost) } }

    func write(_ documents: [SinkDocument]) async throws(SinkError) {
        let names = documents.map(\.name)
        let n = lock.withLock { () -> Int in
            commits += 1
            return commits
        }
        if n >= hangFrom {
            lock.withLock { waiting = true }
            do { try await Task.sleep(for: .seconds(3600)) } catch { throw .transient(reason: "cancelled", retryAfter: nil) }
        }
        lock.withLock {
            stored += names
            if n == lostAnswer { lost += names }
        }
        if n == lostAnswer {
            throw .transient(reason: "commit of \(names.count) document(s) got no answer: remote connection closed", retryAfter: nil)
        }
    }

    func close() async {}
}
