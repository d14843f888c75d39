import MetaWear

/// A logged session's samples still on a board that was away when the session stopped (rates
/// beyond the link, issue 21 part 3): the stop could not read its log to the end, so what the
/// board took until the stop is read when it comes back (idle, or into a later session) and
/// sealed into the stopped session as correction chunks after its last, marked `backfilled`
/// (its records document names them, so the survey waits for them). What the board logged
/// after the stop, not knowing of it, belongs to no session and is not kept.
extension SessionController {
    /// Boards whose log the stopping session `sessionID` could not read to the end (they were
    /// away): each keeps the rest for when it comes back. Call before ``stop(trigger:now:)``.
    public func keepLoggedRests(boards: Set<String>, now: Int64) {
        guard let session else { return }
        let end = timeBase.epochMilliseconds(monotonic: now)
        for board in boards.sorted() {
            guard let recording = loggedRecordings[board] ?? resumeAt[board].map({
                LoggedRecording(gyroRate: $0.gyroRate, accelerometerRate: $0.accelerometerRate)
            }) else { continue }
            pendingLoggedRests[board] = LoggedRest(sessionID: session.id, startedAt: session.startedAt, end: end, recording: recording)
        }
    }

    /// Boards of the session that left it and are not back.
    public var detachedBoards: Set<String> { Set(resumeAt.keys).subtracting(boards.keys) }

    /// The stop sealed the boards' last chunks: the kept rests wait for their boards, their
    /// chunks numbered after those.
    func waitForLoggedRests() {
        for (board, var rest) in pendingLoggedRests {
            rest.nextSeq = boards[board]?.seq ?? resumeAt[board]?.seq ?? 0
            loggedRests[board, default: []].append(rest)
        }
        pendingLoggedRests.removeAll()
    }

    /// Whether a stopped session still waits for `board`'s log (the board should read it out
    /// when it comes back).
    public func hasLoggedRest(board: String) -> Bool { loggedRests[board] != nil }

    /// The rests of `board` a page fills, oldest first: each takes the samples placed up to its
    /// session's end and seals them; `page` keeps what comes after. Whether all of it is stored.
    func fillLoggedRests(board: String, page: inout LoggedPage, outcome: inout LoggedOutcome) -> Bool {
        guard var rests = loggedRests[board] else { return true }
        var stored = true
        for k in rests.indices {
            guard awaitingSurvey.contains(rests[k].sessionID) else {
                lastStoreError = "the rest of \(board)'s log for session \(rests[k].sessionID) is not kept: its survey was submitted first"
                rests[k].done = true
                continue
            }
            let placed = place(page, on: &rests[k].recording, from: rests[k].startedAt, through: rests[k].end)
            page = placed.later
            var rest = rests[k]
            let sealed = sealCorrection(placed.points, sessionID: rest.sessionID, board: board,
                                        firstSeq: rest.nextSeq + rest.sealedChunks) { chunk in
                rest.sealedChunks += 1
                rest.filled += chunk.pointCount
            }
            outcome.recorded += rest.filled - rests[k].filled
            rests[k] = rest
            guard sealed else {
                stored = false
                continue
            }
            // The first sample after its end: the board's log holds nothing more of it.
            if !page.gyro.isEmpty { rests[k].done = true }
        }
        let open = rests.filter { !$0.done }
        loggedRests[board] = open.isEmpty ? nil : open
        return stored
    }

    /// `board`'s log is being read from a link after the stop: a readout that ends from now on
    /// read all of what the board kept of the rests, and what it holds past them (logged while
    /// no session recorded) may be deleted.
    public func loggedReadoutBegins(board: String) {
        guard let rests = loggedRests[board] else { return }
        loggedRests[board] = rests.map { rest in
            var begun = rest
            begun.readoutBegun = true
            return begun
        }
        loggedDrains.insert(board)
    }

    /// A readout of `board`'s log ended having read every entry it held when it began: the
    /// rests it served have everything the board kept.
    public func loggedReadoutEnded(board: String) {
        loggedDrains.remove(board)
        guard let rests = loggedRests[board] else { return }
        let open = rests.filter { !$0.readoutBegun }
        loggedRests[board] = open.isEmpty ? nil : open
    }

    /// Seals `points` (in time order) into `sessionID` as `board`'s chunks from `firstSeq` on,
    /// telling `sealed` of each; false when the store refused one (those before it are sealed).
    func sealCorrection(_ points: [RecordedPoint], sessionID: String, board: String, firstSeq: Int,
                        sealed: (ChunkToSeal) -> Void = { _ in }) -> Bool {
        var start = 0
        var seq = firstSeq
        while start < points.count {
            let slice = points[start..<min(start + configuration.chunkSize, points.count)]
            let chunk = ChunkToSeal(sessionID: sessionID, board: board, seq: seq, bytes: PointCodec.encode(slice),
                                    pointCount: slice.count, firstTimestamp: slice.first!.gyroscope.timestamp,
                                    lastTimestamp: slice.last!.gyroscope.timestamp, timeSource: timeBase.source,
                                    missedSamples: slice.reduce(0) { $0 + $1.missedBefore })
            do {
                try store.seal(chunk)
            } catch {
                lastStoreError = "correction chunk \(seq) of \(board) in session \(sessionID) failed: \(error)"
                return false
            }
            sealedCount += 1
            sealed(chunk)
            seq += 1
            start += slice.count
        }
        return true
    }

    /// Keeps the fixes logged points may still need: from the oldest time a logged board of
    /// the session, or a rest, is still to be downloaded from (bounded by the merger's limit).
    func keepFixesForLoggedDownloads() {
        var oldest: [Double] = loggedRests.values.flatMap { $0.map { $0.recording.lastPointTime ?? $0.startedAt } }
        if let session, configuration.recordsLogged {
            oldest.append(contentsOf: boards.keys.map { loggedRecordings[$0]?.lastPointTime ?? session.startedAt })
            oldest.append(contentsOf: loggedRecordings.values.map { $0.lastPointTime ?? session.startedAt })
            if boards.isEmpty, loggedRecordings.isEmpty { oldest.append(session.startedAt) }
        }
        guard let from = oldest.min() else {
            loggedFixes.dropFixes(before: .infinity)
            return
        }
        loggedFixes.dropFixes(before: from - loggedFixes.maxBracket)
    }
}

/// What a stopped logged session waits for from one board (see ``SessionController/keepLoggedRests(boards:now:)``).
struct LoggedRest {
    var sessionID: String
    /// The session's start and end, epoch ms: the board's samples between them are the session's.
    var startedAt: Double
    var end: Double
    /// The board's timelines as the session left them (what it recorded, its boot origins).
    var recording: LoggedRecording
    /// The seq of the board's first correction chunk in the session.
    var nextSeq = 0
    var sealedChunks = 0
    var filled = 0
    /// A readout began after the stop (so its end reads all the board kept of the session).
    var readoutBegun = false
    /// Every sample of the session is sealed, or it can no longer be.
    var done = false
}
