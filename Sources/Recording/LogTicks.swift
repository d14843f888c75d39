import MetaWear

/// Where a board's own samples lie on its clock: the logged samples of a readout by their raw
/// counts, to find a gap's edge samples (streamed or stored, so known by their counts) in the
/// log, and how many samples the board took between two of them by their ticks.
///
/// The stream's times are the host's: a new link stamped late (a host that fell behind, a slower
/// notification path) moves a gap's end by as much, and counted by the times the periods it
/// moved were reported missing though the log filled every sample. Restart, stop and held gaps
/// all count by these ticks, where the log holds both edges.
struct LogTicks {
    /// Samples whose counts occur once in the log: a board at rest repeats its readings, and a
    /// repeated count names no one sample.
    private var once: [RawVector: LoggedSample] = [:]
    private var repeated: Set<RawVector> = []

    init(_ logged: [LoggedSample]) {
        for sample in logged where !repeated.contains(sample.raw) {
            if once.updateValue(sample, forKey: sample.raw) != nil {
                once[sample.raw] = nil
                repeated.insert(sample.raw)
            }
        }
    }

    /// The logged sample with the counts `raw`, when the log holds exactly one.
    func sample(_ raw: RawVector) -> LoggedSample? { once[raw] }

    /// Samples the board took strictly between `first` and `last` (logged samples, or the
    /// key of one), by their ticks, at `periodMs` ms a sample. Nil when they lie in different
    /// boots, out of order, or the ticks disagree with the stream's span (`spanByTime`, ms) by
    /// more than ``edgeTickTolerance``: the times count then.
    static func samplesBetween(_ first: BackfillKey, _ last: BackfillKey, spanByTime: Double, periodMs: Double) -> Int? {
        guard first.resetUID == last.resetUID, last.tick > first.tick else { return nil }
        let span = BoardTicks.milliseconds(UInt64(last.tick - first.tick))
        // A log sample with an edge's counts that is not that sample (the edge trimmed away)
        // puts the span far off the times; a late-stamped link moves them by far less.
        guard abs(span - spanByTime) <= edgeTickTolerance else { return nil }
        return max(0, Int((span / periodMs).rounded()) - 1)
    }

    /// Largest difference, ms, between a gap's span by the log's ticks and by the stream's
    /// times for the ticks to count: a link stamped 0.6 s late has been seen (the real-BlueZ
    /// VM's run 8, docs/bluez-vm.md); a wrong edge lies anywhere in the log.
    static let edgeTickTolerance = 2000.0
}

extension BackfillKey {
    /// The key of a logged sample.
    init(_ sample: LoggedSample) { self.init(resetUID: sample.resetUID, tick: sample.tick) }
}

extension StreamedWindow {
    /// The counts of the streamed sample nearest monotonic `time`, within half a period of
    /// `periodMs` ms.
    func raw(near time: Int64, periodMs: Double) -> RawVector? {
        guard let nearest = samples.min(by: { abs($0.time - time) < abs($1.time - time) }),
              Double(abs(nearest.time - time)) < periodMs * 500_000 else { return nil }
        return nearest.raw
    }
}
