import MetaWear

/// Filling the gaps of a board's stream from its flash log (issue 21 part 2).
///
/// A board that logs while it streams keeps every sample the link missed. After a gap, the
/// board's points are held (not committed) until the download of its log arrives, at most
/// ``Configuration/backfillWait``; the logged samples that fall into the gap are placed on the
/// streamed time base by ``BackfillPlanner`` and committed in time order before the held
/// points, so they land in the open chunk before it is sealed. Each is marked `backfilled`;
/// the gap marks then count only what the log did not have.
extension SessionController {
    /// What one backfill did.
    public struct BackfillOutcome: Hashable, Sendable {
        /// Logged samples merged into the session (each a new point marked `backfilled`).
        public var filled = 0
        /// Samples still missing in the gaps that were waiting (log full, board reset).
        public var stillMissing = 0
        /// Logged samples that were also streamed (nothing to add).
        public var alreadyStreamed = 0
        /// Logged samples outside the waiting gap: before it (already committed: a correction
        /// would be needed) or after the stream received so far.
        public var outsideGap = 0
        /// Logged samples the planner could not place (no anchor, no board clock).
        public var unplaced = 0
        /// Logged samples dropped because a streamed or another logged sample holds their time.
        public var collisions = 0

        /// Nothing filled yet.
        public init() {}
    }

    /// Whether `board` keeps a flash log that fills its gaps: its points after a gap are then
    /// held for ``backfill(board:logged:bootOrigins:)``. Turning it off commits what is held.
    public func expectBackfill(board: String, _ expected: Bool) {
        if expected { backfillBoards.insert(board) } else { backfillBoards.remove(board) }
        boards[board]?.backfillExpected = expected
        if !expected { releaseHold(board: board, backfilled: []) }
    }

    /// Boards whose points started waiting for a backfill since the last call: download their
    /// flash logs and hand the samples to ``backfill(board:logged:bootOrigins:)``.
    public func takeBackfillRequests() -> [String] {
        defer { backfillRequests.removeAll() }
        return backfillRequests.sorted()
    }

    /// Whether `board`'s points are held waiting for a backfill.
    public func isWaitingForBackfill(board: String) -> Bool { boards[board]?.hold != nil }

    /// Gyro samples downloaded from `board`'s flash log, in readout order. Those inside the gap
    /// its held points wait on are merged before them; the held points are then committed.
    /// `bootOrigins` are where each boot's tick 0 lies on the monotonic clock (the board clock
    /// read at connect), by reset UID.
    @discardableResult
    public func backfill(board: String, logged: [LoggedSample], bootOrigins: [UInt8: Int64]) -> BackfillOutcome {
        var outcome = BackfillOutcome()
        guard let stream = boards[board], let hold = stream.hold, let window = streamed[board], let scale = window.gyroScale else {
            return outcome
        }
        let period = 1e9 / stream.gyroRate
        let planner = BackfillPlanner(nominalPeriod: period, bootOrigins: bootOrigins)
        let plan = planner.plan(streamed: window.samples, logged: logged)
        outcome.alreadyStreamed = plan.alreadyStreamed
        outcome.unplaced = plan.unplaced
        outcome.collisions = plan.collisions
        let after = hold.after ?? -Double.infinity
        let until = hold.points.last?.point.gyroscope.timestamp ?? after
        let halfPeriod = 500 / stream.gyroRate
        var points: [RecordedPoint] = []
        for sample in plan.backfilled {
            let time = timeBase.epochMilliseconds(monotonic: sample.time)
            guard time > after + halfPeriod, time < until - halfPeriod else { outcome.outsideGap += 1; continue }
            let value = MotionSamples(single: sample.raw, scale: scale)[0]
            let located = stream.merger.locate(GyroItem(sample: value, missedBefore: 0, source: timeBase.source), time)
            points.append(RecordedPoint(gyroscope: GyroReading(value, timestamp: time), location: located.location,
                                        missingLocation: located.missing, backfilled: true))
        }
        outcome.filled = points.count
        outcome.stillMissing = releaseHold(board: board, backfilled: points)
        return outcome
    }

    /// Commits the held points of `board` with `backfilled` merged in time order; the gap
    /// marks next to backfilled points are counted again from the times. Returns the samples
    /// still missing in the held stretch.
    @discardableResult
    func releaseHold(board: String, backfilled: [RecordedPoint]) -> Int {
        guard let stream = boards[board], let hold = stream.hold else { return 0 }
        boards[board]?.hold = nil
        let period = 1000 / stream.gyroRate
        var merged = hold.points
        merged.append(contentsOf: backfilled.map { ($0, timeBase.source) })
        merged.sort { $0.point.gyroscope.timestamp < $1.point.gyroscope.timestamp }
        var previous = hold.after
        var previousBackfilled = false
        var missing = 0
        for (point, source) in merged {
            var p = point
            let time = p.gyroscope.timestamp
            if p.backfilled || previousBackfilled, let previous {
                let step = time - previous
                p.missedBefore = max(0, Int((step / period).rounded()) - 1)
                p.gapMilliseconds = p.missedBefore > 0 ? max(1, Int(step.rounded())) : 0
            }
            missing += p.missedBefore
            previous = time
            previousBackfilled = p.backfilled
            if commit(board: board, point: p, source: source) { sealOpenChunk(board: board) }
        }
        return missing
    }

    /// Keeps the streamed samples (raw counts at their monotonic times) for matching.
    func rememberStreamed(board: String, _ stamped: [SampleTimestamper<MotionSamples>.Stamped]) {
        guard backfillBoards.contains(board) else { return }
        var window = streamed[board] ?? StreamedWindow()
        for s in stamped {
            window.gyroScale = s.payload.scale
            for (k, t) in s.times.enumerated() { window.append(BackfillPlanner.StreamedSample(time: t, raw: s.payload.raw(k))) }
        }
        streamed[board] = window
    }
}
