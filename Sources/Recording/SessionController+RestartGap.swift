import MetaWear

/// Filling the gap a gateway restart left (kill -9, power loss; issue 21): the board kept
/// logging while no gateway listened, startup recovery sealed the interrupted session up to its
/// last stored point, and on the board's first stream after the restart its log is read. The
/// logged samples are matched with the session's stored tail and the new stream (the anchors),
/// placed on the streamed time base, and those between the tail's last point and the new
/// stream's first sample are sealed into the interrupted session as correction chunks (its
/// records document names every chunk of the session), each marked `backfilled`. Until then the
/// board's log is not trimmed, so nothing of the gap is deleted before it is stored.
extension SessionController {
    /// The restart gaps of the sessions startup recovery closed, one per board: each is filled
    /// from the board's flash log once it streams again.
    public func expectRestartBackfill(_ gaps: [RestartGap]) {
        for gap in gaps where gap.after != nil { restartGaps[gap.board] = PendingRestartGap(gap) }
    }

    /// Whether a restart gap of `board` still waits for its flash log.
    public func isWaitingForRestartBackfill(board: String) -> Bool { restartGaps[board] != nil }

    /// Whether the stopped session `sessionID` still has a gap its boards' flash logs are read
    /// for (a restart gap, or a gap its stop came too early for): its survey had better wait,
    /// since a correction chunk sealed after the survey would not be named by its records.
    public func hasPendingCorrections(sessionID: String) -> Bool {
        restartGaps.values.contains { $0.gap.sessionID == sessionID }
    }

    /// The session stops while `board`'s points after a gap wait for the download that fills
    /// it: the held points are committed with the gap marked (the stop does not wait), and the
    /// gap is kept, to be filled like a restart gap: its samples are sealed into the stopped
    /// session as correction chunks once the log arrives (before the survey, which waits a
    /// while for it). Nil when nothing waits, the gap has no start, or a restart gap of the
    /// board still waits (one gap a board is kept).
    func keepStopGap(board: String, sessionID: String) -> PendingRestartGap? {
        guard restartGaps[board] == nil, let stream = boards[board], let hold = stream.hold, let after = hold.after,
              let first = hold.points.first else { return nil }
        var pending = PendingRestartGap(RestartGap(sessionID: sessionID, board: board, nextSeq: 0, tail: [], after: after))
        pending.streamResumedAt = timeBase.monotonic(epochMilliseconds: first.point.gyroscope.timestamp)
        pending.logged = hold.logged
        pending.stoppedStream = (stream.gyroRate, stream.merger)
        return pending
    }

    /// The stop sealed `board`'s last chunk: its kept gap (``keepStopGap(board:sessionID:)``)
    /// waits for the log, its correction chunks numbered after that chunk.
    func waitForStopGap(_ kept: PendingRestartGap?, board: String) {
        guard var kept else { return }
        kept.gap.nextSeq = boards[board]?.seq ?? kept.gap.nextSeq
        restartGaps[board] = kept
        requestRestartBackfill(board: board)
    }

    /// The board's stream after the restart began at monotonic `time`: the gap ends there, and
    /// its log can be read (once it keeps one).
    func restartStreamResumed(board: String, at time: Int64) {
        guard restartGaps[board] != nil, restartGaps[board]?.streamResumedAt == nil else { return }
        restartGaps[board]?.streamResumedAt = time
        requestRestartBackfill(board: board)
    }

    /// Asks for `board`'s log when its restart gap is bounded and the board logs.
    func requestRestartBackfill(board: String) {
        guard restartGaps[board]?.streamResumedAt != nil, backfillBoards.contains(board) else { return }
        backfillRequests.insert(board)
    }

