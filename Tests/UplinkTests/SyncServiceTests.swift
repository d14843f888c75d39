import Foundation
import Recording
import Testing
import UpstreamFixtures
@testable import Buffer
@testable import Uplink

/// A clock that jumps to whatever deadline is awaited: every wait completes at once, and
/// times are exact.
final class VirtualClock: SyncClock, @unchecked Sendable {
    private let lock = NSLock()
    private var t: Double
    init(_ start: Double = 0) { t = start }
    func now() -> Double { lock.withLock { t } }
    func sleep(until deadline: Double) async throws {
        try Task.checkCancellation()
        lock.withLock { t = max(t, deadline) }
        await Task.yield()
    }
}

/// Jitter from a fixed sequence (or a seeded generator).
final class ScriptedJitter: JitterSource, @unchecked Sendable {
    private let lock = NSLock()
    private var state: UInt64
    private let fixed: Double?
    init(seed: UInt64 = 42, fixed: Double? = nil) { state = seed; self.fixed = fixed }
    func next() -> Double {
        if let fixed { return fixed }
        return lock.withLock {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Double(state >> 11) / Double(1 << 53)
        }
    }
}

/// A gate that opens once and stays open; a cancelled waiter opens it (so a test that never
/// opens it fails by its stall limit instead of hanging).
final class OpenOnce: @unchecked Sendable {
    private let lock = NSLock()
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []
    func open() {
        let release = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            isOpen = true
            defer { waiters = [] }
            return waiters
        }
        for waiter in release { waiter.resume() }
    }
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let open = lock.withLock { () -> Bool in
                    if !isOpen { waiters.append(continuation) }
                    return isOpen
                }
                if open { continuation.resume() }
            }
        } onCancel: {
            open()
        }
    }
}

/// A sink whose writes wait for a gate before going to the wrapped sink.
struct GatedSink: Sink {
    let wrapped: FakeSink
    let gate: OpenOnce
    init(_ wrapped: FakeSink, gate: OpenOnce) { self.wrapped = wrapped; self.gate = gate }
    var name: String { wrapped.name }
    func write(_ documents: [SinkDocument]) async throws(SinkError) {
        await gate.wait()
        try await wrapped.write(documents)
    }
    func close() async { await wrapped.close() }
}

/// An in-memory idempotent sink whose failures are scripted by time and content.
final class FakeSink: Sink, @unchecked Sendable {
    struct Attempt { var time: Double; var names: [String]; var bytes: Int; var failed: Bool }
    let name = "fake"
    private let lock = NSLock()
    private let clock: any SyncClock
    private let behaviour: @Sendable (Double, [SinkDocument], Int) -> SinkError?
    private(set) var attempts: [Attempt] = []
    private(set) var stored: [String: SinkDocument] = [:]
    private(set) var storeOrder: [String] = []
    private var inFlight = 0
    private(set) var maxInFlight = 0

    init(clock: any SyncClock, behaviour: @escaping @Sendable (Double, [SinkDocument], Int) -> SinkError? = { _, _, _ in nil }) {
        self.clock = clock
        self.behaviour = behaviour
    }

    func write(_ documents: [SinkDocument]) async throws(SinkError) {
        let t = clock.now()
        let (index, failure) = lock.withLock { () -> (Int, SinkError?) in
            inFlight += 1
            maxInFlight = max(maxInFlight, inFlight)
            return (attempts.count, behaviour(t, documents, attempts.count))
        }
        await Task.yield()
        lock.withLock {
            inFlight -= 1
            attempts.append(Attempt(time: t, names: documents.map(\.name), bytes: documents.reduce(0) { $0 + outboxBytes($1) },
                                    failed: failure != nil))
            if failure == nil {
                for d in documents where stored[d.name] == nil {
                    stored[d.name] = d
                    storeOrder.append(d.name)
                }
            }
        }
        _ = index
        if let failure { throw failure }
    }

    func close() async {}

    var snapshot: (attempts: [Attempt], stored: [String: SinkDocument], order: [String]) { lock.withLock { (attempts, stored, storeOrder) } }
}

