/// Full-jitter exponential backoff: the wait before retry `n` (0-based count of failures
/// so far minus one) is uniform in `[0, min(cap, base * 2^n)]`, raised to the upstream's
/// `Retry-After` when it asks for longer (up to `maxRetryAfter`).
public struct Backoff: Sendable, Hashable {
    /// First ceiling, seconds.
    public var base: Double
    /// Largest ceiling, seconds.
    public var cap: Double
    /// Largest `Retry-After` honoured, seconds (a misconfigured upstream cannot park the
    /// gateway for days).
    public var maxRetryAfter: Double

    /// Defaults: base 1 s, cap 5 min, Retry-After honoured up to 1 h.
    public init(base: Double = 1, cap: Double = 300, maxRetryAfter: Double = 3600) {
        self.base = base
        self.cap = cap
        self.maxRetryAfter = maxRetryAfter
    }

    /// `min(cap, base * 2^attempt)`.
    public func ceiling(attempt: Int) -> Double {
        let exponent = Double(max(0, min(attempt, 62)))
        return min(cap, base * Double.pow2(exponent))
    }

    /// The wait before the next try after `attempt` earlier consecutive failures, with
    /// `unit` uniform in [0, 1).
    public func delay(attempt: Int, unit: Double, retryAfter: Double?) -> Double {
        let jittered = ceiling(attempt: attempt) * min(max(unit, 0), 1)
        guard let retryAfter, retryAfter.isFinite, retryAfter > 0 else { return jittered }
        return max(jittered, min(retryAfter, maxRetryAfter))
    }
}

extension Double {
    static func pow2(_ e: Double) -> Double {
        var r = 1.0
        var i = 0.0
        while i < e { r *= 2; i += 1 }
        return r
    }
}
