/// Paces commits so a drain never exceeds `commitsPerSecond` and `bytesPerSecond` times the
/// current factor. Commits are spaced, not burst: in any window of W seconds at most
/// `W * commitsPerSecond + 1` commits start, and at most `W * bytesPerSecond` plus one
/// commit's bytes.
///
/// `slowDown` (HTTP 429 / RESOURCE_EXHAUSTED) halves the factor, down to `minimumFactor`;
/// each `recoveryInterval` without another slow-down doubles it back towards 1.
public struct DrainRateLimiter: Sendable, Hashable {
    public var commitsPerSecond: Double
    public var bytesPerSecond: Double
    public var minimumFactor: Double
    public var recoveryInterval: Double
    /// Current share of the configured rates, in [minimumFactor, 1].
    public private(set) var factor: Double = 1
    private var nextCommitAt = -Double.infinity
    private var nextByteAt = -Double.infinity
    private var lastChange = -Double.infinity

    /// A limiter with the configured caps.
    public init(commitsPerSecond: Double, bytesPerSecond: Double, minimumFactor: Double = 1.0 / 64, recoveryInterval: Double = 60) {
        self.commitsPerSecond = commitsPerSecond
        self.bytesPerSecond = bytesPerSecond
        self.minimumFactor = minimumFactor
        self.recoveryInterval = recoveryInterval
    }

    /// Current commit rate cap.
    public var currentCommitsPerSecond: Double { commitsPerSecond * factor }
    /// Current byte rate cap.
    public var currentBytesPerSecond: Double { bytesPerSecond * factor }

    /// Books a commit of `bytes` and returns when it may start (≥ `now`).
    public mutating func reserve(bytes: Int, now: Double) -> Double {
        recover(now: now)
        let start = max(now, nextCommitAt, nextByteAt)
        nextCommitAt = start + 1 / max(currentCommitsPerSecond, 1e-9)
        nextByteAt = start + Double(bytes) / max(currentBytesPerSecond, 1e-9)
        return start
    }

    /// The upstream asked us to slow down: halve the rate.
    public mutating func slowDown(now: Double) {
        factor = max(minimumFactor, factor / 2)
        lastChange = now
    }

    private mutating func recover(now: Double) {
        while factor < 1, now - lastChange >= recoveryInterval {
            factor = min(1, factor * 2)
            lastChange += recoveryInterval
        }
    }
}
