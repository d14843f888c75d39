import Basics
import Buffer
import Logging
import Recording

/// Drains the buffer's outbox into a sink in the background.
///
/// * One commit in flight per session, documents in seq order, so upstream order matches
///   seal order; sessions go in parallel up to `concurrentSessions` (``CommitSender``).
/// * Transient failures (`SinkError.transient`/`.rateLimited`) put the documents back and
///   switch to backoff: full-jitter exponential waits (honouring Retry-After), and while the
///   upstream is down a single probe commit instead of every session retrying.
/// * The drain is paced by `DrainRateLimiter`; a rate-limited answer halves the pace
///   (``SyncProgress``).
/// * Permanent failures dead-letter the document with the reason; later documents go on.
/// * A document is marked sent only after the upstream confirmed it; that mark (a
///   FULL-synchronous write) is written while the next commit is in flight, not between
///   the two, and the service never ends a drain, waits out a backoff or goes idle with a
///   mark still unwritten (``SentMarks``).
///
/// Recording never waits for this: the service only reads sealed chunks from the store. Its
/// synchronous SQLite runs on its own thread (``SyncThread``), never on the cooperative pool.
public actor SyncService {
    public let store: BufferStore
    public let sink: any Sink
    public let configuration: SyncConfiguration
    private let clock: any SyncClock
    private let logger: Logger
    private let sender: CommitSender
    private var progress: SyncProgress
    private var marks = SentMarks()
    /// Documents loaded for the next round while this one's commits were in flight.
    private var prepared: [Int64: SinkDocument] = [:]
    private let readers = Broadcast<SyncStatus>(keeping: 16)

    public nonisolated var unownedExecutor: UnownedSerialExecutor { SyncThread.shared.asUnownedSerialExecutor() }

    /// A service draining `store` into `sink`. Clock and jitter are injectable for tests.
    public init(store: BufferStore, sink: any Sink, configuration: SyncConfiguration = SyncConfiguration(),
                clock: any SyncClock = SystemSyncClock(), jitter: any JitterSource = SystemJitter(),
                logger: Logger = Logger(label: "mwgate.uplink")) {
        self.store = store
        self.sink = sink
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        sender = CommitSender(store: store, sink: sink, clock: clock, documentsPerCommit: configuration.documentsPerCommit, logger: logger)
        progress = SyncProgress(sinkName: sink.name, store: store, configuration: configuration, clock: clock, jitter: jitter, logger: logger)
    }

    /// The latest status.
    public var status: SyncStatus { progress.status }

    /// Status changes from now on (the current status first). Ends when the caller stops
    /// iterating or the service's `run` returns.
    public func statusUpdates() -> AsyncStream<SyncStatus> {
        readers.subscribe(current: progress.status)
    }

    /// Puts dead-lettered documents back in the queue (all sessions when nil); returns how many.
    @discardableResult
    public func requeueDead(sessionID: String? = nil) throws -> Int {
        let n = try store.requeueDead(sessionID: sessionID)
        if n > 0 { logger.info("dead letters requeued", metadata: ["count": "\(n)"]) }
        progress.refreshBacklog()
        publish()
        return n
    }

    /// Runs until the task is cancelled. A commit in progress at cancellation is abandoned:
    /// its documents go back to pending (their names make the replay harmless).
    public func run() async throws {
        try await withTaskExecutorPreference(SyncThread.shared) {
            do { try store.releaseInFlight() } catch { logger.error("cannot reset in-flight items: \(error)") }
            progress.status.activity = .idle
            progress.refreshBacklog()
            publish()
            logger.info("sync started", metadata: ["sink": "\(sink.name)"])
            defer {
                progress.status.activity = .stopped
                progress.status.nextAttemptIn = nil
                publish()
                readers.finishAll()
            }
            while !Task.isCancelled {
                let worked: Bool
                do { worked = try await step() } catch is CancellationError { break }
                if !worked {
                    do { try await waitForWork() } catch { break }
                }
            }
            settleMarks()
            logger.info("sync stopped", metadata: ["sent": "\(progress.status.sent)"])
        }
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
        try await withTaskExecutorPreference(SyncThread.shared) {
            try store.releaseInFlight()
            let before = progress.status.sent
            do {
                while try await step() {}
            } catch {
                settleMarks()
                throw error
            }
            settleMarks()
            return progress.status.sent - before
        }
    }

    /// One round: wait out a backoff, take work, send it. False when there was nothing to do.
    private func step() async throws -> Bool {
        if progress.retryAt != nil { settleMarks() }
        if let retryAt = progress.retryAt {
            progress.status.activity = .backingOff
            progress.status.nextAttemptIn = max(0, retryAt - clock.now())
            publish()
            try await clock.sleep(until: retryAt)
        }
        let probing = progress.retryAt != nil
        let items = try takeRound(probing: probing)
        guard !items.isEmpty else {
            settleMarks()
            if !probing {
                progress.status.activity = .idle
                progress.status.nextAttemptIn = nil
            }
            progress.refreshBacklog()
            publish()
            return false
        }
        var groups: [[OutboxItem]] = []
        for item in items {
            if let i = groups.firstIndex(where: { $0[0].sessionID == item.sessionID }) { groups[i].append(item) } else { groups.append([item]) }
        }
        groups = groups.prefix(configuration.concurrentSessions).map { Array($0.prefix(configuration.documentsPerCommit)) }
        let takenCount = groups.reduce(0) { $0 + $1.count }
        progress.status.inFlight = takenCount
        progress.status.activity = .draining
        progress.status.nextAttemptIn = nil
        publish()

        // Each group's start time is booked now, in order, so the pace holds across sessions.
        let plans = groups.map { (items: $0, startAt: progress.reserve(bytes: $0.reduce(0) { $0 + $1.bytes })) }
        // The previous round's marks are written while this round's commit is in flight, by
        // a child of this round: cancelling the service cannot leave one behind.
        let booked = marks.take()
        let (store, logger, sender, prepared) = (store, logger, sender, prepared)
        async let marked: Void = SentMarks.write(booked, store: store, logger: logger)
        let results: [(CommitSender.Outcome, next: [Int64: SinkDocument])]
        if plans.count == 1 {
            // One session (the usual backlog): sent from here, without a child task whose
            // start and end would each cost a thread hop between two commits.
            results = [await sender.send(plans[0].items, startAt: plans[0].startAt, prepared: prepared)]
        } else {
            results = await withTaskGroup(of: (Int, (CommitSender.Outcome, next: [Int64: SinkDocument])).self) { group in
                for (i, plan) in plans.enumerated() {
                    group.addTask { (i, await sender.send(plan.items, startAt: plan.startAt, prepared: prepared)) }
                }
                var results: [(Int, (CommitSender.Outcome, next: [Int64: SinkDocument]))] = []
                for await r in group { results.append(r) }
                return results.sorted { $0.0 < $1.0 }.map(\.1)
            }
        }
        await marked
        marks.written(booked)
        // Prepared documents not taken by the next round are dropped (their turn may be far off).
        self.prepared = results.reduce(into: [:]) { $0.merge($1.next) { $1 } }
        settle(results.map(\.0), takenCount: takenCount)
        publish()
        if results.contains(where: { if case .cancelled = $0.0 { true } else { false } }) { throw CancellationError() }
        return true
    }

    /// The round's documents: the first pending ones of up to `concurrentSessions` sessions
    /// (one document of one session while probing a failed upstream).
    private func takeRound(probing: Bool) throws -> [OutboxItem] {
        do {
            // Read only: a round's documents are in flight until the round ends, and rounds
            // do not overlap, so the outbox needs no in-flight marks. The previous round's
            // documents may still read as pending while their mark is being written: they
            // are each session's first pending items, so reading that many more per session
            // and leaving them out gives the next ones.
            let marking = marks.unmarkedCount
            var items = probing ? try store.uploadCandidates(limit: 1, perSession: 1)
                : try store.uploadCandidates(limit: (configuration.documentsPerCommit + marking) * configuration.concurrentSessions,
                                             perSession: configuration.documentsPerCommit + marking)
            items.removeAll { marks.isUnmarked($0.id) }
            return items
        } catch {
            logger.error("cannot read the outbox: \(error)")
            throw CancellationError()
        }
    }

    /// Books what the round's commits reported: their confirmed documents' marks, successes
    /// and failures, and the backlog.
    private func settle(_ outcomes: [CommitSender.Outcome], takenCount: Int) {
        var cancelled = false
        var clean = true
        var confirmed: [OutboxItem] = []
        for outcome in outcomes {
            switch outcome {
            case .cancelled: cancelled = true
            case .done(let sent, let failure, let toMark):
                confirmed += toMark
                if sent > 0 { progress.recordSuccess(sent) }
                if let failure { progress.recordFailure(failure) }
                if failure != nil || sent != toMark.count { clean = false }
            }
        }
        marks.book(confirmed)
        if clean, !cancelled, confirmed.count == takenCount {
            // Every document taken was stored (the backlog's full query, between two commits,
            // waits for the next refresh).
            progress.countDown(confirmed)
        } else {
            progress.refreshBacklog()
        }
    }

    /// Writes every booked mark now. A round of a drain running beside `run` (`mwctl sync
    /// now`) may still be writing marks it took; their documents stay out of the outbox reads
    /// until it has.
    private func settleMarks() {
        let ids = marks.take()
        SentMarks.write(ids, store: store, logger: logger)
        marks.written(ids)
    }

    /// Keys in the buffer's `sync_state` read by `mwctl sync status`.
    public enum StateKeys {
        public static let lastSuccess = "uplink.last_success"
        public static let lastError = "uplink.last_error"
        public static let lastErrorAt = "uplink.last_error_at"
    }

    private func publish() {
        readers.publish(progress.status)
    }
}
