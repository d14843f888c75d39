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
    /// The restart gaps of the sessions startup recovery closed (now or at an earlier start),
    /// one per session and board: each is filled from the board's flash log once it streams
    /// again (a gap bounded by an earlier gateway, at once when the board streams).
    public func expectRestartBackfill(_ gaps: [RestartGap]) {
        for gap in gaps where gap.after != nil {
            var pending = restartGaps[gap.board, default: []]
            guard !pending.contains(where: { $0.gap.sessionID == gap.sessionID }) else { continue }
            pending.append(PendingRestartGap(gap))
            pending.sort { ($0.gap.after ?? 0) < ($1.gap.after ?? 0) }
            restartGaps[gap.board] = pending
        }
    }

    /// Whether a restart gap of `board` still waits for its flash log.
    public func isWaitingForRestartBackfill(board: String) -> Bool { restartGaps[board] != nil }

    /// Whether the stopped session `sessionID` still has a gap its boards' flash logs are read
    /// for (a restart gap, a gap its stop came too early for, or a logged board away at its stop):
    /// its survey had better wait a while, since a correction chunk sealed after the survey
    /// revises its records document (a second write of it upstream).
    public func hasPendingCorrections(sessionID: String) -> Bool {
        restartGaps.values.contains { $0.contains { $0.gap.sessionID == sessionID } }
            || loggedRests.values.contains { $0.contains { $0.sessionID == sessionID } }
    }

    /// Seals into their sessions what the kept gaps' readouts brought so far and no page sealed
    /// yet: call at a shutdown. Those samples came in pages confirmed once journaled, so the
    /// board deleted them, and they wait in memory for the readout's next page to be sealed
    /// with its own; the shutdown leaves that page on the board (issue 18 §2.7), and the exit
    /// would end them (a session stopped while its gap's log was read, then a SIGTERM before
    /// the next page). The rest of each gap stays kept for the next run's readout.
    public func sealWhatTheGapsReadoutsBrought() {
        for board in restartGaps.keys.sorted() where restartGaps[board]?.contains(where: { !$0.logged.samples.isEmpty }) == true {
            var outcome = BackfillOutcome()
            _ = backfillRestartGap(board: board, page: [], bootOrigins: [:], complete: false, processEnds: true, outcome: &outcome)
        }
    }

    /// The session stops while `board`'s points after a gap wait for the download that fills
    /// it: the held points are committed with the gap marked (the stop does not wait), and the
    /// gap is kept, to be filled like a restart gap: its samples are sealed into the stopped
    /// session as correction chunks once the log arrives (before the survey, which waits a
    /// while for it, or after it, revising its records document). Nil when nothing waits or
    /// the gap has no start. A gap of an earlier session the board's log is still read for
    /// does not stand in the way: each gap takes the log's samples of its own stretch (soak
    /// seed 11: a board back from out of range 6 s into the next session, its download of both
    /// stretches still running at that session's stop, lost the 395 samples this gap held).
    func keepStopGap(board: String, sessionID: String) -> PendingRestartGap? {
        guard let stream = boards[board], let hold = stream.hold, let after = hold.after,
              let last = hold.points.last else { return nil }
        // The whole held stretch, not only up to its first point: a hold that began at one gap
        // (a bluetoothd restart) holds the gaps after it too (the board's link dropped again
        // before its log came: soak seed 12, 7 samples). The held points are the stretch's
        // stored points, which the log's samples are matched with and placed between.
        let held = hold.points.map(\.point)
        var pending = PendingRestartGap(RestartGap(sessionID: sessionID, board: board, nextSeq: 0, tail: held, after: after,
                                                   opensSession: hold.opensSession))
        pending.until = last.point.gyroscope.timestamp
        pending.tailStreamedHere = true
        pending.tailLinkStarts = hold.linkStarts
        pending.logged = hold.logged
        pending.stoppedStream = (stream.gyroRate, stream.merger)
        return pending
    }

    /// The stop sealed `board`'s last chunk: its kept gap (``keepStopGap(board:sessionID:)``)
    /// waits for the log, its correction chunks numbered after that chunk. Returns the gap's end
    /// for the store, which keeps it with the session's end (a gateway restarted before the
    /// board's log is read fills it).
    func waitForStopGap(_ kept: PendingRestartGap?, board: String) -> StopGapBound? {
        guard var kept else { return nil }
        kept.gap.nextSeq = boards[board]?.seq ?? kept.gap.nextSeq
        restartGaps[board, default: []].append(kept)
        requestRestartBackfill(board: board)
        return kept.until.map {
            StopGapBound(sessionID: kept.gap.sessionID, board: board, until: $0, after: kept.gap.after, opensSession: kept.opensSession)
        }
    }

    /// Stores the session's end with the stop's chunks (``sealsForTheStop``, after the seals
    /// that failed before) and the gaps its stop left in one transaction; if that fails, as
    /// before it: each chunk (kept for a retry when refused), each gap on its own (a failure
    /// noted), then the end, unless a chunk of the session is still refused: then its points go
    /// into the segment journal and the end waits for its seal (``endOnceSealed(_:)``).
    func storeEnd(_ end: SessionEnd, stopGaps: [StopGapBound], now: Int64) throws {
        // A board's chunks are all among the failed seals once one of them failed, so this
        // keeps each board's seal order.
        let chunks = failedSeals + (sealsForTheStop ?? [])
        failedSeals = []
        sealsForTheStop = nil
        do {
            try store.endSession(end, sealing: chunks, keepingStopGaps: stopGaps)
            sealedCount += chunks.count
            return
        } catch {
            failedSeals = chunks
            retryFailedSeals(now: now, force: true)
            for gap in stopGaps {
                do { try store.restartGapKept(gap) } catch {
                    lastStoreError = "gap of \(gap.board) in session \(gap.sessionID) not kept: \(error)"
                }
            }
            guard !endOnceSealed(end) else { return }
            try store.endSession(end)
        }
    }

    /// `board` leaves the recorder (idle after its session's stop, or its link gone) while its
    /// restart gaps wait for the log, whose readout goes on: they keep the stream's rate and
    /// fixes for their placement. Without them no page of the readout could be stored, none
    /// confirmed, and the readout stalled (the make-test soak: 4,602 entries left for good).
    func keepStreamForRestartGaps(board: String) {
        guard let stream = boards[board], let gaps = restartGaps[board] else { return }
        for k in gaps.indices where gaps[k].stoppedStream == nil {
            restartGaps[board]?[k].stoppedStream = (stream.gyroRate, stream.merger)
        }
    }

    /// The board streams after the restart, from monotonic `time`: a gap not bounded yet ends
    /// there (kept in the store, so a later gateway knows it), and its log can be read (once
    /// it keeps one).
    func restartStreamResumed(board: String, at time: Int64) {
        guard let gaps = restartGaps[board] else { return }
        for k in gaps.indices where gaps[k].until == nil {
            let until = timeBase.epochMilliseconds(monotonic: time)
            restartGaps[board]?[k].until = until
            do { try store.restartGapBounded(sessionID: gaps[k].gap.sessionID, board: board, until: until) } catch {
                lastStoreError = "restart gap of \(board) in session \(gaps[k].gap.sessionID) not kept: \(error)"
            }
        }
        requestRestartBackfill(board: board)
    }

    /// Asks for `board`'s log once, when all its restart gaps are bounded, the board logs and
    /// streams (its stream's scale and anchors are needed).
    func requestRestartBackfill(board: String) {
        guard let gaps = restartGaps[board], gaps.allSatisfy({ $0.until != nil }), gaps.contains(where: { !$0.requested }),
              backfillBoards.contains(board), streamed[board]?.scale != nil else { return }
        for k in gaps.indices { restartGaps[board]?[k].requested = true }
        backfillRequests.insert(board)
    }

    /// A page of `board`'s log for its restart gaps. Pages come oldest first, so the samples of
    /// a gap each page completes are final once placed: they are sealed into the interrupted
    /// session at once. Returns whether what the page holds is stored (the board may delete it).
    /// `processEnds`: no more of the log comes to this process (a shutdown), so what waits for
    /// more of it is placed as well as it can be now.
    func backfillRestartGap(board: String, page: [LoggedSample], bootOrigins: [UInt8: Int64], complete: Bool,
                            processEnds: Bool = false, outcome: inout BackfillOutcome) -> Bool {
        guard let gaps = restartGaps[board] else { return true }
        var stored = true
        var open: [PendingRestartGap] = []
        for var pending in gaps {
            let (gapStored, finished) = backfill(&pending, board: board, page: page, bootOrigins: bootOrigins, complete: complete,
                                                 lastOfTheLog: complete || processEnds, outcome: &outcome)
            stored = stored && gapStored
            if finished {
                revisionFinished(sessionID: pending.gap.sessionID, board: board)
                do { try store.restartGapClosed(sessionID: pending.gap.sessionID, board: board) } catch {
                    lastStoreError = "restart gap of \(board) in session \(pending.gap.sessionID) not closed: \(error)"
                }
            } else {
                open.append(pending)
            }
        }
        restartGaps[board] = open.isEmpty ? nil : open
        return stored
    }

    /// One gap's part of a page: whether what it needs of the page is stored, and whether the
    /// gap is done (filled, or its session's records document is written).
    private func backfill(_ pending: inout PendingRestartGap, board: String, page: [LoggedSample], bootOrigins: [UInt8: Int64],
                          complete: Bool, lastOfTheLog: Bool, outcome: inout BackfillOutcome) -> (stored: Bool, finished: Bool) {
        guard let until = pending.until, pending.gap.after != nil else { return (true, false) }
        // Its survey may have gone in meanwhile: the correction chunks then revise its records
        // document (the store names them in it and queues it again).
        pending.logged.add(page, bootOrigins: bootOrigins)
        if !pending.tailStreamedHere { pending.loggedTimes.take(pending.logged) }
        guard let stream = pending.stoppedStream ?? boards[board].map({ (gyroRate: $0.gyroRate, merger: $0.merger) }),
              let scale = streamed[board]?.scale else { return (false, false) }
        let periodMs = 1000 / stream.gyroRate
        takeBackStoredDelays(&pending, board: board, scale: scale, periodMs: periodMs)
        guard let window = streamed[board] else { return (false, false) }
        var points: [RecordedPoint] = []
        var keys: [BackfillKey] = []
        var sealedTimes: [Double] = []
        var placedKeys: Set<BackfillKey> = []
        var lastPlaced = pending.lastSealed
        // Placed on the new stream's clock; the stored tail's times are moved onto it by
        // `shift` ms for the comparisons, and the points sealed on the tail's (the session's).
        // A page places the log's samples from shortly before the last one sealed: those before
        // are stored, or were no sample of the gap's. The log's last page places all of it.
        let placingFrom = lastOfTheLog ? 0 : pending.placingFrom
        let (placed, shift) = placeRestartGap(pending, window: window, scale: scale, rate: stream.gyroRate, placingFrom: placingFrom)
        let from = pending.from(periodMs: periodMs) + shift
        var previous = (pending.sealedThrough ?? pending.from(periodMs: periodMs)) + shift
        let accelerometer = backfilledAccelerometer(board: board, stored: pending.gap.tail + pending.gap.head)
        // A gap an earlier gateway stored the edges of: its fixes are known only from the
        // positions of those points (a restart gap had no location between them before).
        var fixes = stream.merger
        if !pending.tailStreamedHere { for fix in pending.gap.edgeFixes { fixes.insert(fix) } }
        // A gap an earlier gateway bounded ends where the stream it recorded begins: its first
        // second is stored with squeezed times (see `placeRestartGap`), so the end is found by
        // the stored samples themselves (a logged sample with a stored one's raw counts was
        // recorded) rather than by time alone.
        let storedAfter = Set(pending.gap.head.filter { $0.gyroscope.timestamp < until + 1000 }.map {
            RawVector(stored: $0.gyroscope, scale: scale)
        })
        let end = storedAfter.isEmpty ? until : until + 1000
        // The session's stored points inside the stretch filled (after a gap within its tail:
        // the points held for a link drop's backfill when the gateway died): a logged sample
        // at one's time is that sample.
        let inside = pending.gap.tail.map { $0.gyroscope.timestamp + shift }.filter { $0 > from }
        var nextInside = 0
        var lastStored = previous
        // The log holds a sample the board took after the gap (placed past its end, or one the
        // stream after it stored): its readout began after the gap ended.
        var logPastTheGap = false
        let endedBoots = pending.logged.resetUIDs.filter(pending.isOfAnEndedBoot)
        for sample in placed {
            // Placed by the board clock read on this process's link (no sample of the tail or
            // the new stream lies near it in the log read so far): off by that reading's latency
            // (up to a second, ``BackfillPlanner/originTolerance``) and on this process's clock,
            // which a tail an earlier gateway stored need not be on. A log begins up to
            // ``streamedLogLeftUnread`` before the gateway died, so after a session started just
            // before that, its first pages hold the previous session's last samples: in soak
            // seed 2113 they were placed 1.25 s late, among the interrupted session's first,
            // burst-stamped points, and 32 were sealed there, twins of the stopped session's (on
            // one clock, read in time, the interrupted session's own first samples could go in
            // again beside their twins). Such a sample waits for the pages with the tail's
            // twins, which place it (before the tail, none is the gap's), or for the log's end.
            if sample.placement == .boardClock, pending.tailIsAnEarlierGatewaysTimes, !lastOfTheLog { continue }
            var time = timeBase.epochMilliseconds(monotonic: sample.time)
            // A boot whose clock no link of this process read ended before the new stream (the
            // board reset while the gateway was down): every sample of it after the stored tail
            // is the gap's, wherever the clocks put it. Placed from the tail's anchors, it is on
            // the interrupted gateway's clock, which the new stream's end of the gap is not on
            // (a restarted clock stepped back 5 s put all 291 past it, and they were dropped).
            let ofAnEndedBoot = !endedBoots.isEmpty && endedBoots.contains(sample.resetUID)
            if !ofAnEndedBoot, time >= until + periodMs / 2 || storedAfter.contains(sample.raw) { logPastTheGap = true }
            // Placed in the log's order between its streamed (stored) neighbours, it is none
            // of them and strictly between them; otherwise a sample within half a period of a
            // stored one is that one.
            let margin = sample.placement == .logOrder ? 0 : periodMs / 2
            while nextInside < inside.count, inside[nextInside] < time - periodMs / 2 {
                lastStored = max(lastStored, inside[nextInside])
                nextInside += 1
            }
            if margin > 0, nextInside < inside.count, abs(inside[nextInside] - time) <= margin { continue }
            // The log's next sample after the last one sealed (by an earlier page) is not that
            // one, however near: that page placed its samples past the tail's anchors by the
            // stream's period, and once the new stream's anchors come they may lie a few ms
            // earlier (seed 48, 8 s gap: 5.6 ms, and the page's first sample fell within half a
            // period of the last sealed and was lost). It goes after it, in the log's order.
            let placedBefore = lastPlaced
            let followsSealed = lastPlaced.map { $0.resetUID == sample.resetUID && $0.tick < sample.tick } ?? false
            if followsSealed, time <= previous { time = previous + periodMs / 100 }
            let key = BackfillKey(resetUID: sample.resetUID, tick: sample.tick)
            guard time > previous + (followsSealed ? 0 : margin), ofAnEndedBoot || time < (storedAfter.isEmpty ? end - margin : end),
                  !storedAfter.contains(sample.raw), !pending.sealedSamples.contains(key), placedKeys.insert(key).inserted else { continue }
            keys.append(key)
            lastPlaced = key
            let value = MotionSamples(single: sample.raw, scale: scale)[0]
            let sealedTime = time - shift
            sealedTimes.append(sealedTime)
            let located = fixes.locate(GyroItem(sample: value, missedBefore: 0, source: timeBase.source), sealedTime)
            let before = max(previous, lastStored)
            // Neighbours in one boot's log with no stored point between: none is missing, as
            // between a held gap's (a sensor pause is no loss: ``LogTicks/samplesBetween``).
            let logNeighbours = lastStored <= previous && placedBefore?.resetUID == key.resetUID
            // The first point of a gap that opens the session has none before it.
            let opening = pending.opensSession && pending.sealedThrough == nil && points.isEmpty && lastStored <= from
            let missed = logNeighbours || opening ? 0 : GapCount.missed(stepMs: time - before, periodMs: periodMs)
            points.append(RecordedPoint(gyroscope: GyroReading(value, timestamp: sealedTime), location: located.location,
                                        missingLocation: located.missing,
                                        accelerometer: accelerometer.nearest(sealedTime), missedBefore: missed,
                                        gapMilliseconds: Int((time - before).rounded()), backfilled: true))
            previous = time
        }
        let filledBefore = pending.filled
        let sealed = sealRestartCorrection(&pending, board: board, points)
        // Only the samples whose chunk the store took count as sealed: the rest stay in the
        // gap's logged samples, placed again by the next page or readout (a failed write that
        // marked them lost them for good, while the board, never told to, still held them).
        let stored = keys.prefix(pending.filled - filledBefore)
        pending.sealedSamples.formUnion(stored)
        pending.sealed += zip(stored, sealedTimes).map { (key: $0, time: $1) }
        if let last = stored.last { pending.lastSealed = last }
        outcome.filled += stored.count
        outcome.filledIntoEarlierSessions += stored.count
        guard sealed else {
            // The page is not confirmed, so the board keeps it: the gap waits for the log again.
            pending.requested = false
            backfillRequests.insert(board)
            outcome.readAgain = true
            return (false, false)
        }
        guard complete else { return (true, false) }
        // A readout reads the entries its start counted: one begun before the gap ended (a
        // readout under way when the stream came back, which ignores the gap's own request)
        // ends short of it, and the board still holds the rest. Read the log again, once,
        // before the gap is given up (as for a held gap, `BackfillHold.readAgain`).
        if !pending.readAgain, !logPastTheGap, !logReachesPast(pending, until: until, window: window, scale: scale, periodMs: periodMs) {
            pending.readAgain = true
            backfillRequests.insert(board)
            outcome.readAgain = true
            return (true, false)
        }
        // A gap that opens the session begins at its first sample: the start is no sample's
        // time, and the sensors may only have started with it.
        let firstSealed = pending.opensSession ? pending.sealed.map(\.time).min().map { $0 + shift - periodMs } : nil
        let between = firstSealed.map { GapCount.missed(stepMs: until - $0, periodMs: periodMs) }
            ?? samplesBetweenEdgesByTicks(pending, from: from, until: until, shift: shift, window: window, scale: scale, periodMs: periodMs)
            ?? GapCount.missed(stepMs: until - from, periodMs: periodMs)
        let expected = max(0, between - inside.filter { $0 < until }.count)
        outcome.stillMissing += max(0, expected - pending.filled)
        reviseStoredMarks(pending, board: board, scale: scale, periodMs: periodMs)
        clearStoredMarksTheLogContradicts(pending, board: board, scale: scale)
        return (true, true)
    }

    /// Whether the log downloaded for the gap holds a sample the board streamed from the gap's
    /// end (`until`) on: the raw counts of a stored point of the gap's tail or head, or of the
    /// stream window, at or after it.
    private func logReachesPast(_ pending: PendingRestartGap, until: Double, window: StreamedWindow, scale: Double,
                                periodMs: Double) -> Bool {
        let logged = Set(pending.logged.samples.map(\.raw))
        let stored = (pending.gap.tail + pending.gap.head).filter { $0.gyroscope.timestamp >= until - periodMs / 2 }
        if stored.contains(where: { logged.contains(RawVector(stored: $0.gyroscope, scale: scale)) }) {
            return true
        }
        let from = timeBase.monotonic(epochMilliseconds: until - periodMs / 2)
        return window.samples.contains { $0.time >= from && logged.contains($0.raw) }
    }

    /// The gap's logged samples placed against the session's stored tail (its raw counts
    /// rebuilt from the stored values: a float32 keeps every count) and the new stream.
    private func placeRestartGap(_ pending: PendingRestartGap, window: StreamedWindow, scale: Double, rate: Double,
                                 placingFrom: Int) -> (samples: [BackfillPlanner.Backfilled], tailOffset: Double) {
        func samples(_ points: [RecordedPoint], shifted offset: Int64 = 0) -> [BackfillPlanner.StreamedSample] {
            points.map { p in
                BackfillPlanner.StreamedSample(time: timeBase.monotonic(epochMilliseconds: p.gyroscope.timestamp) + offset,
                                               raw: RawVector(stored: p.gyroscope, scale: scale))
            }
        }
        // The first second a stream recorded after a restart is no anchor: its first
        // notifications come in a burst and their times are squeezed together.
        let head = pending.gap.head.filter { $0.gyroscope.timestamp >= (pending.until ?? 0) + 1000 }
        let period = 1e9 / rate
        // A tail this process streamed is in the window on its own clock: measured against the
        // window's older samples (the link before the gap, stamped with its own latency) it
        // would seem off, and moving it put its samples twice into the anchors, 20 ms apart
        // for a new link stamped 20 ms early (soak seed 11: a bluetoothd restart's gap, kept
        // by a stop before its MetaMotion S's readout ended, got none of its 69 samples).
        let offset = pending.tailStreamedHere ? 0 : StoredTailAlignment.offset(stored: samples(pending.gap.tail), streamed: window.samples,
                                                logged: pending.loggedTimes, threshold: StoredTailAlignment.threshold(period: period))
        // A tail this process streamed is in the window too: each of its samples goes in once.
        // Twice side by side, a run of the stream after a step within a link matched no run of
        // the log (``LogOrderTwins``), and the log's samples of a stall before it were lost.
        let tail = samples(pending.gap.tail, shifted: offset)
        let stored = ((pending.tailStreamedHere ? tail.filter { !window.holds($0) } : tail) + samples(head)).sorted { $0.time < $1.time }
        let planner = BackfillPlanner(nominalPeriod: period, bootOrigins: pending.logged.bootOrigins)
        // As a gap's pages: the log read so far is matched only against the stored and streamed
        // samples near its ticks (taken from the tail moved onto the new stream's clock, the
        // ticks' clock), each cut before they are merged. Against all of them, the new stream's
        // samples past the log's end were each looked for through the whole gap's log
        // (`LogOrderTwins`) on every page: a gateway down 2 minutes took 156 s of CPU to fill
        // it at the board's pace (debug mwbench).
        func plan(_ streams: [[BackfillPlanner.StreamedSample]], _ logged: [LoggedSample],
                  placingFrom: Int = 0) -> [BackfillPlanner.Backfilled] {
            let near = streams.flatMap { planner.streamed($0, near: logged) }.sorted { $0.time < $1.time }
            return planner.plan(streamed: near, logged: logged, placingFrom: placingFrom).backfilled
        }
        // A boot no link of this process read the clock of ended before this process's stream
        // (the board reset while the gateway was down): its samples are matched with the stored
        // stream of that boot alone. Its times are the interrupted gateway's, which a clock
        // stepped since may put onto the new stream's: matched against it too, they fell among
        // its samples and were dropped as collisions (a clock stepped back 5 s: all 291 of them).
        let ended = pending.logged.resetUIDs.filter(pending.isOfAnEndedBoot)
        guard !ended.isEmpty else {
            return (plan([stored, window.samples], pending.logged.samples, placingFrom: placingFrom), Double(offset) / 1e6)
        }
        let before = pending.logged.samples.filter { ended.contains($0.resetUID) }
        let since = pending.logged.samples.filter { !ended.contains($0.resetUID) }
        let placed = plan([stored], before) + plan([stored, window.samples], since)
        return (placed.sorted { $0.time < $1.time }, Double(offset) / 1e6)
    }

    /// Seals `points` (in time order) into the restart gap's session as chunks after its last.
    private func sealRestartCorrection(_ pending: inout PendingRestartGap, board: String, _ points: [RecordedPoint]) -> Bool {
        var filling = pending
        let sealed = sealCorrection(points, sessionID: pending.gap.sessionID, board: board,
                                    firstSeq: pending.gap.nextSeq + pending.sealedChunks) { chunk in
            filling.sealedChunks += 1
            filling.sealedThrough = chunk.lastTimestamp
            filling.filled += chunk.pointCount
        }
        pending = filling
        // A session whose boards all stalled through it stopped with no point: it has some now.
        if pending.sealedChunks > 0 { emptySessions.remove(pending.gap.sessionID) }
        return sealed
    }
}

extension RawVector {
    /// The counts a stored reading was scaled from (`scale` LSB per unit).
    init(counts reading: (x: Float, y: Float, z: Float), scale: Double) {
        func count(_ value: Float) -> Int16 { Int16(clamping: Int((Double(value) * scale).rounded())) }
        self.init(x: count(reading.x), y: count(reading.y), z: count(reading.z))
    }

    /// The counts a stored gyro reading was scaled from: what the board sent, to match a
    /// stored point against logged or streamed samples.
    init(stored reading: GyroReading, scale: Double) {
        self.init(counts: (reading.x, reading.y, reading.z), scale: scale)
    }
}
