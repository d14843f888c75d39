import Basics
import Buffer
import Foundation
import Logging

/// The sync service's figures and pace: the status it publishes, the drain-rate limiter,
/// when the next attempt may go after a failure (full-jitter backoff), and the last
/// success and error kept in the buffer's `sync_state` for `mwctl sync status`.
struct SyncProgress {
    /// What the service reports; the service sets its activity and in-flight count.
    var status: SyncStatus
    /// When the next attempt may go; nil while the upstream answers.
    private(set) var retryAt: Double?
    private var limiter: DrainRateLimiter
    private let store: BufferStore
    private let configuration: SyncConfiguration
    private let clock: any SyncClock
    private let jitter: any JitterSource
    private let logger: Logger
    private var lastPersistedSuccess = -Double.infinity
    private var lastBacklogRefresh = -Double.infinity

    /// While a drain goes well, the backlog figures are counted down per commit and read
    /// from the store (an aggregate query) at most this often, seconds.
    static let backlogRefreshInterval = 1.0

    init(sinkName: String, store: BufferStore, configuration: SyncConfiguration, clock: any SyncClock, jitter: any JitterSource,
         logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.clock = clock
        self.jitter = jitter
        self.logger = logger
        limiter = DrainRateLimiter(commitsPerSecond: configuration.maxCommitsPerSecond,
                                   bytesPerSecond: configuration.maxBytesPerSecond,
                                   recoveryInterval: configuration.rateRecoveryInterval)
        status = SyncStatus(sink: sinkName)
        status.commitsPerSecondCap = limiter.currentCommitsPerSecond
        status.bytesPerSecondCap = limiter.currentBytesPerSecond
    }

    /// Books the start time of a commit of `bytes` in the drain's pace.
    mutating func reserve(bytes: Int) -> Double {
        limiter.reserve(bytes: bytes, now: clock.now())
    }

    /// A commit stored `sent` documents: the upstream answers again.
    mutating func recordSuccess(_ sent: Int) {
        status.sent += sent
        let now = Date()
        status.lastSuccess = now
        // Throttled: one extra FULL-synchronous write per commit is not worth it.
        if clock.now() - lastPersistedSuccess >= 5 {
            lastPersistedSuccess = clock.now()
            try? store.setSyncState(SyncService.StateKeys.lastSuccess, ISO8601Timestamp.string(from: now))
        }
        if retryAt != nil { logger.info("upstream reachable again; draining the backlog", metadata: ["sink": "\(status.sink)"]) }
        retryAt = nil
        status.consecutiveFailures = 0
    }

    /// A commit failed transiently: back off (and slow the pace when rate limited).
    mutating func recordFailure(_ error: SinkError) {
        let now = clock.now()
        if case .rateLimited = error {
            limiter.slowDown(now: now)
            status.commitsPerSecondCap = limiter.currentCommitsPerSecond
            status.bytesPerSecondCap = limiter.currentBytesPerSecond
        }
        let wait = configuration.backoff.delay(attempt: status.consecutiveFailures, unit: jitter.next(), retryAfter: error.retryAfter)
        status.consecutiveFailures += 1
        status.retries += 1
        status.lastError = error.description
        status.lastErrorAt = Date()
        try? store.setSyncState(SyncService.StateKeys.lastError, error.description)
        try? store.setSyncState(SyncService.StateKeys.lastErrorAt, ISO8601Timestamp.string(from: status.lastErrorAt ?? Date()))
        retryAt = now + wait
        logger.warning("upload failed; backing off", metadata: [
            "sink": "\(status.sink)", "error": "\(error.description)", "wait_s": "\(FixedDecimal.string(wait, places: 1))",
            "failures": "\(status.consecutiveFailures)",
        ])
    }

    /// A round stored every document it took (`confirmed`): the backlog shrank by exactly
    /// these. Counted down while the last full read is recent; read again otherwise.
    mutating func countDown(_ confirmed: [OutboxItem]) {
        guard clock.now() - lastBacklogRefresh < Self.backlogRefreshInterval else { return refreshBacklog() }
        status.backlogCount = max(0, status.backlogCount - confirmed.count)
        status.backlogBytes = max(0, status.backlogBytes - Int64(confirmed.reduce(0) { $0 + $1.bytes }))
        status.inFlight = 0
    }

    /// Reads the backlog figures from the store.
    mutating func refreshBacklog() {
        lastBacklogRefresh = clock.now()
        guard let stats = try? store.backlogStats() else { return }
        status.backlogCount = stats.count
        status.backlogBytes = stats.bytes
        status.oldestUnsentAge = stats.oldestUnsentAge
        status.inFlight = 0
        status.deadLetters = stats.dead
        status.commitsPerSecondCap = limiter.currentCommitsPerSecond
        status.bytesPerSecondCap = limiter.currentBytesPerSecond
    }
}
