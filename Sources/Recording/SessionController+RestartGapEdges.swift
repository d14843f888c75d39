import MetaWear

/// How many samples a restart (or stop) gap spans, by the board's own clock.
extension SessionController {
    /// Samples the board took strictly between a restart gap's two edges, the stored or
    /// streamed samples at `from` and `until` (epoch ms on the new stream's clock; the stored
    /// tail is moved onto it by `shift` ms), counted from the log's ticks of those two samples,
    /// found by their raw counts. The stream's times are the host's: a new link stamped late
    /// moves `until` by as much, and the periods it moved were counted missing though the log
    /// filled every sample. Nil when the log does not hold both edges once each (trimmed past
    /// one, counts that repeat), they lie in different boots, or the ticks disagree with the
    /// times by more than ``edgeTickTolerance``: the times count then.
    func samplesBetweenEdgesByTicks(_ pending: PendingRestartGap, from: Double, until: Double, shift: Double,
                                    window: StreamedWindow, scale: Double, periodMs: Double) -> Int? {
        func stored(at time: Double, in points: [RecordedPoint], shifted offset: Double) -> RawVector? {
            points.first { abs($0.gyroscope.timestamp + offset - time) < 0.001 }.map {
                RawVector(stored: $0.gyroscope, scale: scale)
            }
        }
        func streamed(at time: Double) -> RawVector? {
            let monotonic = timeBase.monotonic(epochMilliseconds: time)
            guard let nearest = window.samples.min(by: { abs($0.time - monotonic) < abs($1.time - monotonic) }),
                  Double(abs(nearest.time - monotonic)) < periodMs * 500_000 else { return nil }
            return nearest.raw
        }
        func logged(_ raw: RawVector) -> LoggedSample? {
            let matches = pending.logged.samples.filter { $0.raw == raw }
            return matches.count == 1 ? matches[0] : nil
        }
        guard let before = stored(at: from, in: pending.gap.tail, shifted: shift) ?? streamed(at: from),
              let after = stored(at: until, in: pending.gap.tail, shifted: shift) ?? stored(at: until, in: pending.gap.head, shifted: 0)
                ?? streamed(at: until),
              let first = logged(before), let last = logged(after), first.resetUID == last.resetUID, last.tick > first.tick
        else { return nil }
        let span = BoardTicks.milliseconds(UInt64(last.tick - first.tick))
        // A log sample with an edge's counts that is not that sample (the edge trimmed away)
        // puts the span far off the times; a late-stamped link moves them by far less.
        guard abs(span - (until - from)) <= Self.edgeTickTolerance else { return nil }
        return max(0, Int((span / periodMs).rounded()) - 1)
    }

    /// Largest difference, ms, between a gap's span by the log's ticks and by the stream's
    /// times for the ticks to count: a link stamped 0.6 s late has been seen (the real-BlueZ
    /// VM's run 8, docs/bluez-vm.md); a wrong edge lies anywhere in the log.
    static let edgeTickTolerance = 2000.0
}
