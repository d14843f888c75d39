/// What the segment journal holds of a board's accelerometer readings, so a recovered session
/// keeps every reading that was accepted (issue 21).
///
/// Most points are journaled provisionally, while their sample is still held for the time fit
/// or a fix, before they are committed; the committed form then goes only into the chunk, at
/// the seal. A provisional point's accelerometer reading may not have arrived yet, or the final
/// times may pair it with a neighbouring sample. This keeps the reading each provisionally
/// journaled point carries, by index, and collects the committed points whose reading differs
/// from it: those are journaled again (a later record of an index replaces an earlier one in
/// recovery), so the journal ends up with what the chunk will hold. Only such points cost a
/// second record; points that kept their reading cost nothing more.
struct JournaledReadings {
    /// Committed points to journal again, with consecutive indices.
    struct Run {
        var firstIndex: Int
        var bytes: [UInt8] = []
        var count = 0
        var timeSource: TimeSource
    }

    /// The reading of each provisionally journaled point, from index `start` on.
    private var readings: [AccelerometerReading?] = []
    private var start = 0
    /// Committed points whose journaled reading differs, not yet journaled again.
    private(set) var runs: [Run] = []

    /// Provisional points with these readings were journaled at the indices from `first` on;
    /// the points below `committed` are committed (their entries are no longer needed).
    mutating func journaled(_ new: [AccelerometerReading?], from first: Int, committed: Int) {
        let drop = min(readings.count, max(0, committed - start))
        if drop > 0 {
            readings.removeFirst(drop)
            start += drop
        }
        // Indices are journaled in order; anything else (a hold rewrote them) starts afresh.
        if readings.isEmpty || start + readings.count != first {
            readings.removeAll(keepingCapacity: true)
            start = first
        }
        readings += new
    }

    /// Points journaled provisionally before, from index `first` on, as they are now: those
    /// whose reading came since (or changed) are journaled again, still provisional.
    mutating func stillProvisional(_ points: ArraySlice<RecordedPoint>, from first: Int, source: TimeSource) {
        for (k, point) in zip(first..., points) where differs(point, at: k) {
            var bytes: [UInt8] = []
            PointCodec.append(point, to: &bytes)
            committed(point, at: k, bytes: bytes[...], source: source)
        }
    }

    private func differs(_ point: RecordedPoint, at index: Int) -> Bool {
        let k = index - start
        return k >= 0 && k < readings.count && readings[k] != point.accelerometer
    }

    /// The point at `index` is committed as `point` (encoded as `bytes`): journaled again when
    /// it was journaled provisionally with another reading.
    mutating func committed(_ point: RecordedPoint, at index: Int, bytes: ArraySlice<UInt8>, source: TimeSource) {
        guard differs(point, at: index) else { return }
        readings[index - start] = point.accelerometer
        if let last = runs.last, last.firstIndex + last.count == index {
            runs[runs.count - 1].bytes += bytes
            runs[runs.count - 1].count += 1
            runs[runs.count - 1].timeSource = max(last.timeSource, source)
        } else {
            runs.append(Run(firstIndex: index, bytes: Array(bytes), count: 1, timeSource: source))
        }
    }

    /// Moves the readings journaled and the points to journal again `offset` ms later.
    mutating func shift(by offset: Double) {
        for k in readings.indices { readings[k]?.timestamp += offset }
        for k in runs.indices {
            guard let bytes = PointCodec.shifted(runs[k].bytes, by: offset) else { continue }
            runs[k].bytes = bytes
            runs[k].timeSource = runs[k].timeSource.convertedWithTheFirstFix
        }
    }

    /// The runs are in the journal, or in a sealed chunk.
    mutating func runsStored() {
        runs.removeAll()
    }

    /// The indices no longer hold the points the readings were journaled with (a released
    /// hold wrote its points at their final indices): nothing is known about them.
    mutating func forget() {
        readings.removeAll()
        start = 0
    }
}
