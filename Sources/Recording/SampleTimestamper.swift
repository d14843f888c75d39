/// Rebuilds each streamed sample's time from the configured rate and the notifications'
/// receive times, one instance per board and sensor.
///
/// Streamed MetaWear data carries no board time, and BLE batching delays notifications by
/// up to a few connection intervals but never delivers them early. So the receive times lie on
/// or above the line `time = intercept + period × sampleIndex`, and the line's lower envelope
/// is the best estimate of when the board took each sample. The fit runs over a sliding
/// window (so board-clock drift is tracked) and looks `lookahead` ahead of the sample it
/// stamps, which is also what detects lost samples: after a loss every later notification
/// sits at least one period above the envelope.
///
/// Pure: receive times come in as integers (nanoseconds on any monotonic clock), times go
/// out on the same clock.
public struct SampleTimestamper<Payload> {
    /// Tuning of the fit.
    public struct Configuration: Sendable, Hashable {
        /// Nominal sample period in nanoseconds (1e9 / configured rate).
        public var nominalPeriod: Double
        /// How much history the fit uses.
        public var window: Int64
        /// How long a notification is held before its samples are stamped.
        public var lookahead: Int64
        /// Largest accepted deviation of the real rate from the nominal one (fraction).
        public var maxRateError: Double
        /// Smallest residual step, in nanoseconds, that counts as lost samples (never less
        /// than 0.6 periods), so sub-millisecond BLE jitter at high rates is not a gap.
        public var minimumGap: Double

        /// Defaults for a rate in hertz: 20 s window, 1 s lookahead, ±5 % rate error.
        public init(rateHertz: Double, window: Int64 = 20_000_000_000, lookahead: Int64 = 1_000_000_000,
                    maxRateError: Double = 0.05, minimumGap: Double = 3_000_000) {
            nominalPeriod = 1e9 / rateHertz
            self.window = window
            self.lookahead = lookahead
            self.maxRateError = maxRateError
            self.minimumGap = minimumGap
        }
    }

    /// One notification's samples with their rebuilt times.
    public struct Stamped {
        /// What the caller passed in with the notification.
        public var payload: Payload
        /// Index of the first sample since the stream started (lost samples count).
        public var firstIndex: Int64
        /// Rebuilt time of each sample, nanoseconds on the receive clock, oldest first.
        public var times: [Int64]
        /// Samples lost immediately before this notification (0 when none).
        public var missedBefore: Int
        /// When the notification was received.
        public var receivedAt: Int64
    }

    private struct Pending {
        var payload: Payload
        var firstIndex: Int64
        var count: Int
        var receivedAt: Int64
        var lastIndex: Int64 { firstIndex + Int64(count) - 1 }
    }

    private struct Point {
        var index: Int64
        var receivedAt: Int64
    }

    public let configuration: Configuration
    private var pending: [Pending] = []
    private var pendingStart = 0
    private var history: [Point] = []
    private var historyStart = 0
    private var nextIndex: Int64 = 0
    private var period: Double
    private var intercept: Double?
    private var lastFitAt: Int64 = .min
    private var lastEmitted: Int64 = .min
    /// Samples found missing so far.
    public private(set) var missedSamples: Int64 = 0

    /// A timestamper for one stream.
    public init(configuration: Configuration) {
        self.configuration = configuration
        period = configuration.nominalPeriod
    }

    /// The current estimate of the real sample period, nanoseconds.
    public var estimatedPeriod: Double { period }

    /// Adds a notification of `count` samples received at `receivedAt` and returns the
    /// notifications whose samples are now final (those older than the lookahead).
    public mutating func add(_ payload: Payload, count: Int, receivedAt: Int64) -> [Stamped] {
        guard count > 0 else { return [] }
        pending.append(Pending(payload: payload, firstIndex: nextIndex, count: count, receivedAt: receivedAt))
        nextIndex += Int64(count)
        return drain(until: receivedAt - configuration.lookahead)
    }

    /// Stamps everything still held (at stream or session end).
    public mutating func flush() -> [Stamped] {
        drain(until: .max)
    }

    /// The held notifications stamped with the current fit, without releasing them (for
    /// checkpoints; a later loss correction may still move them).
    public func peekHeld() -> [Stamped] {
        var out: [Stamped] = []
        var last = lastEmitted
        for i in pendingStart..<pending.count {
            let p = pending[i]
            let a = intercept ?? Double(p.receivedAt) - period * Double(p.lastIndex)
            var times: [Int64] = []
            for k in 0..<p.count {
                var t = Int64((a + period * Double(p.firstIndex + Int64(k))).rounded())
                if t <= last { t = last + 1 }
                last = t
                times.append(t)
            }
            out.append(Stamped(payload: p.payload, firstIndex: p.firstIndex, times: times, missedBefore: 0,
                               receivedAt: p.receivedAt))
        }
        return out
    }

    /// Number of notifications held for the lookahead.
    public var heldCount: Int { pending.count - pendingStart }

    private mutating func drain(until cutoff: Int64) -> [Stamped] {
        var out: [Stamped] = []
        while pendingStart < pending.count, pending[pendingStart].receivedAt <= cutoff {
            refitIfDue(now: pending[pending.count - 1].receivedAt)
            detectGap()
            out.append(stamp(pending[pendingStart]))
            let p = pending[pendingStart]
            history.append(Point(index: p.lastIndex, receivedAt: p.receivedAt))
            pendingStart += 1
        }
        compact()
        return out
    }