/// The bytes the outbox books for a document (what the rate limiter counts).
func outboxBytes(_ doc: SinkDocument) -> Int {
    switch doc {
    case let .realtimeData(d): PointCodec.encode(d.points).count
    case let .records(r): r.firestoreSize
    }
}

/// Fills the store straight through its recording API: `sessions` sessions of `chunks`
/// chunks of `size` points, surveys submitted.
func fillStore(_ store: BufferStore, sessions: Int, chunks: Int, size: Int) throws {
    for s in 0..<sessions {
        let id = "S\(s)"
        let start = 1_800_000_000_000 + Double(s) * 10_000_000
        try store.beginSession(SessionStart(sessionID: id, startedAt: start, trigger: .controlAPI))
        var t = start
        for seq in 0..<chunks {
            let p = (0..<size).map { i in
                RecordedPoint(gyroscope: GyroReading(x: Float(i), y: 1, z: 2, timestamp: t + Double(i) * 10),
                              location: PointLocation(latitude: 47, longitude: 8, timestamp: t, accuracy: 3, age: 0))
            }
            try store.seal(ChunkToSeal(sessionID: id, board: "B1", seq: seq, bytes: PointCodec.encode(p), pointCount: size,
                                       firstTimestamp: p.first!.gyroscope.timestamp, lastTimestamp: p.last!.gyroscope.timestamp,
                                       timeSource: .systemClockSynchronised, missedSamples: 0))
            t += Double(size) * 10
        }
        try store.endSession(SessionEnd(sessionID: id, endedAt: t, trigger: .controlAPI, boards: ["B1"], pointCount: chunks * size,
                                        distance: 1, timeSource: .systemClockSynchronised))
        try store.submitSurvey(sessionID: id, survey: .noHazard, submittedAt: Date(timeIntervalSince1970: t / 1000 + Double(s)))
    }
}

/// Runs the service until `done` holds, failing when it stalls: no document sent or
/// dead-lettered and no change in the backlog for `stallLimit` seconds, or `limit` seconds in all.
///
/// Virtual time makes every wait instant, so the wall time of a run is only the store's work
/// (an fsync per outbox transaction): on a loaded machine a drain of hundreds of documents
/// takes many times longer than on a quiet one. Slowness is for `make bench`; a stall is a bug.
func runService(_ service: SyncService, stallLimit: Double = 60, limit: Double = 600,
                until done: @escaping @Sendable () async -> Bool) async throws {
    let task = Task { try await service.run() }
    let start = Date()
    var lastProgress = start
    var last: (sent: Int, dead: Int, backlog: Int)?
    var outcome = "reached the expected state"
    while true {
        if await done() { break }
        let status = await service.status
        let now = (sent: status.sent, dead: status.deadLetters, backlog: status.backlogCount)
        if last.map({ $0 != now }) ?? true { last = now; lastProgress = Date() }
        if Date().timeIntervalSince(lastProgress) > stallLimit {
            outcome = "stalled for \(Int(stallLimit)) s at sent \(now.sent), dead \(now.dead), backlog \(now.backlog)"
            break
        }
        if Date().timeIntervalSince(start) > limit {
            outcome = "still short of the expected state after \(Int(limit)) s (sent \(now.sent), backlog \(now.backlog))"
            break
        }
        try? await Task.sleep(for: .milliseconds(100))
    }
    task.cancel()
    try await task.value
    #expect(outcome == "reached the expected state", "service \(outcome)")
}

@Suite("Backoff and pacing")
struct BackoffTests {
    @Test("full-jitter delays stay within [0, min(cap, base*2^n)] and cover the range")
    func distribution() {
        let backoff = Backoff(base: 1, cap: 300)
        let jitter = ScriptedJitter(seed: 7)
        for n in 0..<14 {
            let ceiling = min(300, pow(2, Double(n)))
            #expect(backoff.ceiling(attempt: n) == ceiling)
            let delays = (0..<2000).map { _ in backoff.delay(attempt: n, unit: jitter.next(), retryAfter: nil) }
            #expect(delays.allSatisfy { $0 >= 0 && $0 <= ceiling })
            // Full jitter: spread over the whole interval, mean near the middle.
            #expect(delays.min()! < ceiling * 0.02 && delays.max()! > ceiling * 0.98)
            let mean = delays.reduce(0, +) / Double(delays.count)
            #expect(abs(mean - ceiling / 2) < ceiling * 0.05)
        }
        #expect(backoff.ceiling(attempt: 1000) == 300)
    }