    /// A page of `board`'s log for its restart gap. Pages come oldest first, so the samples of
    /// the gap each page completes are final once placed: they are sealed into the interrupted
    /// session at once. Returns whether what the page holds is stored (the board may delete it).
    func backfillRestartGap(board: String, page: [LoggedSample], bootOrigins: [UInt8: Int64], complete: Bool,
                            outcome: inout BackfillOutcome) -> Bool {
        guard var pending = restartGaps[board], let resumed = pending.streamResumedAt, let after = pending.gap.after else { return true }
        pending.logged.add(page, bootOrigins: bootOrigins)
        restartGaps[board] = pending
        guard awaitingSurvey.contains(pending.gap.sessionID) else {
            // Its survey was submitted meanwhile: the records document is written and names
            // its chunks, so a correction could no longer be found by it.
            lastStoreError = "restart gap of \(board) not filled: session \(pending.gap.sessionID) was submitted first"
            restartGaps[board] = nil
            return true
        }
        guard let stream = pending.stoppedStream ?? boards[board].map({ (gyroRate: $0.gyroRate, merger: $0.merger) }),
              let window = streamed[board], let scale = window.scale else { return false }
        let until = timeBase.epochMilliseconds(monotonic: resumed)
        let periodMs = 1000 / stream.gyroRate
        var points: [RecordedPoint] = []
        var previous = pending.sealedThrough ?? after
        let accelerometer = backfilledAccelerometer(board: board, stored: pending.gap.tail)
        for sample in placeRestartGap(pending, window: window, scale: scale, rate: stream.gyroRate) {
            let time = timeBase.epochMilliseconds(monotonic: sample.time)
            guard time > previous + periodMs / 2, time < until - periodMs / 2 else { continue }
            let value = MotionSamples(single: sample.raw, scale: scale)[0]
            let located = stream.merger.locate(GyroItem(sample: value, missedBefore: 0, source: timeBase.source), time)
            let missed = max(0, Int(((time - previous) / periodMs).rounded()) - 1)
            points.append(RecordedPoint(gyroscope: GyroReading(value, timestamp: time), location: located.location,
                                        missingLocation: located.missing,
                                        accelerometer: accelerometer.nearest(time), missedBefore: missed,
                                        gapMilliseconds: Int((time - previous).rounded()), backfilled: true))
            previous = time
        }
        guard sealRestartCorrection(board: board, points) else { return false }
        outcome.filled += points.count
        if complete, let done = restartGaps.removeValue(forKey: board) {
            let expected = max(0, Int(((until - after) / periodMs).rounded()) - 1)
            outcome.stillMissing += max(0, expected - done.filled)
        }
        return true
    }

    /// The gap's logged samples placed against the session's stored tail (its raw counts
    /// rebuilt from the stored values: a float32 keeps every count) and the new stream.
    private func placeRestartGap(_ pending: PendingRestartGap, window: StreamedWindow, scale: Double,
                                 rate: Double) -> [BackfillPlanner.Backfilled] {
        let tail = pending.gap.tail.map { p in
            BackfillPlanner.StreamedSample(time: timeBase.monotonic(epochMilliseconds: p.gyroscope.timestamp),
                                           raw: RawVector(counts: (p.gyroscope.x, p.gyroscope.y, p.gyroscope.z), scale: scale))
        }
        let streamed = (tail + window.samples).sorted { $0.time < $1.time }
        let planner = BackfillPlanner(nominalPeriod: 1e9 / rate, bootOrigins: pending.logged.bootOrigins)
        return planner.plan(streamed: streamed, logged: pending.logged.samples).backfilled
    }

    /// Seals `points` (in time order) into the restart gap's session as chunks after its last.
    private func sealRestartCorrection(board: String, _ points: [RecordedPoint]) -> Bool {
        guard let gap = restartGaps[board]?.gap else { return false }
        var start = 0
        while start < points.count {
            let slice = points[start..<min(start + configuration.chunkSize, points.count)]
            let seq = gap.nextSeq + (restartGaps[board]?.sealedChunks ?? 0)
            let chunk = ChunkToSeal(sessionID: gap.sessionID, board: board, seq: seq, bytes: PointCodec.encode(slice),
                                    pointCount: slice.count, firstTimestamp: slice.first!.gyroscope.timestamp,
                                    lastTimestamp: slice.last!.gyroscope.timestamp, timeSource: timeBase.source,
                                    missedSamples: slice.reduce(0) { $0 + $1.missedBefore })
            do {
                try store.seal(chunk)
            } catch {
                lastStoreError = "correction chunk \(seq) of \(board) in session \(gap.sessionID) failed: \(error)"
                return false
            }
            sealedCount += 1
            restartGaps[board]?.sealedChunks += 1
            restartGaps[board]?.sealedThrough = chunk.lastTimestamp
            restartGaps[board]?.filled += slice.count
            start += slice.count
        }
        return true
    }
}

extension RawVector {
    /// The counts a stored reading was scaled from (`scale` LSB per unit).
    init(counts reading: (x: Float, y: Float, z: Float), scale: Double) {
        func count(_ value: Float) -> Int16 { Int16(clamping: Int((Double(value) * scale).rounded())) }
        self.init(x: count(reading.x), y: count(reading.y), z: count(reading.z))
    }
}
