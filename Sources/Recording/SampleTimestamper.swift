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
        /// How long a step must last before it counts as lost samples: until then the
        /// notifications after it are held. Only a step is held this long; a steady stream is
        /// stamped after `lookahead`.
        public var confirmation: Int64
        /// How much history the rate fit needs before it replaces the nominal period.
        public var minimumFitSpan: Int64

        /// Defaults for a rate in hertz: 20 s window, 1 s lookahead, ±5 % rate error, a step
        /// confirmed over 5 s, the rate fitted from 10 s of history.
        public init(rateHertz: Double, window: Int64 = 20_000_000_000, lookahead: Int64 = 1_000_000_000,
                    maxRateError: Double = 0.05, minimumGap: Double = 3_000_000,
                    confirmation: Int64 = 5_000_000_000, minimumFitSpan: Int64 = 10_000_000_000) {
            nominalPeriod = 1e9 / rateHertz
            self.window = window
            self.lookahead = lookahead
            self.maxRateError = maxRateError
            self.minimumGap = minimumGap
            self.confirmation = max(confirmation, lookahead)
            self.minimumFitSpan = minimumFitSpan
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
    /// A step still waiting for its confirmation when the stream ends is a loss, however short:
    /// the board keeps a flash log that tells a delay from a loss afterwards (a mark it
    /// contradicts is cleared and the stamps after it moved back, a loss it fills). Without one,
    /// only a step of a lookahead or more is; a shorter one is as likely the end of a delay
    /// (the real-BlueZ VM's bursts), at the cost of a silent hole of up to a lookahead.
    public var unconfirmedStepAtTheEndIsALoss = false

    /// A timestamper for one stream.
    public init(configuration: Configuration) {
        self.configuration = configuration
        period = configuration.nominalPeriod
    }

    /// The current estimate of the real sample period, nanoseconds.
    public var estimatedPeriod: Double { period }

    /// The board's own sample period, nanoseconds (``takeBoardPeriod(_:)``); nil: not known.
    public private(set) var boardPeriod: Double?

    /// The board's clock shows its sample period (its flash log's ticks between neighbouring
    /// samples): from now on the fit takes it instead of the arrivals' slope, which a latency
    /// that stays up or down for seconds tilts (to the 5 % bound, the real-BlueZ VM under load:
    /// every stamp after it 0.5 ms a sample early). One beyond ``Configuration/maxRateError`` of
    /// the nominal rate is no sample period of this stream, and ignored.
    public mutating func takeBoardPeriod(_ nanoseconds: Double) {
        let nominal = configuration.nominalPeriod
        guard abs(nanoseconds / nominal - 1) <= configuration.maxRateError else { return }
        boardPeriod = nanoseconds
        period = nanoseconds
        lastFitAt = .min
    }

    /// Adds a notification of `count` samples received at `receivedAt` and returns the
    /// notifications whose samples are now final (those older than the lookahead).
    public mutating func add(_ payload: Payload, count: Int, receivedAt: Int64) -> [Stamped] {
        guard count > 0 else { return [] }
        pending.append(Pending(payload: payload, firstIndex: nextIndex, count: count, receivedAt: receivedAt))
        nextIndex += Int64(count)
        return drain(until: receivedAt - configuration.lookahead)
    }

    /// Stamps everything still held (at stream or session end): a step not confirmed yet is
    /// judged on what came after it.
    public mutating func flush() -> [Stamped] {
        drain(until: .max, final: true)
    }

    /// The held notifications stamped with the current fit, without releasing them (for
    /// checkpoints; a later loss correction may still move them).
    public func peekHeld() -> [Stamped] {
        var out: [Stamped] = []
        var last = lastEmitted
        let delay = lastingDelay
        for i in pendingStart..<pending.count {
            let p = pending[i]
            let a = (intercept ?? Double(p.receivedAt) - period * Double(p.lastIndex)) - delay
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

    /// The notifications of this stream came `nanoseconds` later than its stamps allowed for at
    /// a mark: a latency step taken for a loss (the fit counted the periods it lasted as lost
    /// samples; `mark` names the payload of the notification after it), or the backlog a new
    /// link's stream began with (its first stamps lie on its first arrivals; `mark` names its
    /// first payload). The board's flash log shows it: the samples streamed on both sides of the
    /// mark are neighbours in the log (issues 18 §2.6, 21). The caller moves back the stamps
    /// handed out so far; those to come are stamped earlier by what of the delay still lasts,
    /// which this returns (ns): the stamps handed out lately, still on their way, are as late.
    ///
    /// The fit keeps its indices, so its envelope stays what the notifications show: stamps are
    /// moved back by the delay, less what the envelope has come down by since the mark (the
    /// delay ended, and the notifications came back to the line the board's samples lie on).
    /// Measured from the line at the readout instead, a delay that had ended before it was
    /// taken back from every later stamp: the real-BlueZ VM's healthy stream 0.25-0.6 s early
    /// (session group at cbb2391). A mark this timestamper does not know (or none) is measured
    /// from the line now: the delay lasts as long as the envelope stays where it is.
    @discardableResult
    public mutating func takeBack(lateBy nanoseconds: Int64, at mark: ((Payload) -> Bool)? = nil) -> Int64 {
        guard nanoseconds > 0, let a = intercept else { return 0 }
        let before = lastingDelay
        if let known = mark.flatMap({ named in marks.last { named($0.payload) } }) {
            delays.append((Double(nanoseconds), known.line, known.index))
        } else {
            delays.append((Double(nanoseconds), a + period * Double(nextIndex), nextIndex))
        }
        if delays.count > Self.marksKept { delays.removeFirst(delays.count - Self.marksKept) }
        let still = Int64(max(0, lastingDelay - before).rounded())
        lastEmitted -= still
        return still
    }

    /// How late the notifications still come by what ``takeBack(lateBy:at:)`` was told, ns: each
    /// delay taken back, less how far the envelope came down since its mark.
    private var lastingDelay: Double {
        guard let a = intercept else { return 0 }
        return delays.reduce(0) { $0 + max(0, $1.nanoseconds - max(0, $1.line - (a + period * Double($1.index)))) }
    }

    /// The delays taken back so far (ns), each with the envelope's line at sample `index` at its mark.
    private var delays: [(nanoseconds: Double, line: Double, index: Int64)] = []

    /// The stream's first notification and each one after a loss it counted, with the envelope's
    /// line at its first sample when it was stamped: where a delay taken back began
    /// (``takeBack(lateBy:at:)``). A hold's log is read within a minute or so of its mark.
    private var marks: [(payload: Payload, index: Int64, line: Double)] = []
    private static var marksKept: Int { 64 }

    private mutating func drain(until cutoff: Int64, final: Bool = false) -> [Stamped] {
        var out: [Stamped] = []
        while pendingStart < pending.count, pending[pendingStart].receivedAt <= cutoff {
            refitIfDue(now: pending[pending.count - 1].receivedAt)
            // A step that has not lasted `confirmation` yet: held until it has, or a later
            // notification shows it was a delay.
            guard detectGap(final: final) else { break }
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
    ///
    /// Such a step is a loss only if it lasts (``Configuration/confirmation``): notifications
    /// never arrive before their samples were taken, so one that comes back below the step
    /// shows that the samples before it were late, not lost. On the real stack (bluetoothd,
    /// btvirt, a loaded VM) they come in bursts every 0.2-0.5 s with a delay that wanders
    /// between 0 and over a second for seconds at a time; judged on one second each rise of
    /// that delay was a loss (27-62 false marks per session, docs/bluez-vm.md). The count is
    /// the lowest the step comes to over the confirmation from the lookahead's second half on,
    /// and the oldest must take all of it, as above. Judged on the lookahead alone the settled
    /// height may still carry a backlog: at a 50 ms connection interval the queue after an
    /// 8.6 s hole stood 11 ms (1.1 periods) high through that second half, the count came out
    /// one too many for the first batch after the hole (on the envelope), and the loss went 4
    /// samples later, those 4 stamped 8.6 s early, before the hole (GapJitterTests seed 4). So
    /// a step one period short of fitting is held for its confirmation too, and placed once the
    /// count is known. Returns false while the step waits
    /// for its confirmation (with `final`, at the stream's end, an unconfirmed step is a loss
    /// only if it is a lookahead long or more).
    private mutating func detectGap(final: Bool) -> Bool {
        guard let a = intercept, historyStart < history.count else { return true }
        let oldest = pending[pendingStart]
        // A later notification already came back down: nothing before it was lost.
        if oldest.receivedAt <= delayShownUntil { return true }
        let threshold = max(0.6 * period, configuration.minimumGap)
        // While a step waits for its confirmation the fit goes on (its window moves): the step
        // found is kept, not found again against a line that moved under it.
        if waitingStep?.receivedAt != oldest.receivedAt || waitingStep?.firstIndex != oldest.firstIndex {
            waitingStep = nil
            guard isStep(oldest, a, threshold: threshold) else { return true }
            waitingStep = (oldest.receivedAt, oldest.firstIndex)
        }
        // Back within 0.4 periods of the envelope: no sample is missing before it. (Not the
        // step's threshold: the envelope is only the lowest delay seen so far, and a later
        // notification may come lower than any before it once the connection events' phase
        // has moved: 4.3 ms lower after 10 s at a 45 ms interval, GapJitterTests seed 3.)
        let confirmedAt = oldest.receivedAt + configuration.confirmation
        let settledFrom = oldest.receivedAt + configuration.lookahead / 2
        var lowest = Double.infinity, settled = Double.infinity, withinLookahead = Double.infinity
        var i = pendingStart
        while i < pending.count, pending[i].receivedAt <= confirmedAt {
            let r = residual(pending[i], a)
            if r < 0.4 * period {
                delayShownUntil = pending[i].receivedAt
                waitingStep = nil
                return true
            }
            lowest = min(lowest, r)
            if pending[i].receivedAt >= settledFrom { settled = min(settled, r) }
            if pending[i].receivedAt <= oldest.receivedAt + configuration.lookahead { withinLookahead = min(withinLookahead, r) }
            i += 1
        }
        waitingStep = nil
        // Not confirmed when the stream ends (a stop, a link drop): a step of a second or more
        // is a hole (a stall the stop followed within seconds), a shorter one as likely the
        // end of a delay (the VM's bursts), and no loss, unless a flash log will tell
        // (``unconfirmedStepAtTheEndIsALoss``).
        if i == pending.count, pending[pending.count - 1].receivedAt < confirmedAt {
            guard final else {
                waitingStep = (oldest.receivedAt, oldest.firstIndex)
                return false
            }
            guard lowest >= Double(configuration.lookahead) || unconfirmedStepAtTheEndIsALoss else { return true }
        }
        let missed = max(1, Int64(((settled.isFinite ? settled : lowest) / period).rounded()))
        // The oldest must take the whole count: otherwise it was merely late (a late batch
        // before the hole), and the loss comes after it.
        guard fitsBeforeTheOldest(missed: missed, minimum: withinLookahead) else { return true }
        for i in pendingStart..<pending.count { pending[i].firstIndex += missed }
        nextIndex += missed
        missedSamples += missed
        missedBeforeOldest = Int(missed)
        return true
    }

    /// Whether the notifications from `oldest` on sit a lasting step above the envelope (the
    /// rules above), judged on the lookahead after it.
    private func isStep(_ oldest: Pending, _ a: Double, threshold: Double) -> Bool {
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
        guard settled.isFinite else { return false }
        guard minimum >= threshold, settled >= threshold else { return false }
        let stepped = Int64((settled / period).rounded())
        guard stepped > 0 else { return false }
        return fitsBeforeTheOldest(missed: stepped - 1, minimum: minimum)
    }

    /// Whether `missed` samples can go before the oldest held notification: none in its
    /// lookahead, `minimum` the lowest residual there, is then stamped after it was received.
    private func fitsBeforeTheOldest(missed: Int64, minimum: Double) -> Bool {
        // Jitter of the envelope, plus the rate estimate's error (≤ 200 ppm) over a long hole.
        let tolerance = min(max(0.05 * period, 300_000), 1_000_000) + 2e-4 * Double(missed) * period
        return minimum - Double(missed) * period >= -tolerance
    }

    private var missedBeforeOldest = 0
    /// The oldest held notification when it was found after a step, while the step waits for
    /// its confirmation (its receive time and first index).
    private var waitingStep: (receivedAt: Int64, firstIndex: Int64)?
    /// Receive time of the latest notification that came back below a step: the step was a
    /// delay, and no notification received until then follows a loss.
    private var delayShownUntil: Int64 = .min

    private mutating func stamp(_ p: Pending) -> Stamped {
        let a = (intercept ?? Double(p.receivedAt) - period * Double(p.lastIndex)) - lastingDelay
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
        if missed > 0 || marks.isEmpty {
            marks.append((p.payload, p.firstIndex, a + lastingDelay + period * Double(p.firstIndex)))
            if marks.count > Self.marksKept { marks.removeFirst(marks.count - Self.marksKept) }
        }
        return Stamped(payload: p.payload, firstIndex: p.firstIndex, times: times, missedBefore: missed,
                       receivedAt: p.receivedAt)
    }

    /// Lower-envelope fit: the slope joins the lowest points (relative to the current slope)
    /// of the older and newer half of the window; the intercept puts the line under every
    /// point, confirmed or held.
    private mutating func refitIfDue(now: Int64) {
        guard intercept == nil || lastFitAt == .min || now - lastFitAt >= 200_000_000 else { return }
        lastFitAt = now
        // The window moves with the newest arrival, but keeps at least the lookahead's stretch
        // before the last stamped notification: a silence of the window less the confirmation
        // (15 s) emptied it, the step after the silence then had no envelope to stand on, and
        // the hole was no loss: no mark, nothing held for the flash log (mwbench's stall).
        let newestStamped = history.last?.receivedAt ?? .max
        let cutoff = min(now - configuration.window, newestStamped - configuration.lookahead)
        while historyStart < history.count, history[historyStart].receivedAt < cutoff { historyStart += 1 }
        // A notification well below the envelope: the stream's latency stepped down (a delay
        // taken for a loss ended, or one the window had made the envelope ended). The points
        // before it lie on a line that much higher, and the slope joined across the two tilted
        // the rate by the step over half the window (381 ms: 2.4 % for 20 s; the 8 s hole 5 s
        // later marked 131 samples late, those stamped 7.9 s early, BackfillRelockTests seed 81).
        // The fit begins again from the lower notifications, at the rate estimated so far: only
        // once that rate was fitted (10 s of history), since before it a clock a few percent off
        // the nominal rate drifts as far below the line in a second.
        if let a = intercept, historyStart < history.count,
           history[history.count - 1].receivedAt - history[historyStart].receivedAt >= configuration.minimumFitSpan,
           pending[pendingStart...].contains(where: { residual($0, a) < -Self.stepDown(period) }) {
            historyStart = history.count
        }
        let count = history.count - historyStart
        if count >= 8 {
            let first = history[historyStart], last = history[history.count - 1]
            // Two lowest points a few seconds apart tilt the slope by their delays' difference
            // over that span: with bursts whose delay wanders by hundreds of milliseconds (the
            // real stack in the VM) a 2 s span came out 1.3 % short, and the drift then made
            // a step every second or two. Until the history is long, the nominal rate is better.
            if boardPeriod == nil, last.receivedAt - first.receivedAt >= configuration.minimumFitSpan {
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

    /// How far below the envelope a notification must come to show a step down in the
    /// stream's latency: 10 periods and at least 100 ms, far above the few milliseconds a new
    /// lowest delay lies below the old one when the connection events' phase moves, and above
    /// what a rate fitted a few percent off drifts in the seconds before the next fit (at 20 ms
    /// a clock 2.6 % fast lost 34-53 samples of an 8 s hole's count).
    static func stepDown(_ period: Double) -> Double { max(10 * period, 100_000_000) }

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
