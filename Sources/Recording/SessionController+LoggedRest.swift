import MetaWear

/// A logged session's samples still on a board that was away when the session stopped (rates
/// beyond the link, issue 21 part 3): the stop could not read its log to the end, so what the
/// board took until the stop is read when it comes back (idle, or into a later session) and
/// sealed into the stopped session as correction chunks after its last, marked `backfilled`
/// (its records document names them: the survey waits a while for them, and a survey submitted
/// before they are in is revised). What the board logged
/// after the stop, not knowing of it, belongs to no session and is not kept.
///
/// The buffer keeps what each logged board of a session still waits for (``KeptLoggedRest``)
/// from the session's start: a gateway killed while the session records or reads the logs at
/// its stop, or shut down, or restarted before an away board is back, fills the session from
/// the board's log when the board is back, as a rest whose end is the board's return.
extension SessionController {
    /// Boards whose log the stopping session `sessionID` could not read to the end (they were
    /// away): each keeps the rest for when it comes back. Call before ``stop(trigger:now:)``.
    public func keepLoggedRests(boards: Set<String>, now: Int64) {
        guard let session else { return }
        let end = timeBase.epochMilliseconds(monotonic: now)
        for board in boards.sorted() {
            guard let recording = loggedRecordings[board] ?? resumeAt[board].map({
                LoggedRecording(gyroRate: $0.gyroRate, accelerometerRate: $0.accelerometerRate)
            }) ?? self.boards[board].map({ LoggedRecording(gyroRate: $0.gyroRate, accelerometerRate: $0.accelerometerRate) })
            else { continue }
            pendingLoggedRests[board] = LoggedRest(sessionID: session.id, startedAt: session.startedAt, end: end, recording: recording)
        }
    }

    /// Rests a previous gateway kept in the store (``KeptLoggedRest``): each waits for its
    /// board like one this gateway kept, placing the board's ticks with the session's boot
    /// origins; a rest with no end (its session was interrupted) ends when the board is back
    /// or a session starts, whichever comes first.
    public func expectLoggedRests(_ kept: [KeptLoggedRest]) {
        for stored in kept.sorted(by: { $0.startedAt < $1.startedAt }) {
            guard loggedRests[stored.board]?.contains(where: { $0.sessionID == stored.sessionID }) != true else { continue }
            var recording = LoggedRecording(gyroRate: stored.gyroRate, accelerometerRate: stored.accelerometerRate)
            for (uid, origin) in stored.bootOrigins {
                let monotonic = timeBase.monotonic(epochMilliseconds: origin)
                recording.gyro.origins[uid] = monotonic
                recording.accelerometer?.origins[uid] = monotonic
            }
            recording.lastPointTime = stored.storedTail.last?.gyroscope.timestamp
            // The line of the newest boot goes on from the stored last point.
            if let last = recording.lastPointTime, let newest = stored.bootOrigins.max(by: { $0.value < $1.value }) {
                recording.gyro.resume(uid: newest.key, after: timeBase.monotonic(epochMilliseconds: last))
            }
            var rest = LoggedRest(sessionID: stored.sessionID, startedAt: stored.startedAt, end: stored.end, recording: recording)
            rest.nextSeq = stored.nextSeq
            rest.storedTail = stored.storedTail
            loggedRests[stored.board, default: []].append(rest)
        }
    }

    /// Keeps in the store what the recording session waits for from `board`'s log (its boot
    /// origins so far): from the session's start until its stop, a restart fills it.
    func keepLoggedSession(board: String) {
        guard configuration.recordsLogged, let session else { return }
        let recording = loggedRecordings[board]
        guard let rates = recording.map({ ($0.gyroRate, $0.accelerometerRate) })
                ?? boards[board].map({ ($0.gyroRate, $0.accelerometerRate) }) else { return }
        let origins = recording?.gyro.origins ?? [:]
        guard keptLoggedOrigins[board] != Set(origins.keys) else { return }
        let kept = KeptLoggedRest(sessionID: session.id, board: board, startedAt: session.startedAt, end: nil, gyroRate: rates.0,
                                  accelerometerRate: rates.1, bootOrigins: origins.mapValues { timeBase.epochMilliseconds(monotonic: $0) })
        do {
            try store.keepLoggedRest(kept)
            keptLoggedOrigins[board] = Set(origins.keys)
        } catch {
            lastStoreError = "what session \(session.id) waits for from \(board)'s log is not kept: \(error)"
        }
    }

    /// Keeps `rest` of `board` in the store (its end, its origins).
    private func keep(_ rest: LoggedRest, board: String) {
        let kept = KeptLoggedRest(sessionID: rest.sessionID, board: board, startedAt: rest.startedAt, end: rest.end,
                                  gyroRate: rest.recording.gyroRate, accelerometerRate: rest.recording.accelerometerRate,
                                  bootOrigins: rest.recording.gyro.origins.mapValues { timeBase.epochMilliseconds(monotonic: $0) })
        do { try store.keepLoggedRest(kept) } catch {
            lastStoreError = "the rest of \(board)'s log for session \(rest.sessionID) is not kept: \(error)"
        }
    }

