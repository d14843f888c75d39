import MetaWear

/// Where a boot's log runs through a stretch of the stream with no sample: the walk for anchors
/// (``BackfillAnchors/find(_:in:index:origin:tolerance:period:)``) can find no twin there, nor a
/// relock near the offset it follows, so it need not look sample by sample. A gap's middle, or
/// the minutes a gateway was down, is most of a long readout's log, and looking up each of its
/// samples on every page made each page cost as much as the whole log read so far. Pure.
struct StreamHole {
    /// The streamed samples, in time order.
    let streamed: [BackfillPlanner.StreamedSample]
    /// Nanoseconds from a sample's predicted time within which the walk may still find a twin
    /// or a relock near the offset it follows: the clock read's tolerance and
    /// ``BackfillPlanner/reachMargin`` (the reach ``BackfillPlanner/streamed(_:near:)`` cuts the
    /// stream to), or the walk's own allowance when that is wider, and a second for the ticks'
    /// jitter.
    let margin: Double
    /// The first streamed sample at or after the last predicted time less the reach.
    private var next = 0
    /// Where the run of samples predicted into the hole began, and the offset that predicted it.
    private var since: (position: Int, offset: Double)?

    init(streamed: [BackfillPlanner.StreamedSample], margin: Double) {
        self.streamed = streamed
        self.margin = margin
    }

    /// How far (exclusive) the walk at log position `k`, following `offset` (streamed time −
    /// tick), may go on by counting misses: once it has gone ``BackfillAnchors/relockAfter``
    /// samples into a stretch predicted beyond the reach of every streamed sample, up to a
    /// relock's window and its misses before the stretch ends, so every relock tried in between
    /// looks only at samples inside it. Nil: look at `k`.
    mutating func skippable(from k: Int, ticks: [Double], offset: Double, allowed: (Int) -> Double) -> Int? {
        func reach(_ k: Int) -> Double { max(margin, allowed(k)) + 1e9 }
        let predicted = ticks[k] + offset
        let low = predicted - reach(k)
        while next < streamed.count, Double(streamed[next].time) < low { next += 1 }
        while next > 0, Double(streamed[next - 1].time) >= low { next -= 1 }
        let nextTime = next == streamed.count ? Double.infinity : Double(streamed[next].time)
        guard nextTime > predicted + reach(k) else {
            since = nil
            return nil
        }
        if since.map({ $0.offset != offset || $0.position > k }) ?? true { since = (k, offset) }
        guard let since, k - since.position >= BackfillAnchors.relockAfter else { return nil }
        // The stretch ends before the first position predicted within the reach of the next
        // streamed sample: ticks rise through a boot (but for a tick of jitter, which the
        // reach's second covers).
        var first = k, last = ticks.count
        while first < last {
            let mid = (first + last) / 2
            if ticks[mid] + offset + reach(mid) < nextTime { first = mid + 1 } else { last = mid }
        }
        let end = first == ticks.count ? first : first - OffsetLock.window - BackfillAnchors.relockAfter
        return end > k ? end : nil
    }
}
