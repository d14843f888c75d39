import Basics
import Buffer
import Foundation
import Logging
import Recording

/// Drains the buffer's outbox into a sink in the background.
///
/// * One commit in flight per session, documents in seq order, so upstream order matches
///   seal order; sessions go in parallel up to `concurrentSessions`.
/// * Transient failures (`SinkError.transient`/`.rateLimited`) put the documents back and
///   switch to backoff: full-jitter exponential waits (honouring Retry-After), and while the
///   upstream is down a single probe commit instead of every session retrying.
/// * The drain is paced by `DrainRateLimiter`; a rate-limited answer halves the pace.
/// * Permanent failures dead-letter the document with the reason; later documents go on.
/// * A document is marked sent only after the upstream confirmed it; that mark (a
///   FULL-synchronous write) is written while the next commit is in flight, not between
///   the two, and the service never ends a drain, waits out a backoff or goes idle with a
///   mark still unwritten.
///
/// Recording never waits for this: the service only reads sealed chunks from the store.
public actor SyncService {
    public let store: BufferStore
    public let sink: any Sink
    public let configuration: SyncConfiguration
    private let clock: any SyncClock
    private let jitter: any JitterSource
    private let logger: Logger
    private var limiter: DrainRateLimiter
    private var current: SyncStatus
    private var retryAt: Double?
    private var subscribers: [UUID: AsyncStream<SyncStatus>.Continuation] = [:]

    /// A service draining `store` into `sink`. Clock and jitter are injectable for tests.
    public init(store: BufferStore, sink: any Sink, configuration: SyncConfiguration = SyncConfiguration(),
                clock: any SyncClock = SystemSyncClock(), jitter: any JitterSource = SystemJitter(),
                logger: Logger = Logger(label: "mwgate.uplink")) {
        self.store = store
        self.sink = sink
        self.configuration = configuration
        self.clock = clock
        self.jitter = jitter
        self.logger = logger
        limiter = DrainRateLimiter(commitsPerSecond: configuration.maxCommitsPerSecond,
                                   bytesPerSecond: configuration.maxBytesPerSecond,
                                   recoveryInterval: configuration.rateRecoveryInterval)
        current = SyncStatus(sink: sink.name)
        current.commitsPerSecondCap = limiter.currentCommitsPerSecond
        current.bytesPerSecondCap = limiter.currentBytesPerSecond
    }

    /// The latest status.
    public var status: SyncStatus { current }

    /// Status changes from now on (the current status first). Ends when the caller stops
    /// iterating or the service's `run` returns.
    public func statusUpdates() -> AsyncStream<SyncStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncStatus.self, bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        subscribers[id] = continuation
        continuation.yield(current)
        continuation.onTermination = { [weak self] _ in
            Task { await self?.unsubscribe(id) }
        }
        return stream
    }

    private func unsubscribe(_ id: UUID) { subscribers[id] = nil }

    /// Puts dead-lettered documents back in the queue (all sessions when nil); returns how many.
    @discardableResult
    public func requeueDead(sessionID: String? = nil) throws -> Int {
        let n = try store.requeueDead(sessionID: sessionID)
        if n > 0 { logger.info("dead letters requeued", metadata: ["count": "\(n)"]) }
        refreshBacklog()
        publish()
        return n
    }

    /// Runs until the task is cancelled. A commit in progress at cancellation is abandoned:
    /// its documents go back to pending (their names make the replay harmless).
    public func run() async throws {
        do { try store.releaseInFlight() } catch { logger.error("cannot reset in-flight items: \(error)") }
        current.activity = .idle
        refreshBacklog()
        publish()
        logger.info("sync started", metadata: ["sink": "\(sink.name)"])
        defer {
            current.activity = .stopped
            current.nextAttemptIn = nil
            publish()
            for c in subscribers.values { c.finish() }
            subscribers = [:]
        }
        while !Task.isCancelled {
            let worked: Bool
            do { worked = try await step() } catch is CancellationError { break }
            if !worked {
                do { try await waitForWork() } catch { break }
            }
        }
        settleMarks()
        logger.info("sync stopped", metadata: ["sent": "\(current.sent)"])
    }

    /// Waits, with nothing to send, until the buffer rings its outbox doorbell or, as a safety
    /// net, `idlePollInterval` passes: an idle gateway wakes no thread for the uploader.
    private func waitForWork() async throws {
        let deadline = clock.now() + configuration.idlePollInterval
        let (clock, doorbell) = (self.clock, store.outboxDoorbell)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await doorbell.wait() }
            group.addTask { try await clock.sleep(until: deadline) }
            defer { group.cancelAll() }
            try await group.next()
        }
        try Task.checkCancellation()
    }

    /// Sends until the outbox has nothing pending (or a failure starts a backoff that
    /// `untilBackoff` says not to wait out). Returns documents sent. For `mwctl` one-shot use
    /// and benchmarks.
    @discardableResult
    public func drain() async throws -> Int {
        try store.releaseInFlight()
        let before = current.sent
        do {
            while try await step() {}
        } catch {
            settleMarks()
            throw error
        }
        settleMarks()
        return current.sent - before
    }

    /// One round: wait out a backoff, take work, send it. False when there was nothing to do.
    private func step() async throws -> Bool {
        if retryAt != nil { settleMarks() }
        if let retryAt {
            current.activity = .backingOff
            current.nextAttemptIn = max(0, retryAt - clock.now())
            publish()
            try await clock.sleep(until: retryAt)
        }
        let probing = retryAt != nil
        var items: [OutboxItem]
        do {
            // Read only: a round's documents are in flight until the round ends, and rounds
            // do not overlap, so the outbox needs no in-flight marks. The previous round's
            // documents may still read as pending while their mark is being written: they
            // are each session's first pending items, so reading that many more per session
            // and leaving them out gives the next ones.
            let marking = confirmedUnmarked.count
            items = probing ? try store.uploadCandidates(limit: 1, perSession: 1)
                : try store.uploadCandidates(limit: (configuration.documentsPerCommit + marking) * configuration.concurrentSessions,
                                             perSession: configuration.documentsPerCommit + marking)
            items.removeAll { confirmedUnmarked.contains($0.id) }
        } catch {
            logger.error("cannot read the outbox: \(error)")
            throw CancellationError()
        }
        // Prefetched documents not taken this round are dropped (their turn may be far off).
        let taken = Set(items.map(\.id))
        prefetchedDocuments = prefetchedDocuments.filter { taken.contains($0.key) }
        guard !items.isEmpty else {
            settleMarks()
            if !probing {
                current.activity = .idle
                current.nextAttemptIn = nil
            }
            refreshBacklog()
            publish()
            return false
        }
        var groups: [[OutboxItem]] = []
        for item in items {
            if let i = groups.firstIndex(where: { $0[0].sessionID == item.sessionID }) { groups[i].append(item) } else { groups.append([item]) }
        }
        groups = groups.prefix(configuration.concurrentSessions).map { Array($0.prefix(configuration.documentsPerCommit)) }
        let takenCount = groups.reduce(0) { $0 + $1.count }
        current.inFlight = takenCount
        current.activity = .draining
        current.nextAttemptIn = nil
        publish()

        // Each group's start time is booked now, in order, so the pace holds across sessions.
        var plans: [(items: [OutboxItem], startAt: Double)] = []
        for g in groups {
            plans.append((g, limiter.reserve(bytes: g.reduce(0) { $0 + $1.bytes }, now: clock.now())))
        }
        // The previous round's marks are written while this round's commit is in flight, by
        // a child of this round: cancelling the service cannot leave one behind.
        let marks = takeBookedMarks()
        async let marked: Void = Self.writeMarks(marks, store: store, logger: logger)
        let outcomes: [Outcome]
        if plans.count == 1 {
            // One session (the usual backlog): sent from here, without a child task whose
            // start and end would each cost a thread hop between two commits.
            outcomes = [await send(plans[0].items, startAt: plans[0].startAt)]
        } else {
            outcomes = await withTaskGroup(of: (Int, Outcome).self) { group in
                for (i, plan) in plans.enumerated() {
                    group.addTask { (i, await self.send(plan.items, startAt: plan.startAt)) }
                }
                var results: [(Int, Outcome)] = []
                for await r in group { results.append(r) }
                return results.sorted { $0.0 < $1.0 }.map(\.1)
            }
        }
        await marked
        marksWritten(marks)
        var cancelled = false
        var clean = true
        var confirmed: [OutboxItem] = []
        for outcome in outcomes {
            switch outcome {
            case .cancelled: cancelled = true
            case .done(let sent, let failure, let toMark):
                confirmed += toMark
                if sent > 0 { recordSuccess(sent) }
                if let failure { recordFailure(failure) }
                if failure != nil || sent != toMark.count { clean = false }
            }
        }
        bookMarks(confirmed)
        if clean, !cancelled, confirmed.count == takenCount, clock.now() - lastBacklogRefresh < Self.backlogRefreshInterval {
            // Every document taken was stored: the backlog shrank by exactly these (its full
            // query, between two commits, waits for the next refresh).
            current.backlogCount = max(0, current.backlogCount - confirmed.count)
            current.backlogBytes = max(0, current.backlogBytes - Int64(confirmed.reduce(0) { $0 + $1.bytes }))
            current.inFlight = 0
        } else {
            refreshBacklog()
        }
        publish()
        if cancelled { throw CancellationError() }
        return true
    }

    enum Outcome: Sendable {
        /// `sent` documents stored; `failure` set when the rest hit a transient error;
        /// `toMark`: stored documents whose `sent` mark is still to be written.
        case done(sent: Int, failure: SinkError?, toMark: [OutboxItem] = [])
        case cancelled
    }

    /// Documents the upstream confirmed whose `sent` mark is not written yet. They are left
    /// out of the outbox reads until it is, so none is sent twice.
    private var confirmedUnmarked: Set<Int64> = []
    /// The part of `confirmedUnmarked` no round has started to mark yet, in confirmation order.
    private var marksToWrite: [Int64] = []

    /// Books the `sent` marks of `items`: the next round writes them beside its commit
    /// (in `step`), or `settleMarks` before the service goes idle, backs off or ends.
    /// If the process dies before a mark lands, the documents go again after restart, and
    /// their fixed names make that harmless.
    private func bookMarks(_ items: [OutboxItem]) {
        confirmedUnmarked.formUnion(items.map(\.id))
        marksToWrite += items.map(\.id)
    }

    /// Hands the booked marks to a round, which writes them while its commit is in flight.
    private func takeBookedMarks() -> [Int64] {
        defer { marksToWrite = [] }
        return marksToWrite
    }

    /// Records that a round's marks are written (or failed: logged, harmless).
    private func marksWritten(_ ids: [Int64]) {
        confirmedUnmarked.subtract(ids)
    }

    /// Writes `sent` marks; a failure is logged (the documents are stored upstream: they go
    /// again after restart, harmlessly).
    private nonisolated static func writeMarks(_ ids: [Int64], store: BufferStore, logger: Logger) {
        guard !ids.isEmpty else { return }
        do { try store.markSent(ids) } catch {
            logger.error("cannot mark documents sent: \(error)")
        }
    }

    /// Writes every booked mark now. A round of a drain running beside `run` (`mwctl sync
    /// now`) may still be writing marks it took; their documents stay out of the outbox reads
    /// until it has.
    private func settleMarks() {
        let ids = takeBookedMarks()
        Self.writeMarks(ids, store: store, logger: logger)
        marksWritten(ids)
    }

    /// Sends one session's documents in order; marks each result in the store.
    private func send(_ items: [OutboxItem], startAt: Double) async -> Outcome {
        do { try await clock.sleep(until: startAt) } catch {
            _ = try? store.releaseInFlight(items.map(\.id))
            return .cancelled
        }
        var documents: [(OutboxItem, SinkDocument)] = []
        for item in items {
            do {
                documents.append((item, try load(item)))
            } catch {
                deadLetter(item, reason: "cannot load \(item.kind.rawValue)/\(item.documentName): \(error)")
            }
        }
        guard !documents.isEmpty else { return .done(sent: 0, failure: nil) }
        // While this commit is in flight, the session's next documents are read, decoded and
        // encoded; the next round takes them from here instead of reading them again.
        async let prefetched = Self.prepareNext(store: store, sink: sink, after: items[items.count - 1],
                                                count: configuration.documentsPerCommit)
        let outcome = await writeAndSettle(documents)
        prefetchedDocuments.merge(await prefetched) { $1 }
        return outcome
    }

    private func writeAndSettle(_ documents: [(OutboxItem, SinkDocument)]) async -> Outcome {
        do {
            try await sink.write(documents.map(\.1))
            return .done(sent: documents.count, failure: nil, toMark: documents.map(\.0))
        } catch {
            if Task.isCancelled {
                _ = try? store.releaseInFlight(documents.map(\.0.id))
                return .cancelled
            }
            if case .permanent = error, documents.count > 1 {
                // Find the culprit: one at a time, in order; the others go through.
                return await sendOneByOne(documents)
            }
            return settle(documents.map(\.0), error)
        }
    }

    /// The next documents of a session, loaded (checksum verified, decoded) and handed to
    /// the sink to encode ahead; keyed by outbox handle. A sealed chunk never changes, so a
    /// document loaded here is the one a later load would give.
    private nonisolated static func prepareNext(store: BufferStore, sink: any Sink, after item: OutboxItem,
                                                count: Int) async -> [Int64: SinkDocument] {
        guard let next = try? store.pendingItems(sessionID: item.sessionID, afterSeq: item.seq, limit: count) else { return [:] }
        var documents: [Int64: SinkDocument] = [:]
        var ordered: [SinkDocument] = []
        for n in next where n.kind == .realtimeData {
            if let doc = try? store.realtimeDocument(name: n.documentName) {
                documents[n.id] = .realtimeData(doc)
                ordered.append(.realtimeData(doc))
            }
        }
        if !ordered.isEmpty { await sink.prepare(ordered) }
        return documents
    }

    /// Documents `prepareNext` loaded for the next round (realtime_data only).
    private var prefetchedDocuments: [Int64: SinkDocument] = [:]

    private func sendOneByOne(_ documents: [(OutboxItem, SinkDocument)]) async -> Outcome {
        var sent = 0
        for (index, (item, doc)) in documents.enumerated() {
            do {
                try await sink.write([doc])
                markSent([item])
                sent += 1
            } catch {
                if Task.isCancelled {
                    _ = try? store.releaseInFlight(documents[index...].map(\.0.id))
                    return .cancelled
                }
                if case .permanent = error {
                    deadLetter(item, reason: error.reason)
                    continue
                }
                let rest = documents[index...].map(\.0)
                return .done(sent: sent, failure: settleReturningFailure(rest, error))
            }
        }
        return .done(sent: sent, failure: nil)
    }

    private func settle(_ items: [OutboxItem], _ error: SinkError) -> Outcome {
        .done(sent: 0, failure: settleReturningFailure(items, error))
    }

    /// Permanent: dead letters (no failure to back off from). Transient: back to pending.
    private func settleReturningFailure(_ items: [OutboxItem], _ error: SinkError) -> SinkError? {
        if case .permanent = error {
            for item in items { deadLetter(item, reason: error.reason) }
            return nil
        }
        for item in items {
            do { try store.markFailed(item.id, permanent: false, reason: error.reason) } catch {
                logger.error("cannot record a failed upload: \(error)")
            }
        }
        return error
    }

    private func load(_ item: OutboxItem) throws -> SinkDocument {
        switch item.kind {
        case .realtimeData:
            if let ready = prefetchedDocuments.removeValue(forKey: item.id), ready.name == item.documentName { return ready }
            guard let doc = try store.realtimeDocument(name: item.documentName) else {
                throw LoadError(description: "chunk not in the buffer")
            }
            return .realtimeData(doc)
        case .records:
            guard let doc = try store.recordsDocument(sessionID: item.sessionID) else {
                throw LoadError(description: "session has no submitted survey")
            }
            guard doc.name == item.documentName else {
                throw LoadError(description: "session's records document is \(doc.name)")
            }
            return .records(doc)
        }
    }

    struct LoadError: Error, CustomStringConvertible { var description: String }

    private func markSent(_ items: [OutboxItem]) {
        Self.writeMarks(items.map(\.id), store: store, logger: logger)
    }

    private func deadLetter(_ item: OutboxItem, reason: String) {
        logger.error("dead letter", metadata: ["document": "\(item.kind.rawValue)/\(item.documentName)", "reason": "\(reason)"])
        do { try store.markFailed(item.id, permanent: true, reason: reason) } catch {
            logger.error("cannot dead-letter \(item.documentName): \(error)")
        }
    }

    /// Keys in the buffer's `sync_state` read by `mwctl sync status`.
    public enum StateKeys {
        public static let lastSuccess = "uplink.last_success"
        public static let lastError = "uplink.last_error"
        public static let lastErrorAt = "uplink.last_error_at"
    }

    private var lastPersistedSuccess = -Double.infinity

    private func recordSuccess(_ sent: Int) {
        current.sent += sent
        let now = Date()
        current.lastSuccess = now
        // Throttled: one extra FULL-synchronous write per commit is not worth it.
        if clock.now() - lastPersistedSuccess >= 5 {
            lastPersistedSuccess = clock.now()
            try? store.setSyncState(StateKeys.lastSuccess, ISO8601Timestamp.string(from: now))
        }
        if retryAt != nil { logger.info("upstream reachable again; draining the backlog", metadata: ["sink": "\(sink.name)"]) }
        retryAt = nil
        current.consecutiveFailures = 0
    }

    private func recordFailure(_ error: SinkError) {
        let now = clock.now()
        if case .rateLimited = error {
            limiter.slowDown(now: now)
            current.commitsPerSecondCap = limiter.currentCommitsPerSecond
            current.bytesPerSecondCap = limiter.currentBytesPerSecond
        }
        let wait = configuration.backoff.delay(attempt: current.consecutiveFailures, unit: jitter.next(), retryAfter: error.retryAfter)
        current.consecutiveFailures += 1
        current.retries += 1
        current.lastError = error.description
        current.lastErrorAt = Date()
        try? store.setSyncState(StateKeys.lastError, error.description)
        try? store.setSyncState(StateKeys.lastErrorAt, ISO8601Timestamp.string(from: current.lastErrorAt ?? Date()))
        retryAt = now + wait
        logger.warning("upload failed; backing off", metadata: [
            "sink": "\(sink.name)", "error": "\(error.description)", "wait_s": "\(FixedDecimal.string(wait, places: 1))",
            "failures": "\(current.consecutiveFailures)",
        ])
    }

    /// While a drain goes well, the backlog figures are counted down per commit and read
    /// from the store (an aggregate query) at most this often, seconds.
    static let backlogRefreshInterval = 1.0
    private var lastBacklogRefresh = -Double.infinity

    private func refreshBacklog() {
        lastBacklogRefresh = clock.now()
        guard let stats = try? store.backlogStats() else { return }
        current.backlogCount = stats.count
        current.backlogBytes = stats.bytes
        current.oldestUnsentAge = stats.oldestUnsentAge
        current.inFlight = 0
        current.deadLetters = stats.dead
        current.commitsPerSecondCap = limiter.currentCommitsPerSecond
        current.bytesPerSecondCap = limiter.currentBytesPerSecond
    }

    private func publish() {
        for c in subscribers.values { c.yield(current) }
    }
}
