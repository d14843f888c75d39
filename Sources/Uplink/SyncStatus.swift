import Basics
import Foundation

/// What the sync service is doing, for the control API, `mwctl sync status` and logs.
public struct SyncStatus: Sendable, Hashable, Codable {
    /// Activity.
    public enum Activity: String, Sendable, Hashable, Codable {
        /// Nothing to send.
        case idle
        /// Sending the backlog.
        case draining
        /// The upstream failed; waiting to send one probe.
        case backingOff = "backing_off"
        /// The service is not running.
        case stopped
    }

    public var activity: Activity
    /// Sink name.
    public var sink: String
    /// Documents pending or in flight.
    public var backlogCount: Int
    /// Their payload bytes.
    public var backlogBytes: Int64
    /// Seconds since the oldest unsent document was queued.
    public var oldestUnsentAge: Double?
    /// Documents in flight.
    public var inFlight: Int
    /// Documents dead-lettered.
    public var deadLetters: Int
    /// Last time a commit succeeded.
    public var lastSuccess: Date?
    /// Last failure's reason (never contains credentials).
    public var lastError: String?
    /// When it happened.
    public var lastErrorAt: Date?
    /// Failed attempts that will be retried, since the service started.
    public var retries: Int
    /// Failures since the last success.
    public var consecutiveFailures: Int
    /// Seconds until the next probe while backing off.
    public var nextAttemptIn: Double?
    /// Documents sent since the service started.
    public var sent: Int
    /// Current drain caps (after halving on 429 / RESOURCE_EXHAUSTED).
    public var commitsPerSecondCap: Double
    public var bytesPerSecondCap: Double

    /// A status for a service that has not run yet.
    public init(sink: String) {
        activity = .stopped
        self.sink = sink
        backlogCount = 0
        backlogBytes = 0
        inFlight = 0
        deadLetters = 0
        retries = 0
        consecutiveFailures = 0
        sent = 0
        commitsPerSecondCap = 0
        bytesPerSecondCap = 0
    }

    /// One line for logs.
    public var summary: String {
        var s = "sync \(activity.rawValue): backlog \(backlogCount) (\(backlogBytes) B)"
        if let age = oldestUnsentAge { s += ", oldest " + FixedDecimal.string(age, places: 0) + " s" }
        s += ", sent \(sent), retries \(retries), dead \(deadLetters)"
        if let e = lastError { s += ", last error: \(e)" }
        return s
    }
}

/// Settings of the sync service.
public struct SyncConfiguration: Sendable {
    public var backoff: Backoff
    /// Drain caps.
    public var maxCommitsPerSecond: Double
    public var maxBytesPerSecond: Double
    /// Documents of one session per commit (Firestore: at most 4 chunks keeps a commit under
    /// the emulator's 4 MiB; the sink splits bigger ones anyway).
    public var documentsPerCommit: Int
    /// Sessions uploaded in parallel, one commit in flight each.
    public var concurrentSessions: Int
    /// Seconds an idle service waits for the buffer's outbox doorbell (rung whenever something
    /// is queued) before it looks at the outbox anyway: a safety net, not a poll.
    public var idlePollInterval: Double
    /// Seconds without a 429 before a halved rate doubles back.
    public var rateRecoveryInterval: Double

    /// Defaults: backoff 1 s .. 5 min, 10 commits/s, 4 MB/s, 4 documents per commit, 2
    /// sessions at once, an idle look at the outbox every 5 min at the latest, rate recovers every 60 s.
    public init(backoff: Backoff = Backoff(), maxCommitsPerSecond: Double = 10, maxBytesPerSecond: Double = 4_000_000,
                documentsPerCommit: Int = 4, concurrentSessions: Int = 2, idlePollInterval: Double = 300,
                rateRecoveryInterval: Double = 60) {
        self.backoff = backoff
        self.maxCommitsPerSecond = maxCommitsPerSecond
        self.maxBytesPerSecond = maxBytesPerSecond
        self.documentsPerCommit = max(1, documentsPerCommit)
        self.concurrentSessions = max(1, concurrentSessions)
        self.idlePollInterval = idlePollInterval
        self.rateRecoveryInterval = rateRecoveryInterval
    }
}
