import MetaWear

/// Places samples downloaded from a board's flash log on the streamed samples' time base, so
/// they can fill the gaps of one sensor's stream: no sample twice, time order, and within the
/// streamed samples' own accuracy.
///
/// Board ticks are 1.46 ms coarse, run on another crystal than the host, restart at every
/// reset, and the clock read at connect is off by the link's latency (metawear-logging.md §7,
/// P10). So ticks only *locate* a logged sample; its time comes from the stream itself: logged
/// samples carry the same raw counts as the streamed ones, which makes the samples present in
/// both (anchors) pairs of (tick, streamed time). Between two anchors the board took its samples
/// at an even pace, so a sample between them gets the time its position implies; past the last
/// anchor the stream's period extends the line. Pure: values in, values out.
public struct BackfillPlanner: Sendable {
    /// One streamed sample: its time on the session's base and its raw counts.
    public struct StreamedSample: Hashable, Sendable {
        /// Nanoseconds on the streamed time base.
        public var time: Int64
        /// Raw counts as streamed.
        public var raw: RawVector

        /// Both fields.
        public init(time: Int64, raw: RawVector) {
            self.time = time
            self.raw = raw
        }
    }

    /// How a backfilled sample's time was found.
    public enum Placement: String, Hashable, Sendable {
        /// Between two anchors, by its position: as accurate as the stream.
        case betweenAnchors = "between_anchors"
        /// Beyond the first or last anchor of its boot, by the stream's period.
        case extrapolated
        /// No anchor in its boot: from the board clock read at connect (± link latency).
        case boardClock = "board_clock"
    }

    /// A logged sample that was not streamed, with its time.
    public struct Backfilled: Hashable, Sendable {
        /// Nanoseconds on the streamed time base.
        public var time: Int64
        /// Raw counts as logged.
        public var raw: RawVector
        /// Boot of the board that logged it.
        public var resetUID: UInt8
        /// Its tick.
        public var tick: UInt32
        /// How its time was found.
        public var placement: Placement
    }

    /// A streamed sample and the time its logged twin puts it at.
    public struct Retimed: Hashable, Sendable {
        /// Index into the streamed samples given to `plan`.
        public var streamedIndex: Int
        /// Where the log places it, nanoseconds on the streamed time base.
        public var time: Int64
    }

    /// The outcome of one plan.
    public struct Plan: Hashable, Sendable {
        /// The samples to add, in time order, none at the time of a streamed one.
        public var backfilled: [Backfilled] = []
        /// Logged samples that were also streamed (matched by value and time).
        public var alreadyStreamed = 0
        /// Logged samples outside the session's span.
        public var outsideSession = 0
        /// Logged samples that could not be placed (a boot with no anchor and no clock reading).
        public var unplaced = 0
        /// Logged samples dropped because a streamed or another logged sample holds their time.
        public var collisions = 0
        /// Streamed samples the log shows at another time: the stream stamped them a period or
        /// more off next to a loss (BLE batching hides which side of a late notification the
        /// loss was). A named correction may move them; they are never backfilled again.
        public var retimed: [Retimed] = []
        /// Median |placed − streamed| over the anchors, each placed from its neighbours only
        /// (leave-one-out), nanoseconds: how well placement reproduces the stream. nil with
        /// fewer than three anchors.
        public var medianAnchorError: Double?
    }

    /// The sensor's nominal sample period, nanoseconds (1e9 / rate).
    public var nominalPeriod: Double
    /// Where on the streamed time base each boot's tick 0 lies (from the board clock read at
    /// connect), by reset UID: the fallback for boots without anchors and the search centre.
    public var bootOrigins: [UInt8: Int64]
    /// Farthest the clock-read origin may be off (link latency), nanoseconds.
    public var originTolerance: Int64
    /// Samples are backfilled only inside this span of the streamed time base (the session).
    public var sessionSpan: ClosedRange<Int64>?

    /// A planner for one sensor.
    public init(nominalPeriod: Double, bootOrigins: [UInt8: Int64] = [:], originTolerance: Int64 = 1_000_000_000,
                sessionSpan: ClosedRange<Int64>? = nil) {
        self.nominalPeriod = nominalPeriod
        self.bootOrigins = bootOrigins
        self.originTolerance = originTolerance
        self.sessionSpan = sessionSpan
    }

