import MetaWear

/// The logged samples of one boot that were also streamed, found by their raw counts near the
/// time their tick predicts, and the geometry that places the others between them.
struct BackfillAnchors {
    /// Matched streamed sample index for each logged sample of the boot.
    private(set) var streamedIndex: [Int?]
    /// Log positions that are anchors, ascending.
    private(set) var positions: [Int] = []
    /// Streamed time of each anchor, by position in `positions`.
    private(set) var times: [Int64] = []
    private let ticks: [Double]
    private let runs: SamplingRuns

    /// Anchors found.
    var count: Int { positions.count }

    /// Streamed sample indices by raw counts, built once per plan.
    typealias StreamIndex = [RawVector: [Int]]

    static func index(_ streamed: [BackfillPlanner.StreamedSample]) -> StreamIndex {
        var index: StreamIndex = [:]
        for (j, sample) in streamed.enumerated() { index[sample.raw, default: []].append(j) }
        return index
    }

    /// Walks the boot's samples in order. The tick→stream offset is locked where several
    /// logged samples agree on it (within 3 ms), then followed sample by sample, allowing the
    /// board's crystal 200 ppm of drift since the last anchor. When ``relockAfter`` samples in a
    /// row find no twin there, the offset is locked again from the first of them, near the one
    /// followed: the stream's latency stepped (0.2-0.4 s at a time in the real-BlueZ VM, each
    /// rise the timestamper confirmed as a loss moving the stream's times later for good), and
    /// followed from before the step no anchor was found after it.
    static func find(_ boot: BootLog, in streamed: [BackfillPlanner.StreamedSample], index: StreamIndex, origin: Int64?,
                     tolerance: Int64, period: Double) -> BackfillAnchors {
        var anchors = BackfillAnchors(streamedIndex: Array(repeating: nil, count: boot.samples.count), ticks: boot.ticks,
                                      runs: SamplingRuns(ticks: boot.ticks, period: period))
        let lock = OffsetLock(boot: boot, streamed: streamed, index: index)
        var offset: Double?
        var lastAnchorTick = 0.0
        var lastStreamed = -1
        var missed = 0
        var k = 0
        var hole = StreamHole(streamed: streamed, margin: Double(tolerance + BackfillPlanner.reachMargin))
        while k < boot.samples.count {
            guard let current = offset else {
                offset = lock.first(from: k, origin: origin, tolerance: Double(tolerance))
                if offset == nil { k += OffsetLock.window } else { lastAnchorTick = boot.ticks[k] }
                continue
            }
            func allowance(_ k: Int) -> Double { 3_000_000 + 200e-6 * (boot.ticks[k] - lastAnchorTick) + period / 4 }
            // Samples the stream has nothing near (a gap's middle, a gateway down for minutes)
            // can be no twin, and a relock among them fails as well: they are walked over as
            // misses, the relock's cadence kept, without a lookup each. Walking them one by one
            // made every page of a long gap's readout cost as much as the whole log read so far.
            if let end = hole.skippable(from: k, ticks: boot.ticks, offset: current, allowed: allowance), end > k {
                // Each miss counts on; the relock due at the `relockAfter`-th fails and the count
                // starts again a lock window back.
                let misses = end - k
                if missed + misses < relockAfter {
                    missed += misses
                } else {
                    missed = relockAfter - OffsetLock.window + (misses - (relockAfter - missed)) % OffsetLock.window
                }
                k = end
                continue
            }
            let predicted = boot.ticks[k] + current
            let allowed = allowance(k)
            let best = nearest(boot.samples[k].raw, around: predicted, within: allowed, streamed, index) { $0 <= lastStreamed }
            if let best {
                anchors.streamedIndex[k] = best
                anchors.positions.append(k)
                anchors.times.append(streamed[best].time)
                let measured = Double(streamed[best].time) - boot.ticks[k]
                offset = current + 0.1 * (measured - current)
                lastAnchorTick = boot.ticks[k]
                lastStreamed = best
                missed = 0
                k += 1
                continue
            }
            missed += 1
            k += 1
            guard missed == relockAfter else { continue }
            let from = k - missed
            if let relocked = lock.again(from: from, near: current, tolerance: Double(tolerance)), abs(relocked - current) > 3_000_000 {
                offset = relocked
                lastAnchorTick = boot.ticks[from]
                missed = 0
                k = from
            } else {
                // The stream lost these samples (a gap) or the log's values here are too common:
                // try again a lock window later.
                missed = relockAfter - OffsetLock.window
            }
        }
        return anchors
    }

    /// Logged samples in a row without a twin where the followed offset puts them before the
    /// offset is locked again: a period is a few ms at most, so 16 are past a BLE batch's burst.
    static let relockAfter = 16

    /// The streamed sample with counts `raw` nearest to `time`, at most `within` away, that is
    /// not `excluded`.
    static func nearest(_ raw: RawVector, around time: Double, within: Double, _ streamed: [BackfillPlanner.StreamedSample],
                        _ index: StreamIndex, excluded: (Int) -> Bool) -> Int? {
        guard let candidates = index[raw] else { return nil }
        var low = 0, high = candidates.count
        while low < high {
            let mid = (low + high) / 2
            if Double(streamed[candidates[mid]].time) < time { low = mid + 1 } else { high = mid }
        }
        var after: Int?
        var i = low
        while i < candidates.count, Double(streamed[candidates[i]].time) - time <= within {
            if !excluded(candidates[i]) { after = candidates[i]; break }
            i += 1
        }
        var before: Int?
        i = low - 1
        while i >= 0, time - Double(streamed[candidates[i]].time) <= within {
            if !excluded(candidates[i]) { before = candidates[i]; break }
            i -= 1
        }
        guard let before else { return after }
        guard let after else { return before }
        return Double(streamed[after].time) - time < time - Double(streamed[before].time) ? after : before
    }

