import MetaWear

/// How far a restart gap's stored tail lies off the new stream's clock.
///
/// The interrupted session's points were timed by the gateway that died; converted back to
/// this process's monotonic clock they are off by whatever the two processes' epoch mappings
/// differ by (a GNSS correction estimated from a few delayed reports at start: 1.5 s seen in
/// the soak). The backfill planner then finds no anchor in the tail (it looks within a second
/// of the board clock's prediction), extrapolates the gap from the new stream alone and puts
/// samples the tail holds in again, a second and a half later. The board clock relates both:
/// a logged sample whose raw counts occur once in the log and once in the tail (or the new
/// stream) gives the stored (streamed) time of that sample against its tick; the difference
/// of the two medians is the tail's offset. The log is read oldest first, so its first pages
/// hold no sample of the new stream yet: then the board clock read at connect stands for the
/// stream (it is off by the link's latency, which the planner's anchor search allows for). Pure.
enum StoredTailAlignment {
    /// Offsets below this are left alone, for a sensor sampling every `period` nanoseconds:
    /// half a period, the least that moves a sample onto its neighbour's time. The planner's
    /// anchor search would find the tail's samples at any offset under a second, but a tail and
    /// a new stream that disagree by whole periods place the gap between them on one clock or
    /// the other, so its first or last samples fall onto stored ones and are dropped (the
    /// make-test soak, seed 20261121: a restarted gateway 100 ms off lost 10 samples a board
    /// when only offsets of 250 ms and more were corrected). Both medians are measured against
    /// the same board clock reading, so its link latency cancels out.
    static func threshold(period: Double) -> Int64 { Int64(period / 2) }

    /// Nanoseconds to add to `stored` times to put them on `streamed`'s clock; 0 with fewer
    /// than `minimumMatches` unambiguous matches in the tail, or when the offset is under
    /// `threshold` (``threshold(period:)``: nothing to correct).
    static func offset(stored: [BackfillPlanner.StreamedSample], streamed: [BackfillPlanner.StreamedSample],
                       logged: LoggedTimes, threshold: Int64, minimumMatches: Int = 5) -> Int64 {
        let predicted = logged.predicted, ambiguous = logged.ambiguous
        func medianOffset(_ samples: [BackfillPlanner.StreamedSample]) -> Int64? {
            var seen: [RawVector: Int] = [:]
            for s in samples { seen[s.raw, default: 0] += 1 }
            var offsets: [Int64] = []
            for s in samples where seen[s.raw] == 1 && !ambiguous.contains(s.raw) {
                if let time = predicted[s.raw] { offsets.append(time - s.time) }
            }
            guard offsets.count >= minimumMatches else { return nil }
            offsets.sort()
            return offsets[offsets.count / 2]
        }
        guard let tail = medianOffset(stored) else { return 0 }
        let offset = tail - (medianOffset(streamed) ?? 0)
        return abs(offset) >= threshold ? offset : 0
    }

    /// Where the board clock read puts each raw value of a log (the last sample with it), and the
    /// values logged more than once, taken in page by page as the log is read: taken in again
    /// from the whole log on every page, a long readout's pages each cost more than the last.
    struct LoggedTimes {
        private(set) var predicted: [RawVector: Int64] = [:]
        private(set) var ambiguous: Set<RawVector> = []
        private var origins: [UInt8: Int64] = [:]
        private var taken = 0

        /// Takes in what `logged` holds beyond what it took before (all of it again when its
        /// boot origins changed: every time moves with them).
        mutating func take(_ logged: LoggedSamples) {
            if logged.bootOrigins != origins || logged.samples.count < taken {
                self = LoggedTimes()
                origins = logged.bootOrigins
            }
            for sample in logged.samples[taken...] {
                guard let origin = origins[sample.resetUID] else { continue }
                let time = BackfillPlanner.time(ofTick: sample.tick, origin: origin)
                if predicted.updateValue(time, forKey: sample.raw) != nil { ambiguous.insert(sample.raw) }
            }
            taken = logged.samples.count
        }
    }
}
