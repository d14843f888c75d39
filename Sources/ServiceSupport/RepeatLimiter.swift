/// Rate-limits repeated log lines: per key, the first `burst` lines in each `interval` pass,
/// the rest are counted, and once the interval is over one summary line reports how many
/// were suppressed. Pure: the caller passes the time, so tests need no clock.
public struct RepeatLimiter: Sendable {
    /// Lines allowed per key and interval.
    public let burst: Int
    /// Length of a window.
    public let interval: Duration
    /// Keys remembered at most; the oldest window is dropped (and reported) beyond that.
    public let capacity: Int

    struct Window {
        var start: ContinuousClock.Instant
        var passed: Int
        var suppressed: Int
        var sample: String
    }

    private var windows: [String: Window] = [:]

    /// A summary owed for a key whose suppressed lines have not been reported yet.
    public struct Summary: Sendable, Equatable {
        /// The limiter key.
        public let key: String
        /// How many lines were dropped.
        public let suppressed: Int
        /// The text of a dropped line, to say which message it was.
        public let sample: String
    }

    /// The verdict for one line.
    public struct Decision: Sendable, Equatable {
        /// Whether to emit the line itself.
        public let emit: Bool
        /// Summaries to emit first (windows that ended with suppressed lines).
        public let summaries: [Summary]
    }

    /// A limiter; defaults allow 10 identical lines per 30 s.
    public init(burst: Int = 10, interval: Duration = .seconds(30), capacity: Int = 256) {
        self.burst = max(1, burst)
        self.interval = interval
        self.capacity = max(1, capacity)
    }

    /// Decides about one line with `key` at `now`; `sample` is its text for the summary.
    public mutating func admit(key: String, sample: String, now: ContinuousClock.Instant) -> Decision {
        var summaries = expire(now: now)
        if var window = windows[key] {
            if window.passed < burst {
                window.passed += 1
                windows[key] = window
                return Decision(emit: true, summaries: summaries)
            }
            window.suppressed += 1
            window.sample = sample
            windows[key] = window
            return Decision(emit: false, summaries: summaries)
        }
        if windows.count >= capacity, let oldest = windows.min(by: { $0.value.start < $1.value.start }) {
            windows[oldest.key] = nil
            if oldest.value.suppressed > 0 {
                summaries.append(Summary(key: oldest.key, suppressed: oldest.value.suppressed, sample: oldest.value.sample))
            }
        }
        windows[key] = Window(start: now, passed: 1, suppressed: 0, sample: sample)
        return Decision(emit: true, summaries: summaries)
    }

    /// Ends windows older than `interval`, returning the summaries they owe. `admit` calls it;
    /// a daemon may also call it from a periodic tick so a burst that stopped is still reported.
    public mutating func expire(now: ContinuousClock.Instant) -> [Summary] {
        var summaries: [Summary] = []
        for (key, window) in windows where now - window.start >= interval {
            windows[key] = nil
            if window.suppressed > 0 {
                summaries.append(Summary(key: key, suppressed: window.suppressed, sample: window.sample))
            }
        }
        return summaries.sorted { $0.key < $1.key }
    }
}