    /// `sessionID` waits for nothing more from `board`'s log.
    func closeLoggedRest(sessionID: String, board: String) {
        revisionFinished(sessionID: sessionID, board: board)
        do { try store.loggedRestClosed(sessionID: sessionID, board: board) } catch {
            lastStoreError = "the rest of \(board)'s log for session \(sessionID) is not closed: \(error)"
        }
    }

    /// Rests without an end (their session was interrupted) end at `end`, epoch ms: the board is
    /// back (`board`), or a session starts (every board).
    func boundOpenLoggedRests(board only: String? = nil, at end: Double) {
        for (board, rests) in loggedRests where only == nil || only == board {
            for k in rests.indices where rests[k].end == nil {
                loggedRests[board]?[k].end = end
                if let rest = loggedRests[board]?[k] { keep(rest, board: board) }
            }
        }
    }

    /// Boards of the session that left it and are not back.
    public var detachedBoards: Set<String> { Set(resumeAt.keys).subtracting(boards.keys) }

    /// The stop sealed the boards' last chunks: the kept rests wait for their boards (in the
    /// store too), their chunks numbered after those; the session's other logged boards (read
    /// to the end) wait for nothing more.
    func waitForLoggedRests(sessionID: String) {
        for (board, var rest) in pendingLoggedRests.sorted(by: { $0.key < $1.key }) {
            rest.nextSeq = boards[board]?.seq ?? resumeAt[board]?.seq ?? 0
            loggedRests[board, default: []].append(rest)
            keep(rest, board: board)
        }
        if configuration.recordsLogged {
            let others = Set(boards.keys).union(resumeAt.keys).union(loggedRecordings.keys).union(keptLoggedOrigins.keys)
            for board in others.subtracting(pendingLoggedRests.keys).sorted() { closeLoggedRest(sessionID: sessionID, board: board) }
        }
        pendingLoggedRests.removeAll()
        keptLoggedOrigins.removeAll()
    }

    /// Whether a stopped session still waits for `board`'s log (the board should read it out
    /// when it comes back).
    public func hasLoggedRest(board: String) -> Bool { loggedRests[board] != nil }

    /// The rests of `board` a page fills, oldest first: each takes the samples placed up to its
    /// session's end and seals them; `page` keeps what comes after. Whether all of it is stored.
    func fillLoggedRests(board: String, page: inout LoggedPage, outcome: inout LoggedOutcome, now: Int64?) -> Bool {
        guard loggedRests[board] != nil else { return true }
        // A rest kept from before a restart ends here at the latest (the page was read after it).
        boundOpenLoggedRests(board: board, at: now.map { timeBase.epochMilliseconds(monotonic: $0) } ?? session?.startedAt ?? .infinity)
        guard var rests = loggedRests[board] else { return true }
        var stored = true
        for k in rests.indices {
            // A session whose survey went in meanwhile gets them too: they revise its records.
            if !rests[k].storedTail.isEmpty, !page.gyro.isEmpty {
                // The first page after a restart may hold what the session stored already (read,
                // stored, not yet deleted on the board when the gateway went).
                page.gyro = Self.samplesAfter(rests[k].storedTail, in: page.gyro, scale: page.gyroScale)
                rests[k].storedTail = []
            }
            let placed = place(page, on: &rests[k].recording, from: rests[k].startedAt, through: rests[k].end ?? .infinity)
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
        for rest in rests where rest.done { closeLoggedRest(sessionID: rest.sessionID, board: board) }
        let open = rests.filter { !$0.done }
        loggedRests[board] = open.isEmpty ? nil : open
        return stored
    }

    /// The samples of `page` after the last of `tail` (a board's last stored points, in order):
    /// where the page holds the tail's last point (its raw counts, with as many of the points
    /// before it as the page holds before it), what follows it; else the whole page.
    static func samplesAfter(_ tail: [RecordedPoint], in page: [LoggedSample], scale: Double) -> [LoggedSample] {
        let raws = tail.map { RawVector(stored: $0.gyroscope, scale: scale) }
        guard let last = raws.last else { return page }
        for i in page.indices where page[i].raw == last {
            let before = min(i, raws.count - 1)
            if (1...max(1, before)).allSatisfy({ before == 0 || page[i - $0].raw == raws[raws.count - 1 - $0] }) {
                return Array(page[(i + 1)...])
            }
        }
        return page
    }

    /// `board`'s log is being read from a link after the stop: a readout that ends from now on
    /// read all of what the board kept of the rests, and what it holds past them (logged while
    /// no session recorded) may be deleted.
    public func loggedReadoutBegins(board: String, now: Int64) {
        boundOpenLoggedRests(board: board, at: timeBase.epochMilliseconds(monotonic: now))
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
        for rest in rests where rest.readoutBegun { closeLoggedRest(sessionID: rest.sessionID, board: board) }
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
            noteRevision(chunk)
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
    /// The session's start and end, epoch ms: the board's samples between them are the session's
    /// (no end yet: a rest a restart interrupted, until the board is back).
    var startedAt: Double
    var end: Double?
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
    /// Kept from before a restart: the board's last stored points in the session, which the
    /// first page read may hold again (``SessionController/samplesAfter(_:in:scale:)``).
    var storedTail: [RecordedPoint] = []
}
