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
    /// Offsets below this are left alone: the planner finds anchors within a second of the
    /// board clock's prediction, and the tail's own times are what the session holds.
    static let threshold: Int64 = 250_000_000

    /// Nanoseconds to add to `stored` times to put them on `streamed`'s clock; 0 with fewer
    /// than `minimumMatches` unambiguous matches in the tail, or when the offset is under
    /// `threshold` (within what the planner's anchor search allows: nothing to correct).
    static func offset(stored: [BackfillPlanner.StreamedSample], streamed: [BackfillPlanner.StreamedSample],
                       logged: [LoggedSample], bootOrigins: [UInt8: Int64], threshold: Int64,
                       minimumMatches: Int = 5) -> Int64 {
        var predicted: [RawVector: Int64] = [:]
        var ambiguous: Set<RawVector> = []
        for sample in logged {
            guard let origin = bootOrigins[sample.resetUID] else { continue }
            let time = origin + Int64(BoardTicks.milliseconds(UInt64(sample.tick)) * 1e6)
            if predicted.updateValue(time, forKey: sample.raw) != nil { ambiguous.insert(sample.raw) }
        }
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
}