    private func residual(_ p: Pending, _ a: Double) -> Double {
        Double(p.receivedAt) - (a + period * Double(p.lastIndex))
    }

    /// A loss shows as a lasting step: every notification received within the lookahead after
    /// the oldest held one sits at least a period above the envelope, and those in its second
    /// half (after any catch-up burst) still sit whole periods above it; that settled height is
    /// the number missing. A late connection event and the burst after it come back down to
    /// the envelope, and the last batch before a hole has no later data in the window, so
    /// neither is a loss. The loss goes before the oldest held notification only if each one
    /// in the window can move up by that many periods without being stamped after it was
    /// received; otherwise the oldest is merely late and the loss comes later.
    private mutating func detectGap() {
        guard let a = intercept, historyStart < history.count else { return }
        let oldest = pending[pendingStart]
        let horizon = oldest.receivedAt + configuration.lookahead
        let settledFrom = oldest.receivedAt + configuration.lookahead / 2
        var minimum = Double.infinity, settled = Double.infinity
        var i = pendingStart
        while i < pending.count, pending[i].receivedAt <= horizon {
            let r = residual(pending[i], a)
            minimum = min(minimum, r)
            if pending[i].receivedAt >= settledFrom { settled = min(settled, r) }
            i += 1
        }
        // Without later data (stream end, or the batch before a hole) there is no evidence.
        guard settled.isFinite else { return }
        let threshold = max(0.6 * period, configuration.minimumGap)
        guard minimum >= threshold, settled >= threshold else { return }
        let missed = Int64((settled / period).rounded())
        guard missed > 0 else { return }
        // Jitter of the envelope, plus the rate estimate's error (≤ 200 ppm) over a long hole.
        let tolerance = min(max(0.05 * period, 300_000), 1_000_000) + 2e-4 * Double(missed) * period
        guard minimum - Double(missed) * period >= -tolerance else { return }
        for i in pendingStart..<pending.count { pending[i].firstIndex += missed }
        nextIndex += missed
        missedSamples += missed
        missedBeforeOldest = Int(missed)
    }

    private var missedBeforeOldest = 0

    private mutating func stamp(_ p: Pending) -> Stamped {
        let a = intercept ?? Double(p.receivedAt) - period * Double(p.lastIndex)
        var times: [Int64] = []
        times.reserveCapacity(p.count)
        for k in 0..<p.count {
            var t = Int64((a + period * Double(p.firstIndex + Int64(k))).rounded())
            if t <= lastEmitted { t = lastEmitted + 1 }
            lastEmitted = t
            times.append(t)
        }
        let missed = missedBeforeOldest
        missedBeforeOldest = 0
        return Stamped(payload: p.payload, firstIndex: p.firstIndex, times: times, missedBefore: missed,
                       receivedAt: p.receivedAt)
    }

    /// Lower-envelope fit: the slope joins the lowest points (relative to the current slope)
    /// of the older and newer half of the window; the intercept puts the line under every
    /// point, confirmed or held.
    private mutating func refitIfDue(now: Int64) {
        guard intercept == nil || lastFitAt == .min || now - lastFitAt >= 200_000_000 else { return }
        lastFitAt = now
        let cutoff = now - configuration.window
        while historyStart < history.count, history[historyStart].receivedAt < cutoff { historyStart += 1 }
        let count = history.count - historyStart
        if count >= 8 {
            let first = history[historyStart], last = history[history.count - 1]
            if last.receivedAt - first.receivedAt >= 2_000_000_000 {
                for _ in 0..<2 {
                    let middle = historyStart + count / 2
                    let a = lowest(historyStart, middle)
                    let b = lowest(middle, history.count)
                    if b.index > a.index {
                        let slope = Double(b.receivedAt - a.receivedAt) / Double(b.index - a.index)
                        let nominal = configuration.nominalPeriod
                        period = min(max(slope, nominal * (1 - configuration.maxRateError)),
                                     nominal * (1 + configuration.maxRateError))
                    }
                }
            }
        }
        var a = Double.infinity
        for i in historyStart..<history.count {
            a = min(a, Double(history[i].receivedAt) - period * Double(history[i].index))
        }
        if history.count - historyStart < 8 || intercept == nil {
            // Early on, held notifications are the only evidence; a later loss can only
            // raise their residuals, never lower the envelope.
            for i in pendingStart..<pending.count {
                a = min(a, Double(pending[i].receivedAt) - period * Double(pending[i].lastIndex))
            }
        }
        if a.isFinite { intercept = a }
    }

    private func lowest(_ from: Int, _ to: Int) -> Point {
        var best = history[from]
        var bestValue = Double.infinity
        for i in from..<to {
            let v = Double(history[i].receivedAt) - period * Double(history[i].index)
            if v < bestValue { bestValue = v; best = history[i] }
        }
        return best
    }

    private mutating func compact() {
        if pendingStart > 256, pendingStart * 2 > pending.count {
            pending.removeFirst(pendingStart)
            pendingStart = 0
        }
        if historyStart > 1024, historyStart * 2 > history.count {
            history.removeFirst(historyStart)
            historyStart = 0
        }
    }
}