    @Test("Retry-After raises the wait, within its own cap, and parses seconds and HTTP dates")
    func retryAfter() {
        let backoff = Backoff(base: 1, cap: 300, maxRetryAfter: 3600)
        #expect(backoff.delay(attempt: 0, unit: 0.5, retryAfter: 120) == 120)
        #expect(backoff.delay(attempt: 10, unit: 0.9, retryAfter: 5) == 270)
        #expect(backoff.delay(attempt: 0, unit: 0.5, retryAfter: 86_400) == 3600)
        #expect(RetryAfter.seconds("17") == 17)
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "GMT")
        f.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        #expect(RetryAfter.seconds(f.string(from: now.addingTimeInterval(90)), now: now) == 90)
        #expect(RetryAfter.seconds("soon") == nil)
        // RFC 9110's example, a date already past (no wait), and malformed dates.
        #expect(RetryAfter.httpDate("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        #expect(RetryAfter.seconds("Sun, 06 Nov 1994 08:49:37 GMT", now: now) == 0)
        for bad in ["Sun, 06 Foo 1994 08:49:37 GMT", "Sun, 32 Nov 1994 08:49:37 GMT", "Sun, 06 Nov 1994 08:49:37",
                    "Sun, 06 Nov 1994 24:00:00 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun, 06 Nov 1994 08:49 GMT"] {
            #expect(RetryAfter.seconds(bad, now: now) == nil, "\(bad)")
        }
    }

    @Test("a transient failure's Retry-After is waited out before the next attempt")
    func serviceHonoursRetryAfter() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try fillStore(store, sessions: 1, chunks: 2, size: 10)
        let clock = VirtualClock()
        let sink = FakeSink(clock: clock) { _, _, n in n == 0 ? .transient(reason: "503", retryAfter: 120) : nil }
        let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(idlePollInterval: 1),
                                  clock: clock, jitter: ScriptedJitter(fixed: 0))
        try await runService(service) { (try? store.backlogStats().count) == 0 }
        let attempts = sink.snapshot.attempts
        #expect(attempts.count == 3)  // the failed commit, the probe, the rest
        #expect(attempts[1].time - attempts[0].time >= 120)
        let status = await service.status
        #expect(status.retries == 1 && status.sent == 3 && status.lastError?.contains("503") == true)
    }

    @Test("a two-hour outage: one probe at a time, backoff capped, then a paced drain that loses and duplicates nothing; 429 halves the pace")
    func longOutage() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try fillStore(store, sessions: 30, chunks: 24, size: 20)  // 720 chunks + 30 records
        let clock = VirtualClock()
        let outageEnd = 7200.0
        let rate = 2.0, byteRate = 20_000.0
        let sink = FakeSink(clock: clock) { t, _, n in
            if t < outageEnd { return .transient(reason: "connection refused", retryAfter: nil) }
            return nil
        }
        // The 429 comes from a second sink wrapper: the 20th attempt after the outage.
        let throttled = ThrottleOnce(inner: sink, clock: clock, after: outageEnd, skip: 20)
        let config = SyncConfiguration(backoff: Backoff(base: 1, cap: 300), maxCommitsPerSecond: rate, maxBytesPerSecond: byteRate,
                                       documentsPerCommit: 4, concurrentSessions: 1, idlePollInterval: 1, rateRecoveryInterval: 60)
        let service = SyncService(store: store, sink: throttled, configuration: config, clock: clock, jitter: ScriptedJitter(seed: 3))
        try await runService(service) { (try? store.backlogStats().count) == 0 }

        let (attempts, stored, _) = sink.snapshot
        // Nothing lost, nothing twice.
        #expect(stored.count == 750)
        #expect(try store.sentCount() == 750)
        // During the outage: single-document probes, never more than one at once, spaced by
        // at most the cap, and far fewer than one per document.
        let during = attempts.filter { $0.time < outageEnd }
        #expect(during.allSatisfy { $0.failed })
        // The first failure is an ordinary commit; from then on only single-document probes.
        #expect(during.dropFirst().allSatisfy { $0.names.count == 1 })
        #expect(sink.maxInFlight == 1)
        #expect(during.count < 150, "\(during.count) probes in two hours")
        for (a, b) in zip(during, during.dropFirst()) { #expect(b.time - a.time <= 300 + 1e-9) }
        // After: the caps hold over every window starting at a commit.
        let after = attempts.filter { $0.time >= outageEnd }
        for window in [1.0, 10.0, 60.0] {
            for (i, a) in after.enumerated() {
                let inWindow = after[i...].prefix { $0.time < a.time + window }
                #expect(Double(inWindow.count) <= window * rate + 1 + 1e-9)
                let bytes = inWindow.dropLast().reduce(0) { $0 + $1.bytes }
                #expect(Double(bytes) <= window * byteRate + 1e-6)
            }
        }
        // 429: the pace halved (spacing doubles) until the recovery interval passed.
        let throttleAt = try #require(throttled.throttledAt)
        let next = after.filter { $0.time > throttleAt && $0.time < throttleAt + 60 }
        #expect(next.count >= 3)
        for (a, b) in zip(next, next.dropFirst()) { #expect(b.time - a.time >= 1 / (rate / 2) - 1e-9) }
        let status = await service.status
        #expect(status.backlogCount == 0 && status.deadLetters == 0 && status.sent == 750)
        #expect(status.retries == during.count + 1)
    }

    @Test("a permanent error dead-letters only that document; later ones go on; requeueDead sends it after the fix")
    func deadLetters() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try fillStore(store, sessions: 2, chunks: 5, size: 10)
        let bad = try #require(try store.recordsDocument(sessionID: "S0")?.gscopeData[2])
        let clock = VirtualClock()
        let fixed = Flag()
        let sink = FakeSink(clock: clock) { _, docs, _ in
            docs.contains { $0.name == bad } && !fixed.value ? .permanent(reason: "INVALID_ARGUMENT: bad value") : nil
        }
        let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(idlePollInterval: 1), clock: clock,
                                  jitter: ScriptedJitter(fixed: 0))
        try await runService(service) { (try? store.backlogStats().count) == 0 }
        #expect(sink.snapshot.stored.count == 11)
        #expect(try store.deadLetters().map(\.documentName) == [bad])
        #expect(try store.deadLetters().first?.reason?.contains("INVALID_ARGUMENT") == true)
        // Later documents of the same session (including its records document) went through.
        let s0 = try #require(try store.recordsDocument(sessionID: "S0"))
        #expect(sink.snapshot.stored[s0.name] != nil && sink.snapshot.stored[s0.gscopeData[4]] != nil)
        let status = await service.status
        #expect(status.deadLetters == 1)
        fixed.value = true
        #expect(try await service.requeueDead() == 1)
        try await runService(service) { (try? store.backlogStats().count) == 0 }
        #expect(sink.snapshot.stored.count == 12)
        #expect(try store.deadLetters().isEmpty)
    }

    @Test("order within a session is seal order, the records document last; status stream reports progress")
    func orderAndStatus() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try fillStore(store, sessions: 3, chunks: 9, size: 10)
        let clock = VirtualClock()
        let fake = FakeSink(clock: clock)
        // Commits wait until the reader has seen `.draining`: the stream keeps only its newest
        // updates, and a reader a loaded host schedules late would otherwise miss the transient one.
        let draining = OpenOnce()
        let sink = GatedSink(fake, gate: draining)
        let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(documentsPerCommit: 2, concurrentSessions: 2,
                                                                                             idlePollInterval: 1),
                                  clock: clock, jitter: ScriptedJitter())
        let updates = await service.statusUpdates()
        let collector = Task { () -> [SyncStatus] in
            var seen: [SyncStatus] = []
            for await s in updates {
                seen.append(s)
                if s.activity == .draining { draining.open() }
            }
            return seen
        }
        try await runService(service) { (try? store.backlogStats().count) == 0 }
        let order = fake.snapshot.order
        for s in 0..<3 {
            let record = try #require(try store.recordsDocument(sessionID: "S\(s)"))
            let mine = order.filter { record.gscopeData.contains($0) || $0 == record.name }
            #expect(mine == record.gscopeData + [record.name])
        }
        let seen = await collector.value
        #expect(seen.contains { $0.activity == .draining })
        #expect(seen.last?.activity == .stopped && seen.last?.backlogCount == 0 && seen.last?.sent == 30)
        #expect(seen.last?.lastSuccess != nil)
        #expect(seen.first?.backlogCount == 30 || seen.dropFirst().first?.backlogCount == 30)
    }

    @Test("a commit's documents are marked sent only once it is confirmed, and at the latest while the next commit is in flight; none is sent twice")
    func marksOverlapTheNextCommit() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try fillStore(store, sessions: 2, chunks: 7, size: 10)
        let sink = MarkWatchingSink(store: store)
        let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(documentsPerCommit: 3, concurrentSessions: 1,
                                                                                             idlePollInterval: 0.05))
        let sent = try await service.drain()
        let seen = sink.snapshot
        #expect(sent == 16)
        // Every document once, each session in seal order.
        #expect(seen.written.count == 16 && Set(seen.written).count == 16)
        for s in 0..<2 {
            let record = try #require(try store.recordsDocument(sessionID: "S\(s)"))
            #expect(seen.written.filter { record.gscopeData.contains($0) || $0 == record.name } == record.gscopeData + [record.name])
        }
        // While a commit was being written, its own documents were never marked sent yet ...
        #expect(seen.markedTooEarly.isEmpty, "marked before the upstream confirmed: \(seen.markedTooEarly)")
        // ... and the previous commit's marks landed while this one was in flight.
        #expect(seen.previousMarkedDuringCommit == seen.commits - 1, "\(seen.previousMarkedDuringCommit) of \(seen.commits - 1)")
        let stats = try store.backlogStats()
        #expect(stats.count == 0 && stats.inFlight == 0)
        let status = await service.status
        #expect(status.sent == 16 && status.backlogCount == 0)
    }

    @Test("the next batch is loaded and prepared while the commit before it is in flight, one batch ahead; a lost answer, a transient and a permanent failure keep order, confirm each document once and mark none early")
    func preparesOneBatchAhead() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try fillStore(store, sessions: 1, chunks: 14, size: 10)
        let record = try #require(try store.recordsDocument(sessionID: "S0"))
        let bad = record.gscopeData[12]
        // Commit 2 is stored but its answer lost; commit 4 fails outright; `bad` is refused.
        let sink = PipelineWatchingSink(store: store, tail: [record.gscopeData[13], record.name]) { n, docs in
            if docs.contains(where: { $0.name == bad }) { return (store: false, .permanent(reason: "INVALID_ARGUMENT: bad value")) }
            if n == 2 { return (store: true, .transient(reason: "connection reset", retryAfter: nil)) }
            if n == 4 { return (store: false, .transient(reason: "503", retryAfter: nil)) }
            return nil
        }
        let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(documentsPerCommit: 3, concurrentSessions: 1,
                                                                                             idlePollInterval: 1),
                                  clock: VirtualClock(), jitter: ScriptedJitter(fixed: 0))
        _ = try await service.drain()
        let seen = sink.snapshot
        // Each document confirmed once, in seal order, the refused one never.
        let expected = (record.gscopeData + [record.name]).filter { $0 != bad }
        #expect(seen.confirmed == expected)
        #expect(try store.deadLetters().map(\.documentName) == [bad])
        #expect(seen.markedTooEarly.isEmpty, "marked before the upstream confirmed: \(seen.markedTooEarly)")
        // Every commit after a clean one wrote documents prepared while that one was in flight,
        // and at most one batch, of at most one commit's documents, was prepared per commit.
        #expect(seen.preparedDuringCommit >= seen.commitsBeforeTail && seen.commitsBeforeTail >= 5,
                "\(seen.preparedDuringCommit) of \(seen.commitsBeforeTail) commits had their successor prepared while in flight")
        #expect(seen.unpreparedAfterCleanCommit.isEmpty, "written without being prepared: \(seen.unpreparedAfterCleanCommit)")
        #expect(seen.prepares <= seen.commits && seen.maxPreparedBatch <= 3,
                "\(seen.prepares) prepares of up to \(seen.maxPreparedBatch) documents for \(seen.commits) commits")
        let stats = try store.backlogStats()
        #expect(stats.count == 0 && stats.inFlight == 0 && stats.dead == 1)
        let status = await service.status
        #expect(status.sent == expected.count && status.backlogCount == 0 && status.deadLetters == 1 && status.retries == 2, "retries \(status.retries)")
    }

    @Test("cancellation abandons the commit in flight and puts its documents back")
    func cancellation() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try fillStore(store, sessions: 1, chunks: 3, size: 10)
        let service = SyncService(store: store, sink: HangingSink(), configuration: SyncConfiguration(idlePollInterval: 1))
        let task = Task { try await service.run() }
        #expect(await eventually { await service.status.inFlight > 0 })
        task.cancel()
        try await task.value
        let stats = try store.backlogStats()
        #expect(stats.inFlight == 0 && stats.count == 4)
        #expect(try store.outboxState(of: try #require(try store.recordsDocument(sessionID: "S0")?.gscopeData[0]))?.attempts == 0)
        #expect(await service.status.activity == .stopped)
    }
}

