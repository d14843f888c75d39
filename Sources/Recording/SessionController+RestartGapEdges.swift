import MetaWear

/// How many samples a restart (or stop) gap spans, by the board's own clock.
extension SessionController {
    /// Samples the board took strictly between a restart gap's two edges, the stored or
    /// streamed samples at `from` and `until` (epoch ms on the new stream's clock; the stored
    /// tail is moved onto it by `shift` ms), counted from the log's ticks of those two samples,
    /// found by their raw counts (``LogTicks``), also across a board reset. Nil when the log does
    /// not hold both edges once each (trimmed past one, counts that repeat) or the ticks cannot
    /// count them: the times count then.
    func samplesBetweenEdgesByTicks(_ pending: PendingRestartGap, from: Double, until: Double, shift: Double,
                                    window: StreamedWindow, scale: Double, periodMs: Double) -> Int? {
        func stored(at time: Double, in points: [RecordedPoint], shifted offset: Double) -> RawVector? {
            points.first { abs($0.gyroscope.timestamp + offset - time) < 0.001 }.map {
                RawVector(stored: $0.gyroscope, scale: scale)
            }
        }
        func streamed(at time: Double) -> RawVector? {
            window.raw(near: timeBase.monotonic(epochMilliseconds: time), periodMs: periodMs)
        }
        let log = LogTicks(pending.logged.samples)
        guard let before = stored(at: from, in: pending.gap.tail, shifted: shift) ?? streamed(at: from),
              let after = stored(at: until, in: pending.gap.tail, shifted: shift) ?? stored(at: until, in: pending.gap.head, shifted: 0)
                ?? streamed(at: until),
              let first = log.sample(before), let last = log.sample(after)
        else { return nil }
        return log.samplesBetween(BackfillKey(first), BackfillKey(last), spanByTime: until - from, periodMs: periodMs)
    }
}
