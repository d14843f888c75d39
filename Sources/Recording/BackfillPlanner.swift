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
        /// Which of the board's links streamed it (each link's timestamper starts from
        /// nothing, so times compare exactly only within one link): samples of one link share
        /// the number, the next link has another.
        public var link: Int

        /// All fields.
        public init(time: Int64, raw: RawVector, link: Int = 0) {
            self.time = time
            self.raw = raw
            self.link = link
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
        /// Between its streamed neighbours in the log's order, spread by its ticks: the
        /// stream's times there are off by more than the anchors allow (a new link's first
        /// points, a burst), so only the order is certain.
        case logOrder = "log_order"
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

    /// The outcome of one plan.
    public struct Plan: Hashable, Sendable {
        /// The samples to add, in time order, none at the time of a streamed one.
        public var backfilled: [Backfilled] = []
        /// Logged samples that were also streamed (matched by value, near their ticks' time or
        /// in the log's order).
        public var alreadyStreamed = 0
        /// Logged samples outside the session's span.
        public var outsideSession = 0
        /// Logged samples that could not be placed (a boot with no anchor and no clock reading).
        public var unplaced = 0
        /// Logged samples dropped because a streamed or another logged sample holds their time.
        public var collisions = 0
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

    /// Where a logged sample with `tick` lies on the streamed time base (ns) when its boot's
    /// ticks began at `origin`.
    static func time(ofTick tick: UInt32, origin: Int64) -> Int64 {
        origin + Int64(BoardTicks.milliseconds(UInt64(tick)) * 1e6)
    }

    /// How far before a gap's earliest possible start a logged sample may still matter
    /// (beyond ``originTolerance``): the board's crystal drifts a few ms an hour against the
    /// host, so 10 s leaves room for days.
    public static let reachMargin: Int64 = 10_000_000_000

    /// `logged` (in readout order) without the samples its boot's tick origin puts more than
    /// ``originTolerance`` + ``reachMargin`` before `earliest` (streamed time base, ns), and how
    /// many those were. A gap and its anchors lie at or after `earliest`, so such a sample can
    /// neither fill nor anchor anything; a session logs without pause and the log is emptied
    /// only by readouts, so the first readout after a long healthy stretch brings all of it,
    /// and planning it all on every page made the readout's CPU grow with the square of its
    /// length. Samples of a boot without an origin, and a boot's samples after its ticks wrap
    /// (72.8 days), are kept.
    public func samples(_ logged: [LoggedSample], reaching earliest: Int64) -> (kept: [LoggedSample], before: Int) {
        let cutoff = earliest - originTolerance - Self.reachMargin
        var lastTick: [UInt8: UInt32] = [:]
        var wrapped: Set<UInt8> = []
        var kept: [LoggedSample] = []
        kept.reserveCapacity(logged.count)
        // The boot in hand in locals (a log comes boot by boot), put back into the tables when
        // another boot's sample comes: this runs over the whole log for every page of a long
        // readout, and two table lookups a sample were most of its cost.
        var uid: UInt8?
        var last: UInt32?
        var isWrapped = false
        var origin: Int64?
        for sample in logged {
            if sample.resetUID != uid {
                if let uid {
                    lastTick[uid] = last
                    if isWrapped { wrapped.insert(uid) }
                }
                uid = sample.resetUID
                last = lastTick[sample.resetUID]
                isWrapped = wrapped.contains(sample.resetUID)
                origin = bootOrigins[sample.resetUID]
            }
            if let last, sample.tick < last { isWrapped = true }
            last = sample.tick
            if let origin, !isWrapped, Self.time(ofTick: sample.tick, origin: origin) < cutoff { continue }
            kept.append(sample)
        }
        return (kept, logged.count - kept.count)
    }

    /// The part of `streamed` (in time order) that `logged` can be matched against: the samples
    /// within ``originTolerance`` + ``reachMargin`` of the span its boots' tick origins put it
    /// in (the reach ``samples(_:reaching:)`` allows before a gap, on both sides). A slow
    /// readout's stream runs far past the page in hand (a 10-minute log at the board's pace is
    /// read for 5 minutes while the stream goes on), and matching every page against all of it
    /// made each page cost more than the last. All of `streamed` when a boot has no origin or
    /// its ticks wrap (its samples could lie anywhere); none when `logged` is empty.
    public func streamed(_ streamed: [StreamedSample], near logged: [LoggedSample]) -> [StreamedSample] {
        guard !logged.isEmpty else { return [] }
        var lastTick: [UInt8: UInt32] = [:]
        var earliest = Int64.max
        var latest = Int64.min
        // The boot in hand in locals, as in `samples(_:reaching:)`.
        var uid: UInt8?
        var last: UInt32?
        var origin: Int64 = 0
        for sample in logged {
            if sample.resetUID != uid {
                if let uid { lastTick[uid] = last }
                uid = sample.resetUID
                last = lastTick[sample.resetUID]
                guard let known = bootOrigins[sample.resetUID] else { return streamed }
                origin = known
            }
            guard last.map({ sample.tick >= $0 }) ?? true else { return streamed }
            last = sample.tick
            let time = Self.time(ofTick: sample.tick, origin: origin)
            earliest = min(earliest, time)
            latest = max(latest, time)
        }
        let reach = originTolerance + Self.reachMargin
        let from = streamed.firstIndex(notBefore: earliest - reach)
        return Array(streamed[from..<max(from, streamed.firstIndex(notBefore: latest + reach + 1))])
    }

    /// How many samples before the first one a plan places (`placingFrom`) are placed with it,
    /// not handed out: the drops of samples too near another start afresh within them.
    static let placingContext = 256

    /// Plans the backfill of `logged` (in readout order) into `streamed` (in time order).
    ///
    /// `placingFrom`: only the samples of `logged` from this index on are placed and handed out;
    /// those before it still anchor and pair the others (a page of a long readout whose earlier
    /// samples are settled: placing them all again made every page cost as much as the log read
    /// so far). The counts of samples not placed (collisions, unplaced) cover the placed ones.
    public func plan(streamed: [StreamedSample], logged: [LoggedSample], placingFrom: Int = 0) -> Plan {
        var plan = Plan()
        let period = streamPeriod(streamed)
        var errors: [Double] = []
        let index = BackfillAnchors.index(streamed)
        let boots = boots(logged, placingFrom: placingFrom)
        // Every boot's anchors first: a walk in log order must not take another boot's.
        let anchors = boots.map {
            BackfillAnchors.find($0, in: streamed, index: index, origin: bootOrigins[$0.uid], tolerance: originTolerance, period: period)
        }
        let used = Set(anchors.flatMap { boot in boot.positions.compactMap { boot.streamedIndex[$0] } })
        var candidates: [(sample: Backfilled, handedOut: Bool)] = []
        // Streamed samples the log shows a period or more from their stamps: the stream stamped
        // them off next to a loss (BLE batching hides which side of a late notification the loss
        // was). Their stamps hold no sample of the log's, so they keep no logged sample out.
        var misplaced: Set<Int> = []
        for (boot, anchors) in zip(boots, anchors) {
            plan.alreadyStreamed += anchors.count
            errors += anchors.leaveOneOutErrors(boot, period: period)
            let twins = LogOrderTwins(boot, anchors: anchors, streamed: streamed, excluded: used)
            plan.alreadyStreamed += twins.found.count
            for k in twins.found {
                guard let twin = twins.streamedIndex[k], let (time, _) = place(k, boot, anchors, period: period) else { continue }
                if abs(streamed[twin].time - time) > Int64(period / 2) { misplaced.insert(twin) }
            }
            let placingFrom = boot.placingFrom ?? boot.samples.count
            let from = max(0, placingFrom - Self.placingContext)
            candidates += unstreamed(boot, anchors, twins, streamed, period: period, from: from, plan: &plan).map {
                (sample: $0.sample, handedOut: $0.position >= placingFrom)
            }
        }
        candidates.sort { $0.sample.time < $1.sample.time }
        let minimumSpacing = Int64(period / 2)
        var streamCursor = 0
        var lastKept: Int64?
        for (candidate, handedOut) in candidates {
            if let span = sessionSpan, !span.contains(candidate.time) {
                if handedOut { plan.outsideSession += 1 }
                continue
            }
            // Placed between its streamed neighbours by the log's order: no streamed sample
            // between them is its twin, however close.
            let inLogOrder = candidate.placement == .logOrder
            while streamCursor < streamed.count, streamed[streamCursor].time <= candidate.time - minimumSpacing { streamCursor += 1 }
            var nearStream = false
            var j = streamCursor
            while !inLogOrder, j < streamed.count, streamed[j].time < candidate.time + minimumSpacing {
                if !misplaced.contains(j) { nearStream = true; break }
                j += 1
            }
            let nearPrevious = lastKept.map { candidate.time - $0 < (inLogOrder ? 1 : minimumSpacing) } ?? false
            if nearStream || nearPrevious {
                if handedOut { plan.collisions += 1 }
                continue
            }
            lastKept = candidate.time
            if handedOut { plan.backfilled.append(candidate) }
        }
        if errors.count >= 3 {
            errors.sort()
            plan.medianAnchorError = errors[errors.count / 2]
        }
        return plan
    }

    /// The boot's samples the stream lost from log position `from` on, placed, with their
    /// positions. Each stretch of them between two streamed twins belongs between those in
    /// time: placed where the anchors put them when that is between the twins' times (at least
    /// half a period from each), else spread over that span by their ticks (the stream's times
    /// there are off: the order is what is known).
    private func unstreamed(_ boot: BootLog, _ anchors: BackfillAnchors, _ twins: LogOrderTwins, _ streamed: [StreamedSample],
                            period: Double, from: Int, plan: inout Plan) -> [(sample: Backfilled, position: Int)] {
        func backfilled(_ p: Int, _ time: Int64, _ placement: Placement) -> (sample: Backfilled, position: Int) {
            (Backfilled(time: time, raw: boot.samples[p].raw, resetUID: boot.uid, tick: boot.samples[p].tick, placement: placement), p)
        }
        var out: [(sample: Backfilled, position: Int)] = []
        // From the start of the stretch `from` is in.
        var k = twins.neighbours(of: from).before.map { min($0 + 1, from) } ?? 0
        while k < boot.samples.count {
            guard twins.streamedIndex[k] == nil else { k += 1; continue }
            let (before, after) = twins.neighbours(of: k)
            let end = after.map { $0 - 1 } ?? boot.samples.count - 1
            // A stretch its anchors place on one straight line comes out in order: its first and
            // last samples tell whether it fits between its twins, and only those from `from` on
            // need placing (a gap of minutes is one stretch, read over many pages).
            let straight = isStraight(k...end, anchors, period: period)
            var stretch: [(sample: Backfilled, position: Int)] = []
            for p in straight ? max(k, from)...end : k...end {
                guard let (time, placement) = place(p, boot, anchors, period: period) else { plan.unplaced += 1; continue }
                stretch.append(backfilled(p, time, placement))
            }
            let first = straight ? place(k, boot, anchors, period: period)?.0 : stretch.first?.sample.time
            let last = stretch.last?.sample.time
            let allPlaced = straight || stretch.count == end - k + 1
            if let before, let after, let low = twins.streamedIndex[before].map({ streamed[$0].time }),
               let high = twins.streamedIndex[after].map({ streamed[$0].time }) {
                let margin = Int64(period / 2)
                let fits = allPlaced && first.map { $0 >= low + margin } != false && last.map { $0 <= high - margin } != false
                    && (straight || zip(stretch, stretch.dropFirst()).allSatisfy { $0.sample.time < $1.sample.time })
                if !fits {
                    let spread = spread(k...end, boot, between: (before, low), and: (after, high))
                    stretch = spread.enumerated().map { (sample: $1, position: k + $0) }
                    // More samples than nanoseconds between the neighbours: no time is left.
                    plan.collisions += end - k + 1 - spread.count
                }
            } else if let before, let low = twins.streamedIndex[before].map({ streamed[$0].time }), allPlaced,
                      first.map({ $0 < low + Int64(period / 2) }) == true {
                // After the boot's last twin but placed before it: the anchors found none after a
                // step in the stream's latency (the twins after it were found in the log's order),
                // and the last anchor's offset is off by the step (the real-BlueZ VM's 0.24 s and
                // 0.35 s steps, the stream's times 1.3 s late by then, put the board's samples
                // taken after the session's stop among its last points). They go after that twin
                // by their ticks.
                stretch = (max(k, from)...end).map { p in
                    backfilled(p, low + Int64((boot.ticks[p] - boot.ticks[before]).rounded()), .extrapolated)
                }
            }
            out += stretch.lazy.filter { $0.position >= from }
            k = end + 1
        }
        return out
    }

    /// Whether ``place(_:_:_:period:)`` puts every sample of `stretch` (log positions without a
    /// streamed twin) on one line through its anchors, each more than a nanosecond after the one
    /// before: the same anchors before and after all of them, and one run of sampling with the
    /// anchor (or both) that places them.
    private func isStraight(_ stretch: ClosedRange<Int>, _ anchors: BackfillAnchors, period: Double) -> Bool {
        switch (anchors.nearest(before: stretch.lowerBound), anchors.nearest(after: stretch.lowerBound)) {
        case let (a?, b?):
            return anchors.interpolatesStraight(between: a, and: b)
        case let (a?, nil), let (nil, a?):
            return period >= 2 && anchors.extrapolatesStraight(stretch, from: a)
        case (nil, nil):
            return false
        }
    }

    /// Log positions `stretch` spread over the streamed times of their neighbours `before` and
    /// `after` (log position, time) by their ticks, in order, each strictly between.
    private func spread(_ stretch: ClosedRange<Int>, _ boot: BootLog, between before: (Int, Int64),
                        and after: (Int, Int64)) -> [Backfilled] {
        let span = Double(after.1 - before.1)
        let tickSpan = boot.ticks[after.0] - boot.ticks[before.0]
        var out: [Backfilled] = []
        var previous = before.1
        for p in stretch {
            let share = tickSpan > 0 ? (boot.ticks[p] - boot.ticks[before.0]) / tickSpan
                : Double(p - before.0) / Double(after.0 - before.0)
            let time = max(previous + 1, before.1 + Int64((share * span).rounded()))
            guard time < after.1 else { break }
            previous = time
            out.append(Backfilled(time: time, raw: boot.samples[p].raw, resetUID: boot.uid, tick: boot.samples[p].tick,
                                  placement: .logOrder))
        }
        return out
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

    /// The logged samples split by boot, ticks unwrapped past 2^32; each boot's first position
    /// placed is that of its first sample at or after `placingFrom` in `logged`.
    private func boots(_ logged: [LoggedSample], placingFrom: Int) -> [BootLog] {
        var boots: [BootLog] = []
        var unwrappers: [TickUnwrapper] = []
        var slots: [UInt8: Int] = [:]
        // The boot in hand by its slot (a log comes boot by boot): this runs over the whole log
        // read so far for every page, and four table lookups a sample were most of its cost.
        var uid: UInt8?
        var slot = 0
        var i = 0
        for sample in logged {
            defer { i += 1 }
            if sample.resetUID != uid {
                uid = sample.resetUID
                if let known = slots[sample.resetUID] {
                    slot = known
                } else {
                    slot = boots.count
                    slots[sample.resetUID] = slot
                    boots.append(BootLog(uid: sample.resetUID))
                    unwrappers.append(TickUnwrapper())
                }
            }
            let ticks = unwrappers[slot].unwrap(sample.tick)
            if i >= placingFrom, boots[slot].placingFrom == nil { boots[slot].placingFrom = boots[slot].samples.count }
            boots[slot].samples.append(sample)
            boots[slot].ticks.append(BoardTicks.milliseconds(ticks) * 1e6)
        }
        return boots
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
    /// The first position a plan places (``BackfillPlanner/plan(streamed:logged:placingFrom:)``);
    /// nil: none.
    var placingFrom: Int?
}

extension Array where Element == BackfillPlanner.StreamedSample {
    /// The index of the first of these samples (in time order) at or after `time`, nanoseconds;
    /// `count` when none is.
    func firstIndex(notBefore time: Int64) -> Int {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if self[mid].time < time { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