final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var v = false
    var value: Bool {
        get { lock.withLock { v } }
        set { lock.withLock { v = newValue } }
    }
}

/// Answers one 429 (Retry-After 1 s) to the `skip`-th attempt after `after`, else delegates.
final class ThrottleOnce: Sink, @unchecked Sendable {
    let name = "throttle"
    let inner: FakeSink
    let clock: any SyncClock
    let after: Double
    let skip: Int
    private let lock = NSLock()
    private var seen = 0
    private var at: Double?
    init(inner: FakeSink, clock: any SyncClock, after: Double, skip: Int) {
        self.inner = inner
        self.clock = clock
        self.after = after
        self.skip = skip
    }
    var throttledAt: Double? { lock.withLock { at } }
    func write(_ documents: [SinkDocument]) async throws(SinkError) {
        let t = clock.now()
        let throttle = lock.withLock { () -> Bool in
            guard t >= after, at == nil else { return false }
            seen += 1
            if seen == skip { at = t; return true }
            return false
        }
        if throttle { throw .rateLimited(reason: "HTTP 429 RESOURCE_EXHAUSTED", retryAfter: 1) }
        try await inner.write(documents)
    }
    func close() async {}
}

/// Never answers until cancelled.
struct HangingSink: Sink {
    let name = "hanging"
    func write(_ documents: [SinkDocument]) async throws(SinkError) {
        do { try await Task.sleep(for: .seconds(3600)) } catch { throw .transient(reason: "cancelled", retryAfter: nil) }
    }
    func close() async {}
}

