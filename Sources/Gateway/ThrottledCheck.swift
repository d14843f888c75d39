/// "At most once per interval" for reads the pipeline would otherwise repeat on every tick
/// and every status request: the kernel's clock discipline and the upload backlog (a
/// database query). Due the first time, then once the interval has passed; ``expire()``
/// makes the next call due at once (after something changed the answer).
struct ThrottledCheck {
    private var lastRun: Int64 = .min

    /// True (and counted as run) when `interval` nanoseconds have passed since the last run
    /// at monotonic `now`, or it never ran.
    mutating func isDue(now: Int64, interval: Int64) -> Bool {
        guard lastRun == .min || now - lastRun >= interval else { return false }
        lastRun = now
        return true
    }

    /// The next ``isDue(now:interval:)`` is true.
    mutating func expire() { lastRun = .min }
}