    /// The nearest anchor (index into `positions`) at or before log position `k`.
    func nearest(before k: Int) -> Int? {
        var low = 0, high = positions.count
        while low < high {
            let mid = (low + high) / 2
            if positions[mid] <= k { low = mid + 1 } else { high = mid }
        }
        return low > 0 ? low - 1 : nil
    }

    /// The nearest anchor at or after log position `k`.
    func nearest(after k: Int) -> Int? {
        guard let before = nearest(before: k) else { return positions.isEmpty ? nil : 0 }
        if positions[before] == k { return before }
        return before + 1 < positions.count ? before + 1 : nil
    }

    /// The time of log position `k` between anchors `a` and `b`. When the board sampled evenly
    /// from one to the other, `k`'s position spreads it over the stream's span between them.
    /// When the sensor was restarted between them (or an entry is missing), the samples of the
    /// anchors' own runs lie on their anchor's pace, and those of runs in between where their
    /// ticks put them: snapping them to the stream's grid of before the restart would move
    /// them by up to half a period, onto each other.
    func interpolate(_ k: Int, between a: Int, and b: Int, _ boot: BootLog, period: Double) -> Int64 {
        let pa = positions[a], pb = positions[b]
        let span = Double(times[b] - times[a])
        if runs.sameRun(pa, pb) {
            return times[a] + Int64((Double(k - pa) * span / Double(max(1, pb - pa))).rounded())
        }
        guard runs.resolvesPeriod else {
            let periods = max(1, (span / period).rounded())
            let tickStep = (ticks[pb] - ticks[pa]) / periods
            let n = ((ticks[k] - ticks[pa]) / tickStep).rounded()
            return times[a] + Int64((n * span / periods).rounded())
        }
        if runs.sameRun(k, pa) { return times[a] + Int64((Double(k - pa) * period).rounded()) }
        if runs.sameRun(k, pb) { return times[b] - Int64((Double(pb - k) * period).rounded()) }
        let tickPeriod = period * (ticks[pb] - ticks[pa]) / span
        let from = runs.evenTick(pa, tickPeriod: tickPeriod), to = runs.evenTick(pb, tickPeriod: tickPeriod)
        return times[a] + Int64(((runs.evenTick(k, tickPeriod: tickPeriod) - from) / (to - from) * span).rounded())
    }

    /// Whether ``interpolate(_:between:and:_:period:)`` places every position between anchors
    /// `a` and `b` by its position alone (one run of sampling from one to the other), each
    /// two nanoseconds or more after the one before.
    func interpolatesStraight(between a: Int, and b: Int) -> Bool {
        let pa = positions[a], pb = positions[b]
        return runs.sameRun(pa, pb) && Double(times[b] - times[a]) >= 2 * Double(max(1, pb - pa))
    }

    /// Whether ``extrapolate(_:from:_:period:)`` places every position of `stretch` by its
    /// position alone: the stream's period from anchor `a`, in one run with it.
    func extrapolatesStraight(_ stretch: ClosedRange<Int>, from a: Int) -> Bool {
        let pa = positions[a]
        return !runs.resolvesPeriod || (runs.sameRun(stretch.lowerBound, pa) && runs.sameRun(stretch.upperBound, pa))
    }

    /// Beyond the last (or before the first) anchor: the stream's period from anchor `a` for the
    /// samples of its run; the others (after a restart of the sensor) where their ticks put
    /// them, at the tick rate measured over up to 2,000 earlier anchors.
    func extrapolate(_ k: Int, from a: Int, _ boot: BootLog, period: Double) -> Int64 {
        let pa = positions[a]
        guard runs.resolvesPeriod, !runs.sameRun(k, pa) else { return times[a] + Int64((Double(k - pa) * period).rounded()) }
        let other = a >= positions.count / 2 ? max(0, a - 2000) : min(positions.count - 1, a + 2000)
        var tickPeriod = period
        if other != a {
            let periods = (Double(times[a] - times[other]) / period).rounded()
            if periods != 0 { tickPeriod = (ticks[pa] - ticks[positions[other]]) / periods }
        }
        let n = (runs.evenTick(k, tickPeriod: tickPeriod) - runs.evenTick(pa, tickPeriod: tickPeriod)) / tickPeriod
        return times[a] + Int64((n * period).rounded())
    }

    /// For every anchor with anchors 50 positions on both sides: |placed − streamed| when it
    /// is placed from those two alone, as if the 99 anchors between were a gap.
    func leaveOneOutErrors(_ boot: BootLog, period: Double) -> [Double] {
        let reach = 50
        guard positions.count > 2 * reach else { return [] }
        let stride = max(1, (positions.count - 2 * reach) / 500)
        return Swift.stride(from: reach, to: positions.count - reach, by: stride).map { i in
            let placed = interpolate(positions[i], between: i - reach, and: i + reach, boot, period: period)
            return Double(abs(placed - times[i]))
        }
    }
}