/// Stores everything; during each commit checks the outbox: the commit's own documents
/// must not be marked sent yet, and the previous commit's mark must land while this one is
/// in flight (waited for up to 30 s).
final class MarkWatchingSink: Sink, @unchecked Sendable {
    let name = "mark-watching"
    let store: BufferStore
    private let lock = NSLock()
    private var written: [String] = []
    private var previous: [String] = []
    private var markedTooEarly: [String] = []
    private var previousMarkedDuringCommit = 0
    private var commits = 0

    init(store: BufferStore) { self.store = store }

    func write(_ documents: [SinkDocument]) async throws(SinkError) {
        let names = documents.map(\.name)
        let early = names.filter { (try? store.outboxState(of: $0))??.state == .sent }
        let before = lock.withLock { previous }
        let landed = await eventually(timeout: 30) {
            before.allSatisfy { (try? store.outboxState(of: $0))??.state == .sent }
        }
        lock.withLock {
            commits += 1
            markedTooEarly += early
            if landed, !before.isEmpty { previousMarkedDuringCommit += 1 }
            written += names
            previous = names
        }
    }

    func close() async {}

    var snapshot: (written: [String], markedTooEarly: [String], previousMarkedDuringCommit: Int, commits: Int) {
        lock.withLock { (written, markedTooEarly, previousMarkedDuringCommit, commits) }
    }
}