    /// Plans the backfill of `logged` (in readout order) into `streamed` (in time order).
    public func plan(streamed: [StreamedSample], logged: [LoggedSample]) -> Plan {
        var plan = Plan()
        let period = streamPeriod(streamed)
        var candidates: [Backfilled] = []
        var errors: [Double] = []
        let index = BackfillAnchors.index(streamed)
        var used = Set<Int>()
        for boot in boots(logged) {
            let anchors = BackfillAnchors.find(boot, in: streamed, index: index, origin: bootOrigins[boot.uid],
                                               tolerance: originTolerance, period: period)
            plan.alreadyStreamed += anchors.count
            used.formUnion(anchors.streamedIndex.compactMap { $0 })
            errors += anchors.leaveOneOutErrors(boot, period: period)
            for k in boot.ticks.indices where anchors.streamedIndex[k] == nil {
                guard let (time, placement) = place(k, boot, anchors, period: period) else { plan.unplaced += 1; continue }
                // Streamed after all, but not where the tight anchor search looked (a stationary
                // stretch before the first lock, or stamped off by a period next to a loss).
                if let twin = BackfillAnchors.nearest(boot.samples[k].raw, around: Double(time), within: 2.5 * period,
                                                      streamed, index, excluded: { used.contains($0) }) {
                    used.insert(twin)
                    plan.alreadyStreamed += 1
                    if abs(streamed[twin].time - time) > Int64(period / 2) { plan.retimed.append(Retimed(streamedIndex: twin, time: time)) }
                    continue
                }
                candidates.append(Backfilled(time: time, raw: boot.samples[k].raw, resetUID: boot.uid,
                                             tick: boot.samples[k].tick, placement: placement))
            }
        }
        candidates.sort { $0.time < $1.time }
        let misplaced = Set(plan.retimed.map(\.streamedIndex))
        let minimumSpacing = Int64(period / 2)
        var streamCursor = 0
        for candidate in candidates {
            if let span = sessionSpan, !span.contains(candidate.time) { plan.outsideSession += 1; continue }
            while streamCursor < streamed.count, streamed[streamCursor].time <= candidate.time - minimumSpacing { streamCursor += 1 }
            var nearStream = false
            var j = streamCursor
            while j < streamed.count, streamed[j].time < candidate.time + minimumSpacing {
                if !misplaced.contains(j) { nearStream = true; break }
                j += 1
            }
            let nearPrevious = plan.backfilled.last.map { candidate.time - $0.time < minimumSpacing } ?? false
            if nearStream || nearPrevious { plan.collisions += 1; continue }
            plan.backfilled.append(candidate)
        }
        if errors.count >= 3 {
            errors.sort()
            plan.medianAnchorError = errors[errors.count / 2]
        }
        return plan
    }

    /// The stream's real period: the median spacing of consecutive samples less than two
    /// nominal periods apart (the timestamper spaces them evenly), else the nominal one.
    func streamPeriod(_ streamed: [StreamedSample]) -> Double {
        var spacings: [Int64] = []
        spacings.reserveCapacity(streamed.count)
        for i in streamed.indices.dropFirst() {
            let d = streamed[i].time - streamed[i - 1].time
            if d > 0, Double(d) < 1.5 * nominalPeriod { spacings.append(d) }
        }
        guard spacings.count >= 8 else { return nominalPeriod }
        spacings.sort()
        return Double(spacings[spacings.count / 2])
    }

    /// The logged samples split by boot, ticks unwrapped past 2^32.
    private func boots(_ logged: [LoggedSample]) -> [BootLog] {
        var order: [UInt8] = []
        var byUID: [UInt8: BootLog] = [:]
        var unwrappers: [UInt8: TickUnwrapper] = [:]
        for sample in logged {
            let uid = sample.resetUID
            if byUID[uid] == nil { order.append(uid); byUID[uid] = BootLog(uid: uid) }
            let ticks = unwrappers[uid, default: TickUnwrapper()].unwrap(sample.tick)
            byUID[uid]?.samples.append(sample)
            byUID[uid]?.ticks.append(BoardTicks.milliseconds(ticks) * 1e6)
        }
        return order.compactMap { byUID[$0] }
    }

    /// The time of the boot's `k`-th sample, which was not streamed.
    private func place(_ k: Int, _ boot: BootLog, _ anchors: BackfillAnchors, period: Double) -> (Int64, Placement)? {
        let before = anchors.nearest(before: k)
        let after = anchors.nearest(after: k)
        switch (before, after) {
        case let (a?, b?):
            return (anchors.interpolate(k, between: a, and: b, boot, period: period), .betweenAnchors)
        case let (a?, nil), let (nil, a?):
            return (anchors.extrapolate(k, from: a, boot, period: period), .extrapolated)
        case (nil, nil):
            guard let origin = bootOrigins[boot.uid] else { return nil }
            return (origin + Int64(boot.ticks[k].rounded()), .boardClock)
        }
    }
}

/// One boot's logged samples with their tick times (nanoseconds since that boot).
struct BootLog {
    var uid: UInt8
    var samples: [LoggedSample] = []
    var ticks: [Double] = []
}
