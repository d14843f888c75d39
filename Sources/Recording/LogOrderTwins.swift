import MetaWear

/// The streamed twin of every logged sample of one boot that the stream carried, found in the
/// log's order rather than by time.
///
/// The anchor search (``BackfillAnchors``) takes a streamed sample as a logged one's twin only
/// within a few milliseconds of where the board's ticks put it. Next to a link drop the stream's
/// own times are off by more than that: a new link's timestamper starts from nothing (its first
/// points 70 ms early in the soak), or a reconnect's first notifications come as a burst with
/// equal times. A twin looked for by time alone was then missed and its logged sample went in
/// twice, and the gap's last samples, placed where their ticks put them, fell behind the early
/// first point after the gap and were dropped. But the log and the stream hold the board's
/// samples in the same order: between two anchors the streamed samples are twins of logged
/// samples between the anchors' log positions, and whatever of those has no twin is what the
/// link lost there. So each streamed sample after (before) a known twin takes the next logged
/// sample in log order with its raw counts, the one nearest where the ticks put it, within the
/// ticks' span from the known twin plus ``slack``. Across a link, the stream's time from the
/// known twin is no measure (each link's timestamper starts from nothing): the new link's
/// first twin is where a run of its samples is logged in the same order. Pure.
struct LogOrderTwins {
    /// The streamed index of each log position's twin (anchors included); nil: the stream
    /// lost that sample.
    private(set) var streamedIndex: [Int?]
    /// Log positions with a twin, ascending (their streamed indices ascend too).
    private(set) var known: [Int] = []
    /// Log positions whose twin was found here (not an anchor).
    private(set) var found: [Int] = []

    /// How much farther (nanoseconds) a twin's ticks may lie from a known twin's than the two
    /// streamed times do: a stream's times next to a drop are off by up to tens of milliseconds,
    /// and the board's crystal drifts up to 200 ppm (24 ms in the two minutes kept).
    static let slack = 250_000_000.0

    /// How many of a link's samples in a row its first twin is matched on (``Walk``'s run
    /// match), and the fewest that make a match.
    static let runLength = 8
    static let shortestRun = 3
    /// How many streamed samples of a new link are tried by run before the walk goes on by
    /// time alone (a log read before the link began holds none of its samples).
    static let triesAcrossLinks = 64

    /// Twins of `boot`'s samples in `streamed` (time order), from its `anchors`; streamed
    /// samples in `excluded` (another boot's anchors) are not taken, and a walk stops at one.
    init(_ boot: BootLog, anchors: BackfillAnchors, streamed: [BackfillPlanner.StreamedSample], excluded: Set<Int>) {
        streamedIndex = anchors.streamedIndex
        let positions = anchors.positions
        guard let first = positions.first, let last = positions.last, let firstStreamed = streamedIndex[first],
              let lastStreamed = streamedIndex[last] else { return }
        var walk = Walk(boot: boot, streamed: streamed, excluded: excluded)
        walk.match(from: (first, firstStreamed), forward: false, streamedUntil: -1, logUntil: -1)
        for (a, b) in zip(positions, positions.dropFirst()) {
            guard let sa = streamedIndex[a], let sb = streamedIndex[b], sb > sa + 1, b > a + 1 else { continue }
            if walk.pairsOneForOne(log: a..<b, streamed: sa..<sb) { continue }
            walk.match(from: (a, sa), forward: true, streamedUntil: sb, logUntil: b)
        }
        walk.match(from: (last, lastStreamed), forward: true, streamedUntil: streamed.count, logUntil: boot.samples.count)
        for (k, s) in walk.twins { streamedIndex[k] = s }
        found = walk.twins.map(\.0).sorted()
        known = streamedIndex.indices.filter { streamedIndex[$0] != nil }
    }

    /// The known twin at or before log position `k`, and the one at or after it.
    func neighbours(of k: Int) -> (before: Int?, after: Int?) {
        var low = 0, high = known.count
        while low < high {
            let mid = (low + high) / 2
            if known[mid] <= k { low = mid + 1 } else { high = mid }
        }
        let before = low > 0 ? known[low - 1] : nil
        if before == k { return (k, k) }
        return (before, low < known.count ? known[low] : nil)
    }

    /// One walk from a known twin along the stream and the log, in the same direction.
    private struct Walk {
        let boot: BootLog
        let streamed: [BackfillPlanner.StreamedSample]
        let excluded: Set<Int>
        var twins: [(Int, Int)] = []

        /// Between two anchors (log positions `log`, streamed indices `streamed`, each from the
        /// first anchor on) the stream holds as many samples as the log, with the same counts in
        /// the same order: it lost none there, and each is its logged sample's twin, whatever
        /// its time. A walk by time took a stationary board's repeated counts after a step of
        /// more than ``LogOrderTwins/slack`` in the stream's times (a stream restarted while its
        /// samples were only late: 1.7 s in the real-BlueZ VM) for the wrong samples, and their
        /// logged twins went in again beside them.
        mutating func pairsOneForOne(log: Range<Int>, streamed range: Range<Int>) -> Bool {
            guard log.count == range.count else { return false }
            for (k, s) in zip(log.dropFirst(), range.dropFirst()) where excluded.contains(s) || boot.samples[k].raw != streamed[s].raw {
                return false
            }
            twins += zip(log.dropFirst(), range.dropFirst()).map { ($0, $1) }
            return true
        }

