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
    private let logged: [LoggedSample]
    /// Positions in the log of the samples whose counts occur once in it: a board at rest
    /// repeats its readings, and a repeated count names no one sample.
    private var once: [RawVector: Int] = [:]
    private var repeated: Set<RawVector> = []
    /// Each boot's first and last sample in the log, in the log's (readout, oldest first) order.
    private var boots: [(uid: UInt8, first: UInt32, last: UInt32)] = []
    /// Position of each logged sample in the log.
    private var positions: [BackfillKey: Int] = [:]

    init(_ logged: [LoggedSample]) {
        self.logged = logged
        for (position, sample) in logged.enumerated() {
            positions[BackfillKey(sample)] = positions[BackfillKey(sample)] ?? position
            if boots.last?.uid == sample.resetUID { boots[boots.count - 1].last = sample.tick } else {
                boots.append((sample.resetUID, sample.tick, sample.tick))
            }
            guard !repeated.contains(sample.raw) else { continue }
            if once.updateValue(position, forKey: sample.raw) != nil {
                once[sample.raw] = nil
                repeated.insert(sample.raw)
            }
        }
    }

    /// The logged sample with the counts `raw`, when the log holds exactly one.
    func sample(_ raw: RawVector) -> LoggedSample? { once[raw].map { logged[$0] } }

    /// Whether the samples with the counts `first` and `next` (each once in the log) are
    /// neighbours in one boot's log, `next` right after `first`: the board took none between.
    func follow(_ first: RawVector, _ next: RawVector) -> Bool { span(first, next) != nil }

    /// How long after `first` the board took `next` by its ticks, ms, when they are neighbours
    /// in one boot's log (``follow(_:_:)``): a period, or more where its sensor paused between.
    func span(_ first: RawVector, _ next: RawVector) -> Double? {
        guard let a = once[first], let b = once[next], b == a + 1, logged[a].resetUID == logged[b].resetUID else { return nil }
        return BoardTicks.milliseconds(UInt64(logged[b].tick &- logged[a].tick))
    }

    /// Samples the board took strictly between the logged samples `first` and `last`: in one
    /// boot, those the log holds between them (by their ticks, at `periodMs` ms a sample, when
    /// the log does not hold both). Nil when they are out of order, or (in one boot) the
    /// ticks disagree with the stream's span (`spanByTime`, ms) by more than
    /// ``edgeTickTolerance``: the times count then.
    ///
    /// Across a reset (the board's tick counter starts again at 0 under the next reset UID, and
    /// the board takes no sample until a link starts its sensors again): the samples of `first`'s
    /// boot after it, those of `last`'s boot before it, and every sample of a boot between, as
    /// the log holds them. Counted from the times, the reset's pause and a clock stepped between
    /// two gateways were counted missing. No tolerance applies: the stream's span is on no
    /// clock the ticks share.
    func samplesBetween(_ first: BackfillKey, _ last: BackfillKey, spanByTime: Double, periodMs: Double) -> Int? {
        func samples(after a: UInt32, through b: UInt32) -> Int { Int((BoardTicks.milliseconds(UInt64(b - a)) / periodMs).rounded()) }
        guard first.resetUID != last.resetUID else {
            guard last.tick > first.tick else { return nil }
            let span = BoardTicks.milliseconds(UInt64(last.tick - first.tick))
            // A log sample with an edge's counts that is not that sample (the edge trimmed away)
            // puts the span far off the times; a late-stamped link moves them by far less.
            guard abs(span - spanByTime) <= Self.edgeTickTolerance else { return nil }
            // The log holds every sample the board took while it logged, and a session never
            // pauses its logging: the samples between two of one boot are those the log holds
            // between them. Ticks without samples are a sensor pause (a stream restart stops
            // the gyro for 0.2-0.5 s), no loss; counted from the ticks, a restart gap called
            // them missing where a held gap (its log neighbours) did not.
            if let a = positions[first], let b = positions[last], b > a,
               logged[a..<b].allSatisfy({ $0.resetUID == first.resetUID }) {
                return b - a - 1
            }
            return GapCount.missed(stepMs: span, periodMs: periodMs)
        }
        guard let from = boots.lastIndex(where: { $0.uid == first.resetUID && $0.first <= first.tick && first.tick <= $0.last }),
              let to = boots.indices.last(where: { $0 > from && boots[$0].uid == last.resetUID
                                                    && boots[$0].first <= last.tick && last.tick <= boots[$0].last })
        else { return nil }
        var count = samples(after: first.tick, through: boots[from].last) + samples(after: boots[to].first, through: last.tick)
        for boot in boots[(from + 1)..<to] { count += samples(after: boot.first, through: boot.last) + 1 }
        return count
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