/// Records prepares and writes: whether, for each commit, the service prepared the batch
/// after it while it was in flight (a prepare since the previous commit ended, of documents
/// other than this commit's, since the service starts it just before the write), whether
/// each commit's documents had been prepared, whether any was marked sent before its own
/// commit was confirmed, and the order of confirmations. `behaviour(n, documents)` may fail
/// commit n, after storing it (a lost answer) or not.
final class PipelineWatchingSink: Sink, @unchecked Sendable {
    let name = "pipeline-watching"
    let store: BufferStore
    let behaviour: @Sendable (Int, [SinkDocument]) -> (store: Bool, SinkError)?
    /// Documents after which nothing is left to prepare.
    let tail: Set<String>
    private let lock = NSLock()
    private var commits = 0
    private var lastWasClean = false
    private var preparedAhead: Set<String> = []
    private var preparedSinceLastCommit: [Set<String>] = []
    private var confirmed: [String] = []
    private var markedTooEarly: [String] = []
    private var preparedDuringCommit = 0
    private var unpreparedAfterCleanCommit: [String] = []
    private var prepares = 0
    private var maxPreparedBatch = 0
    private var commitsBeforeTail = 0

    init(store: BufferStore, tail: Set<String>, behaviour: @escaping @Sendable (Int, [SinkDocument]) -> (store: Bool, SinkError)?) {
        self.store = store
        self.tail = tail
        self.behaviour = behaviour
    }

