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
        /// Of ``filled``, those sealed into a stopped or interrupted session as correction
        /// chunks (a stop's or a restart's gap), not into the one recording.
        public var filledIntoEarlierSessions = 0
        /// A gap the log was read for stays open and the log is asked for again: the readout
        /// ended before the gap did, or the store refused what it filled.
        public var readAgain = false
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
        /// What the samples handed in hold is in the store now (the store took the write): the
        /// board may delete them.
        public var durable = false

        /// Nothing filled yet.
        public init() {}
    }

    /// Whether `board` keeps a flash log that fills its gaps: its points after a gap are then
    /// held for ``backfill(board:logged:bootOrigins:)``. Turning it off commits what is held.
    public func expectBackfill(board: String, _ expected: Bool) {
        if expected { backfillBoards.insert(board) } else { backfillBoards.remove(board) }
        boards[board]?.backfillExpected = expected
        if expected { requestRestartBackfill(board: board) }
        if !expected { giveUpWaitingForTheLog(board: board) }
    }

    /// The points `board` holds stop waiting for its log (the wait ended, or the board keeps no
    /// log now): they are committed with the samples the pages downloaded so far place in the
    /// gap, and the rest of it marked. Those pages were confirmed once journaled, so the board
    /// deleted them: committed without them, their samples were lost (a page refused again and
    /// again after 20 stored: 281 samples of an 8 s gap).
    func giveUpWaitingForTheLog(board: String) {
        guard boards[board]?.hold != nil else { return }
        takeBackDelaysTheLogShows(board: board)
        guard let hold = boards[board]?.hold else { return }
        var outcome = BackfillOutcome()
        releaseHold(board: board, backfilled: place(board: board, logged: hold.logged.samples, bootOrigins: hold.logged.bootOrigins,
                                                    outcome: &outcome))
    }

    /// The stop commits `board`'s held points; the gap they waited on is `kept` for the log
    /// (``keepStopGap(board:sessionID:)``). At a shutdown (`processEnds`) the samples its
    /// readout's pages placed in the gap so far are committed with them, as
    /// ``giveUpWaitingForTheLog(board:)`` does: those pages were confirmed once journaled, so
    /// the board deleted them, and their samples lived on only in `kept`, in memory, which the
    /// exit ends (issue 18 §2.7: a SIGTERM 1.5 s into a 3 s gap's readout at 2,100 entries/s,
    /// and the next run filled 68 or none of its 150 samples). They go into `kept`'s tail too:
    /// a logged sample at a stored point's time is that sample, never placed again. Otherwise
    /// the next page of this run's readout seals them with its own.
    func releaseHoldAtStop(board: String, keeping kept: inout PendingRestartGap?, processEnds: Bool) {
        guard processEnds, let hold = boards[board]?.hold, !hold.logged.samples.isEmpty else {
            releaseHold(board: board, backfilled: [])
            return
        }
        var outcome = BackfillOutcome()
        let placed = place(board: board, logged: hold.logged.samples, bootOrigins: hold.logged.bootOrigins, outcome: &outcome)
        releaseHold(board: board, backfilled: placed)
        guard !placed.isEmpty, var gap = kept?.gap else { return }
        gap.tail = (gap.tail + placed.map(\.point)).sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp }
        kept?.gap = gap
    }

    /// Boards whose points started waiting for a backfill since the last call: download their
    /// flash logs and hand the samples to ``backfill(board:logged:bootOrigins:)``.
    public func takeBackfillRequests() -> [String] {
        defer { backfillRequests.removeAll() }
        return backfillRequests.sorted()
    }

    /// The sample periods `board`'s log's ticks show (``LoggedPeriod``), with a page's `gyro` and
    /// `accelerometer` samples: its timestampers take them instead of the arrivals' slope
    /// (``SampleTimestamper/takeBoardPeriod(_:)``).
    func takeLoggedPeriods(board: String, gyro: [LoggedSample], accelerometer: [LoggedSample]) {
        guard let stream = boards[board] else { return }
        var periods = loggedPeriods[board] ?? (LoggedPeriod(), LoggedPeriod())
        periods.gyro.add(gyro, nominalPeriodMs: 1000 / stream.gyroRate)
        if let rate = stream.accelerometerRate { periods.accelerometer.add(accelerometer, nominalPeriodMs: 1000 / rate) }
        loggedPeriods[board] = periods
        stream.takeBoardPeriods(periods)
    }

    /// Whether `board`'s points are held waiting for a backfill.
    public func isWaitingForBackfill(board: String) -> Bool { boards[board]?.hold != nil }

    /// Gyro (and `accelerometer`) samples downloaded from `board`'s flash log, in readout
    /// order: one page of a
    /// readout, or (`complete`) the last one. Those inside the gap its held points wait on are
    /// merged before them once the readout is complete; the held points are then committed.
    /// A page before the last is placed provisionally and journaled with the held points.
    /// Those in a restart gap (``expectRestartBackfill(_:)``) are sealed into its session.
    /// `bootOrigins` are where each boot's tick 0 lies on the monotonic clock (the board clock
    /// read at connect), by reset UID.
    ///
    /// ``BackfillOutcome/durable`` says whether what the page holds is now in the store (the
    /// points it fills, and every streamed point so far): only then may the board delete it.
    @discardableResult
    public func backfill(board: String, logged: [LoggedSample], accelerometer: [LoggedSample] = [], bootOrigins: [UInt8: Int64],
                         complete: Bool = true, now: Int64? = nil) -> BackfillOutcome {
        var outcome = BackfillOutcome()
        takeLoggedPeriods(board: board, gyro: logged, accelerometer: accelerometer)
        loggedAccelerometer[board, default: LoggedSamples()].add(accelerometer, bootOrigins: bootOrigins)
        defer { if boards[board]?.hold == nil, restartGaps[board] == nil { loggedAccelerometer[board] = nil } }
        let restartGapStored = backfillRestartGap(board: board, page: logged, bootOrigins: bootOrigins, complete: complete,
                                                  outcome: &outcome)
        guard boards[board]?.hold != nil else {
            // Nothing else waits for it (the gap was committed when the wait ended, or no gap):
            // what the page holds is streamed, or can no longer be placed.
            outcome.durable = writeSegments(now: now, force: true) && restartGapStored
            return outcome
        }
        let fresh = boards[board]?.hold?.logged.add(logged, bootOrigins: bootOrigins) ?? []
        takeBackDelaysTheLogShows(board: board)
        guard let hold = boards[board]?.hold else { return outcome }
        // A page before the last keeps only what its own samples fill (journaled with the held
        // points): it places the log from them on. The last places all of it.
        let placingFrom = complete ? 0 : hold.logged.samples.count - fresh.count
        let points = place(board: board, logged: hold.logged.samples, bootOrigins: hold.logged.bootOrigins, placingFrom: placingFrom,
                           outcome: &outcome)
        // A readout reads the entries its start counted: one begun before the gap ended (the
        // board stalled on, and its link came back still stalled) ends short of the gap's end,
        // and a request while it ran was not taken (soak seed 11: the last 38 samples of a
        // stall's gap). Read the log again, once, before the gap is given up.
        var complete = complete
        if complete, !hold.readAgain, let scale = streamed[board]?.scale, !hold.logReachesPastTheGap(scale: scale) {
            boards[board]?.hold?.readAgain = true
            backfillRequests.insert(board)
            outcome.readAgain = true
            complete = false
        } else if complete, let scale = streamed[board]?.scale, hold.logged.samples.count > hold.loggedWhenReadForAMark,
                  hold.readForMarks < BackfillHold.readsForMarks, hold.marksPastTheLog(scale: scale) {
            // A mark made while the readout ran: read on until the log shows what it was.
            boards[board]?.hold?.loggedWhenReadForAMark = hold.logged.samples.count
            boards[board]?.hold?.readForMarks += 1
            backfillRequests.insert(board)
            outcome.readAgain = true
            complete = false
        }
        if complete {
            outcome.filled += points.count
            outcome.stillMissing += releaseHold(board: board, backfilled: points)
        } else {
            let freshSet = Set(fresh.map { BackfillKey(resetUID: $0.resetUID, tick: $0.tick) })
            boards[board]?.hold?.unjournaledBackfill += points.filter { freshSet.contains($0.key) }.map(\.point)
        }
        outcome.durable = writeSegments(now: now, force: true) && restartGapStored
        // The readout is on its way while the store takes pages with samples it had not seen.
        if outcome.durable, !fresh.isEmpty, let now { boards[board]?.hold?.lastPageAt = timeBase.epochMilliseconds(monotonic: now) }
        readDeclinedPageAgain(board: board, outcome: &outcome)
        return outcome
    }

    /// A page the store refused is declined, which ends its readout unconfirmed (the board
    /// keeps the page). The points held for the gap need that page, and nothing else starts a
    /// readout on a board that stays linked: the log is asked for again at once, up to
    /// ``BackfillHold/declinedReadoutsReadAgain`` times in a row. Waiting instead, the gap was
    /// given up at the end of its wait, marked lost though the board held every sample of it.
    private func readDeclinedPageAgain(board: String, outcome: inout BackfillOutcome) {
        guard let hold = boards[board]?.hold else { return }
        guard !outcome.durable else {
            boards[board]?.hold?.declinedInARow = 0
            return
        }
        let declined = hold.declinedInARow + 1
        boards[board]?.hold?.declinedInARow = declined
        guard declined <= BackfillHold.declinedReadoutsReadAgain else {
            if declined == BackfillHold.declinedReadoutsReadAgain + 1 {
                lastStoreError = "flash log of \(board): the store refused a page \(declined) times in a row; "
                    + "the board keeps it, and its gap waits for the board's next link or is marked lost at the end of its wait"
            }
            return
        }
        backfillRequests.insert(board)
        outcome.readAgain = true
    }

    /// Logged samples placed on the streamed time base that fall into the gap `board`'s held
    /// points wait on, as backfilled points; only those from `placingFrom` (an index into
    /// `logged`) on, or some before it (``BackfillPlanner/plan(streamed:logged:placingFrom:)``).
    private func place(board: String, logged: [LoggedSample], bootOrigins: [UInt8: Int64], placingFrom: Int = 0,
                       outcome: inout BackfillOutcome) -> [(key: BackfillKey, point: RecordedPoint)] {
        guard let stream = boards[board], let hold = stream.hold, let window = streamed[board], let scale = window.scale else { return [] }
        let period = 1e9 / stream.gyroRate
        let planner = BackfillPlanner(nominalPeriod: period, bootOrigins: bootOrigins)
        let after = hold.after ?? -Double.infinity
        // The gap begins after `after`, and its anchors are in the streamed window: what the
        // log holds from long before both (a readout brings all since the last one) is skipped.
        let earliest = after.isFinite
            ? min(window.samples.first?.time ?? .max, timeBase.monotonic(epochMilliseconds: after)) : nil
        let reaching = earliest.map { planner.samples(logged, reaching: $0) } ?? (kept: logged, before: 0)
        // The samples skipped come before the page's (a readout brings the log oldest first).
        let plan = planner.plan(streamed: planner.streamed(window.samples, near: reaching.kept), logged: reaching.kept,
                                placingFrom: max(0, placingFrom - reaching.before))
        outcome.alreadyStreamed = plan.alreadyStreamed
        outcome.unplaced = plan.unplaced
        outcome.collisions = plan.collisions
        outcome.outsideGap += reaching.before
        let until = hold.points.last?.point.gyroscope.timestamp ?? after
        let halfPeriod = 500 / stream.gyroRate
        var points: [(key: BackfillKey, point: RecordedPoint)] = []
        let accelerometer = backfilledAccelerometer(board: board, reaching: earliest)
        for sample in plan.backfilled {
            let time = timeBase.epochMilliseconds(monotonic: sample.time)
            // Placed in the log's order between its streamed neighbours, it is strictly
            // between them; otherwise half a period from the gap's edges is another sample's.
            let margin = sample.placement == .logOrder ? 0 : halfPeriod
            guard time > after + margin, time < until - margin else { outcome.outsideGap += 1; continue }
            let value = MotionSamples(single: sample.raw, scale: scale)[0]
            let located = stream.merger.locate(GyroItem(sample: value, missedBefore: 0, source: timeBase.source), time)
            points.append((BackfillKey(resetUID: sample.resetUID, tick: sample.tick),
                           RecordedPoint(gyroscope: GyroReading(value, timestamp: time), location: located.location,
                                         missingLocation: located.missing,
                                         accelerometer: accelerometer.nearest(time),
                                         backfilled: true)))
        }
        return points
    }

    /// Commits the held points of `board` with `backfilled` merged in time order; the gap
    /// marks next to backfilled points are counted again, from the board's ticks of the two
    /// neighbours where the log holds both (``LogTicks``), else from the times. They are written to
    /// the store at their final indices (durably) before they are committed, so the held
    /// records can go once the chunk that gets the first of them is sealed. Returns the
    /// samples still missing in the held stretch.
    @discardableResult
    func releaseHold(board: String, backfilled: [(key: BackfillKey, point: RecordedPoint)]) -> Int {
        guard let stream = boards[board], let hold = stream.hold else { return 0 }
        boards[board]?.hold = nil
        let period = 1000 / stream.gyroRate
        var merged: [(point: RecordedPoint, source: TimeSource, key: BackfillKey?)] = hold.points.map { ($0.point, $0.source, nil) }
        merged.append(contentsOf: backfilled.map { ($0.point, timeBase.source, $0.key) })
        merged.sort { $0.point.gyroscope.timestamp < $1.point.gyroscope.timestamp }
        // A gap's edges in the log: a backfilled point's sample, or a streamed one's found by
        // its counts; the board's ticks count the samples between them (``LogTicks``).
        let log = LogTicks(hold.logged.samples)
        let scale = streamed[board]?.scale
        // The session's start is no sample's time: the first point has none before it.
        var previous = hold.opensSession ? nil : hold.after
        var previousKey: BackfillKey?
        var previousCounts = previous.flatMap { streamed[board]?.raw(near: timeBase.monotonic(epochMilliseconds: $0), periodMs: period) }
        var previousBackfilled = false
        var previousBoot: UInt8?
        var missing = 0
        if !hold.logged.samples.isEmpty { previousLog[board] = hold.logged }
        for k in merged.indices {
            var p = merged[k].point
            let time = p.gyroscope.timestamp
            // The counts the board sent for this point (nil until the stream's scale is known).
            let counts = scale.map { RawVector(stored: p.gyroscope, scale: $0) }
            if k == 0, hold.opensSession {
                // The board's first point of the session.
                p.missedBefore = 0
                p.gapMilliseconds = 0
            } else if let boot = merged[k].key?.resetUID, boot == previousBoot {
                // Neighbours in one boot's log: the board logs every sample it takes, so none
                // is missing between them however far apart they are. (The sensor paused: a
                // stream restart stops the gyro for 0.2-0.5 s, real-BlueZ VM, docs/bluez-vm.md.)
                p.missedBefore = 0
                p.gapMilliseconds = 0
            } else if p.backfilled || previousBackfilled, let previous {
                // A gap's edge: a streamed sample and the log's first (or last) one of the gap.
                // By the board's ticks when the log holds both: the new link's stamps may lie
                // late, and their periods were counted missing though the log had every sample.
                let step = time - previous
                var byTicks: Int?
                if let before = previousKey ?? previousCounts.flatMap(log.sample).map(BackfillKey.init),
                   let after = merged[k].key ?? counts.flatMap(log.sample).map(BackfillKey.init) {
                    byTicks = log.samplesBetween(before, after, spanByTime: step, periodMs: period)
                }
                p.missedBefore = byTicks ?? GapCount.missed(stepMs: step, periodMs: period)
                p.gapMilliseconds = GapCount.milliseconds(missed: p.missedBefore, stepMs: step)
            }
            missing += p.missedBefore
            previous = time
            previousBackfilled = p.backfilled
            previousBoot = merged[k].key?.resetUID
            previousKey = merged[k].key
            previousCounts = merged[k].key == nil ? counts : nil
            merged[k].point = p
        }
        let released = merged.map { (point: $0.point, source: $0.source) }
        writeReleased(board: board, released, at: hold.startIndex)
        for (point, source) in released where commit(board: board, point: point, source: source) { sealOpenChunk(board: board) }
        return missing
    }

    /// Raw counts of the held streamed points whose gap mark the downloaded log contradicts:
    /// the sample streamed just before each is its neighbour in one boot's log, so none is
    /// missing between them; with how long after it the board took each, ms by its ticks. (The
    /// time-based detector cannot tell a delay that outlasts its confirmation from a loss: the
    /// real-BlueZ VM under load fell seconds behind a stream.)
    /// Only counts that occur once in the log and once in the streamed window are matched: a
    /// board at rest repeats its readings. A hold's `logs` are its readout's and the one before
    /// it (``previousLog``).
    func marksTheLogContradicts(board: String, points: [RecordedPoint], logs: [LogTicks]) -> [RawVector: Double] {
        guard let window = streamed[board], let scale = window.scale else { return [:] }
        var marked: [RawVector: Int] = [:]
        for p in points where p.missedBefore > 0 && !p.backfilled {
            marked[RawVector(stored: p.gyroscope, scale: scale)] = 0
        }
        guard !marked.isEmpty else { return [:] }
        for sample in window.samples where marked[sample.raw] != nil { marked[sample.raw]! += 1 }
        var contradicted: [RawVector: Double] = [:]
        for (before, sample) in zip(window.samples, window.samples.dropFirst()) where marked[sample.raw] == 1 {
            contradicted[sample.raw] = logs.lazy.compactMap { $0.span(before.raw, sample.raw) }.first
        }
        return contradicted
    }

    /// Writes a released hold at its final indices, with the board's committed points not yet
    /// written before it, in one durable append; the commits that follow then skip them.
    private func writeReleased(board: String, _ merged: [(point: RecordedPoint, source: TimeSource)], at start: Int) {
        guard let s = session, let b = boards[board], !merged.isEmpty else { return }
        boards[board]?.journaledReadings.forget()
        var segments: [OpenSegment] = []
        if b.unwrittenCount > 0 {
            segments.append(OpenSegment(sessionID: s.id, board: board, firstIndex: b.pointsWritten, bytes: b.unwritten,
                                        pointCount: b.unwrittenCount, timeSource: b.unwrittenSource))
        }
        var bytes: [UInt8] = []
        for (point, _) in merged { PointCodec.append(point, to: &bytes) }
        segments.append(OpenSegment(sessionID: s.id, board: board, firstIndex: start, bytes: bytes, pointCount: merged.count,
                                    timeSource: merged.map(\.source).max() ?? timeBase.source))
        do {
            try store.append(segments)
            boards[board]?.pointsWritten = start + merged.count
            boards[board]?.unwritten.removeAll(keepingCapacity: true)
            boards[board]?.unwrittenCount = 0
        } catch {
            lastStoreError = "segment write failed: \(error)"
            // The commits add them to the next segment write instead.
            if b.pointsWritten > start, b.unwrittenCount == 0 { boards[board]?.pointsWritten = start }
        }
    }

    /// The held record of `board` for this second's segment write: its points after the gap
    /// (held, then provisional) not journaled before, and the backfilled points placed since,
    /// in time order; with how many of the former the journal then holds.
    func heldSegment(board: String, sessionID: String, provisional: [RecordedPoint]) -> (OpenSegment, journaled: Int)? {
        guard let hold = boards[board]?.hold else { return nil }
        let sequence = hold.points.map(\.point) + provisional
        let newer = sequence.dropFirst(hold.journaled)
        let points = (newer + hold.unjournaledBackfill).sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp }
        guard !points.isEmpty else { return nil }
        var bytes: [UInt8] = []
        for p in points { PointCodec.append(p, to: &bytes) }
        let segment = OpenSegment(sessionID: sessionID, board: board, firstIndex: hold.startIndex, bytes: bytes,
                                  pointCount: points.count, timeSource: timeBase.source, held: true)
        return (segment, max(hold.journaled, sequence.count))
    }

    /// The held record of `board` is in the store.
    func heldSegmentWritten(board: String, journaled: Int) {
        guard boards[board]?.hold != nil else { return }
        boards[board]?.hold?.unjournaledBackfill = []
        boards[board]?.hold?.journaled = journaled
    }

    /// Keeps the streamed samples (raw counts at their monotonic times) for matching.
    func rememberStreamed(board: String, _ stamped: [SampleTimestamper<MotionSamples>.Stamped]) {
        guard backfillBoards.contains(board) else { return }
        streamed[board, default: StreamedWindow()].keptFrom = streamKeptFrom(board: board)
        streamed[board]?.append(stamped)
    }

    /// While `board`'s points wait for a gap's log, where its streamed samples must be kept
    /// from (monotonic ns): the gap's start, less the margin the placement reaches back
    /// (``BackfillPlanner/samples(_:reaching:)``), so a readout longer than the window still
    /// finds every streamed twin. While a restart (or stop) gap waits, from its end on: the
    /// first samples streamed after it are the anchors its last logged samples are placed
    /// between. Forgotten by a readout longer than the window (a gateway down 10 minutes, read
    /// at the board's pace for 5), the gap's end was placed by extrapolation 7.7 ms late, and
    /// its last sample fell within half a period of the stream's first and was dropped.
    func streamKeptFrom(board: String) -> Int64? {
        let held = boards[board]?.hold?.after
        let restart = restartGaps[board]?.compactMap(\.until).min()
        guard let from = [held, restart].compactMap({ $0 }).filter(\.isFinite).min() else { return nil }
        return timeBase.monotonic(epochMilliseconds: from) - BackfillPlanner.reachMargin
    }
}

/// A logged sample's identity: its boot and tick.
struct BackfillKey: Hashable {
    var resetUID: UInt8
    var tick: UInt32
}