        /// Matches the streamed samples after (`forward`) or before the known twin `from`
        /// (log position, streamed index), up to `streamedUntil` and `logUntil` (exclusive).
        mutating func match(from: (log: Int, streamed: Int), forward: Bool, streamedUntil: Int, logUntil: Int) {
            let step = forward ? 1 : -1
            var reference = from
            var cursor = from.log + step
            var s = from.streamed + step
            var triedAcrossLinks = 0
            var triedByRun = 0
            while s != streamedUntil, cursor != logUntil, !excluded.contains(s) {
                // Nanoseconds from the reference, counted away from it.
                let elapsed = Double(step) * Double(streamed[s].time - streamed[reference.streamed].time)
                var best: (k: Int, error: Double)?
                if streamed[s].link != streamed[reference.streamed].link, triedAcrossLinks < LogOrderTwins.triesAcrossLinks {
                    triedAcrossLinks += 1
                    best = runTwin(of: s, elapsed: elapsed, reference: reference.log, cursor: cursor, step: step,
                                   streamedUntil: streamedUntil, logUntil: logUntil)
                }
                if best == nil {
                    best = nearTwin(of: s, elapsed: elapsed, reference: reference.log, cursor: cursor, step: step, logUntil: logUntil)
                }
                // None where the stream's time from the reference puts it: the stream's times
                // there may be off by more than the slack within one link too. A stall shorter
                // than the timestamper's lookahead that the stream's end (a stop, a restart)
                // follows before its step is confirmed leaves the samples after it stamped as if
                // none were missing, the stall's length early (soak seed 2112: 0.88 s, and the
                // stall's 88 logged samples were lost, 23 streamed after it stored twice). The
                // samples themselves say where it is logged.
                if best == nil, triedByRun < LogOrderTwins.triesAcrossLinks {
                    triedByRun += 1
                    best = runTwin(of: s, elapsed: elapsed, reference: reference.log, cursor: cursor, step: step,
                                   streamedUntil: streamedUntil, logUntil: logUntil)
                }
                if let best {
                    twins.append((best.k, s))
                    reference = (best.k, s)
                    cursor = best.k + step
                    triedAcrossLinks = 0
                    triedByRun = 0
                }
                s += step
            }
        }

        /// The logged sample with `s`'s raw counts nearest where the ticks put it, at most
        /// ``LogOrderTwins/slack`` beyond the stream's time from the reference.
        private func nearTwin(of s: Int, elapsed: Double, reference: Int, cursor: Int, step: Int,
                              logUntil: Int) -> (k: Int, error: Double)? {
            let raw = streamed[s].raw
            // The boot's arrays in locals: a walk past the log's end goes through all of it.
            let samples = boot.samples, bootTicks = boot.ticks
            let from = bootTicks[reference], limit = elapsed + LogOrderTwins.slack
            var best: (k: Int, error: Double)?
            var k = cursor
            while k != logUntil {
                let ticks = Double(step) * (bootTicks[k] - from)
                if ticks > limit { break }
                if samples[k].raw == raw, abs(ticks - elapsed) < best?.error ?? .infinity { best = (k, abs(ticks - elapsed)) }
                k += step
            }
            return best
        }

        /// The twin of `s`, the first sample (in the walk's direction) of another link than the
        /// reference's, found by the samples themselves: the log position where the run of the
        /// link's samples from `s` on (up to ``LogOrderTwins/runLength``) is logged in the same
        /// order, the nearest to where the ticks put it if several are. The stream's time from
        /// the reference is no measure here: each link's timestamper starts from nothing, and
        /// the link before may have been stamped late by a false gap (real-BlueZ VM run 8: the
        /// new link's first sample 0.35 s nearer the last twin than the ticks say, beyond the
        /// slack, so every logged sample after the drop went in as unstreamed, 0.6 s early).
        private func runTwin(of s: Int, elapsed: Double, reference: Int, cursor: Int, step: Int, streamedUntil: Int,
                             logUntil: Int) -> (k: Int, error: Double)? {
            var run = [streamed[s].raw]
            var j = s + step
            while run.count < LogOrderTwins.runLength, j != streamedUntil, !excluded.contains(j),
                  streamed[j].link == streamed[s].link {
                run.append(streamed[j].raw)
                j += step
            }
            guard run.count >= LogOrderTwins.shortestRun else { return nil }
            let samples = boot.samples
            var best: (k: Int, error: Double)?
            var k = cursor
            while k != logUntil {
                var matched = 0
                var p = k
                while matched < run.count, p != logUntil, samples[p].raw == run[matched] {
                    matched += 1
                    p += step
                }
                if matched == run.count {
                    let error = abs(Double(step) * (boot.ticks[k] - boot.ticks[reference]) - elapsed)
                    if error < best?.error ?? .infinity { best = (k, error) }
                }
                k += step
            }
            return best
        }
    }
}