    func prepare(_ documents: [SinkDocument]) async {
        lock.withLock {
            prepares += 1
            preparedSinceLastCommit.append(Set(documents.map(\.name)))
            preparedAhead.formUnion(documents.map(\.name))
            maxPreparedBatch = max(maxPreparedBatch, documents.count)
        }
    }

    func write(_ documents: [SinkDocument]) async throws(SinkError) {
        let names = documents.map(\.name)
        let early = names.filter { (try? store.outboxState(of: $0))??.state == .sent }
        let n = lock.withLock { () -> Int in
            markedTooEarly += early
            // Only realtime_data documents are prepared ahead (records documents are small).
            let chunks = documents.compactMap { if case let .realtimeData(d) = $0 { d.name } else { nil } }
            if lastWasClean, documents.count > 1 { unpreparedAfterCleanCommit += chunks.filter { !preparedAhead.contains($0) } }
            preparedAhead.subtract(names)
            commits += 1
            return commits - 1
        }
        // In flight until the service prepared the next batch (a loaded machine may take a
        // while); the last commits have nothing after them to prepare, and a batch retried
        // one document at a time prepared its successor on its first attempt.
        let mine = Set(names)
        let successorPrepared: @Sendable () -> Bool = { [self] in
            lock.withLock { preparedSinceLastCommit.contains { $0.isDisjoint(with: mine) } }
        }
        if tail.isDisjoint(with: names), documents.count > 1 {
            lock.withLock { commitsBeforeTail += 1 }
            _ = await eventually(timeout: 30) { successorPrepared() }
        }
        let outcome = behaviour(n, documents)
        let successorReady = successorPrepared()
        lock.withLock {
            if successorReady { preparedDuringCommit += 1 }
            preparedSinceLastCommit = []
            lastWasClean = outcome == nil
            if outcome == nil { confirmed += names }
        }
        if let outcome { throw outcome.1 }
    }

    func close() async {}

    var snapshot: (confirmed: [String], markedTooEarly: [String], preparedDuringCommit: Int, unpreparedAfterCleanCommit: [String],
                   prepares: Int, commits: Int, maxPreparedBatch: Int, commitsBeforeTail: Int) {
        lock.withLock { (confirmed, markedTooEarly, preparedDuringCommit, unpreparedAfterCleanCommit, prepares, commits, maxPreparedBatch,
                         commitsBeforeTail) }
    }
}
