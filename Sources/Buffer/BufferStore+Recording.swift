import Foundation
import GRDB
import Recording

extension BufferStore: RecordingStore {
    /// Records a new session (state `recording`).
    public func beginSession(_ start: SessionStart) throws {
        try writer.write { db in
            try db.execute(sql: """
                INSERT INTO sessions (id, started_at, start_trigger, state, day) VALUES (?, ?, ?, 'recording', ?)
                """, arguments: [start.sessionID, start.startedAt, start.trigger.description,
                                 day(ofEpochMilliseconds: start.startedAt)])
            try refreshSummary(db, sessionID: start.sessionID)
        }
    }

    /// Appends every board's segment of the last second to the segment journal in one write
    /// and one `fdatasync`: only that second's points, outside the database (see
    /// `SegmentJournal`), so a second costs about its own bytes.
    public func append(_ segments: [OpenSegment]) throws {
        guard !segments.isEmpty, let journal else { return }
        try journal.append(segments)
        freeSpace.stored(segments.reduce(0) { $0 + $1.bytes.count })
    }

    /// Seals a chunk: names it (uppercase UUID v4), stores its blob and checksum, drops the
    /// board's segments it covers, queues the document for upload and updates the session and the
    /// history index, in one transaction (one fsync). The disk budget is checked in that
    /// transaction from the running byte total; only when it is exceeded does eviction run
    /// (in transactions of its own) after the commit.
    @discardableResult
    public func seal(_ chunk: ChunkToSeal) throws -> String {
        // The recorder keeps the checksum as the chunk fills; otherwise it is computed here,
        // before taking the writer, so the lock is held only for SQLite work.
        let crc = chunk.checksum ?? CRC32.checksum(chunk.bytes)
        let (name, over) = try writer.writeWithoutTransaction { db -> (String, Bool) in
            try Self.immediateTransaction(db) {
                let name = try sealInTransaction(db, chunk, crc: crc)
                return (name, try overBudget(db, freshFreeSpace: false))
            }
        }
        freeSpace.stored(chunk.bytes.count)
        if let through = chunk.segmentsThrough {
            journal?.sealed(sessionID: chunk.sessionID, board: chunk.board, through: through)
        }
        outboxDoorbell.ring()
        if over { try enforceBudget() }
        return name
    }

    /// Runs `body` in one IMMEDIATE transaction, like GRDB's `write`, but through cached
    /// BEGIN and COMMIT statements: `write` compiles both anew (SQL parse and GRDB's statement
    /// analysis) for every transaction, several percent of a seal's CPU. Any error rolls back.
    static func immediateTransaction<T>(_ db: Database, _ body: () throws -> T) throws -> T {
        try db.cachedStatement(sql: "BEGIN IMMEDIATE TRANSACTION").execute()
        do {
            let result = try body()
            try db.cachedStatement(sql: "COMMIT TRANSACTION").execute()
            return result
        } catch {
            // A failed COMMIT or statement may already have rolled back (SQLITE_FULL, IOERR);
            // the error that matters is the first one.
            if db.isInsideTransaction { try? db.rollback() }
            throw error
        }
    }

    func sealInTransaction(_ db: Database, _ chunk: ChunkToSeal, crc: UInt32? = nil) throws -> String {
        let name = chunkNames.next()
        let now = nowMilliseconds()
        // One statement reads the session's state, the next upload_seq and the duplicate
        // check (one chunk per session, board and seq), all from the covering index instead of
        // a second UNIQUE index and a counter in the session row (a page each per seal). The
        // next upload_seq is the largest of four index seeks, one per upload state (the CHECK
        // constraint allows no other), not a scan of the session; the duplicate check does
        // scan the session's entries, comparing the integer seq before the board. The four answers come packed in one integer
        // (next upload_seq << 3 | submitted << 2 | duplicate << 1 | recording-and-kept), read as
        // a plain value, not as a Row (which builds a column-name table for every fetch).
        guard let packed = try Int64.fetchOne(db.cachedStatement(sql: """
            SELECT (1 + max(
                    coalesce((SELECT max(upload_seq) FROM chunks INDEXED BY chunks_session_upload
                              WHERE session_id = ?1 AND upload_state = 'pending'), -1),
                    coalesce((SELECT max(upload_seq) FROM chunks INDEXED BY chunks_session_upload
                              WHERE session_id = ?1 AND upload_state = 'in_flight'), -1),
                    coalesce((SELECT max(upload_seq) FROM chunks INDEXED BY chunks_session_upload
                              WHERE session_id = ?1 AND upload_state = 'sent'), -1),
                    coalesce((SELECT max(upload_seq) FROM chunks INDEXED BY chunks_session_upload
                              WHERE session_id = ?1 AND upload_state = 'dead'), -1))) * 8
                + (state = 'submitted') * 4
                + EXISTS (SELECT 1 FROM chunks INDEXED BY chunks_session_upload
                          WHERE session_id = ?1 AND seq = ?3 AND board = ?2) * 2
                + (state = 'recording' AND data_state = 'kept')
            FROM sessions WHERE id = ?1
            """), arguments: [chunk.sessionID, chunk.board, chunk.seq]) else {
            throw StoreError.unknownSession(chunk.sessionID)
        }
        let found = (live: packed & 1 == 1, duplicate: packed & 2 == 2, submitted: packed & 4 == 4, nextUploadSeq: packed >> 3)
        if found.duplicate {
            throw StoreError.sessionState(chunk.sessionID, "chunk \(chunk.seq) of board \(chunk.board) is already sealed")
        }
        // The chunk row carries its own upload state (pending, next upload_seq of the
        // session): one row, no separate outbox row. Its id is above every id ever used
        // (chunk_id_floor remembers deleted ones), so an upload handle is never reused.
        // The points go to a row of their own (see `createChunkPoints`): the chunk row, which
        // the Uplink updates, stays small; its zero-length `points` says "not evicted".
        let insert = try db.cachedStatement(sql: """
            INSERT INTO chunks (id, name, session_id, board, seq, upload_seq, updated_at, point_count, first_ts, last_ts,
                                time_source, missed, crc32, sealed_at, size, points)
            VALUES (max(coalesce((SELECT max(id) FROM chunks), 0), (SELECT value FROM chunk_id_floor WHERE id = 0)) + 1,
                    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, X'')
            RETURNING id
            """)
        let checksum = Int64(crc ?? chunk.checksum ?? CRC32.checksum(chunk.bytes))
        guard let id = try Int64.fetchOne(insert, arguments: [name, chunk.sessionID, chunk.board, chunk.seq, found.nextUploadSeq, now,
                                                              chunk.pointCount, chunk.firstTimestamp, chunk.lastTimestamp,
                                                              chunk.timeSource.rawValue, chunk.missedSamples, checksum, now,
                                                              chunk.bytes.count]) else {
            throw StoreError.sessionState(chunk.sessionID, "chunk \(chunk.seq) of board \(chunk.board) was not stored")
        }
        try Self.withBlob(chunk.bytes) { points in
            try db.cachedStatement(sql: "INSERT INTO chunk_points (chunk_id, points) VALUES (?, ?)").execute(arguments: [id, points])
        }
        if let through = chunk.segmentsThrough {
            try db.cachedStatement(sql: """
                DELETE FROM open_segments WHERE session_id = ? AND board = ? AND first_index + point_count <= ?
                """).execute(arguments: [chunk.sessionID, chunk.board, through])
        }
        // An open chunk of the format before segments (only recovery meets one).
        try db.cachedStatement(sql: "DELETE FROM open_chunks WHERE session_id = ? AND board = ?")
            .execute(arguments: [chunk.sessionID, chunk.board])
        // A recording session's point count and boards are read live from its chunks (see
        // `liveSessionColumns`) and stored when it stops; its summary and day row do not count
        // its samples (history adds them live). So a seal into a recording session writes no
        // session, summary or day page. A seal into any other session updates them here.
        // A recovered session ends with its last point: a correction chunk of its restart gap
        // (see `restartGaps()`) moves its end.
        if !found.live {
            try db.execute(sql: """
                UPDATE sessions SET point_count = point_count + ?1, missed = missed + ?4,
                    boards = CASE WHEN EXISTS (SELECT 1 FROM json_each(boards) WHERE value = ?2) THEN boards
                             ELSE (SELECT json_group_array(value) FROM
                                   (SELECT value FROM json_each(boards) UNION SELECT ?2 ORDER BY 1)) END,
                    ended_at = CASE WHEN stop_trigger = 'recovered' THEN max(coalesce(ended_at, ?5), ?5) ELSE ended_at END
                WHERE id = ?3
                """, arguments: [chunk.pointCount, chunk.board, chunk.sessionID, chunk.missedSamples, chunk.lastTimestamp])
            if found.submitted { try reviseRecords(db, sessionID: chunk.sessionID, after: found.nextUploadSeq) }
            try refreshSummary(db, sessionID: chunk.sessionID)
        }
        return name
    }

    /// Calls `body` with the points as a blob argument that borrows the array's storage
    /// instead of copying ~100 kB into a new Data: GRDB binds it without a copy of its own
    /// (SQLITE_STATIC), so SQLite reads the recorder's bytes directly. `body` must not keep it.
    static func withBlob<T>(_ bytes: [UInt8], _ body: (Data) throws -> T) rethrows -> T {
        try bytes.withUnsafeBytes { raw in
            guard let base = raw.baseAddress, raw.count > 0 else { return try body(Data()) }
            return try body(Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: base), count: raw.count, deallocator: .none))
        }
    }

    /// Queues a session's records document, after all its chunks in upload order.
    func enqueueRecords(_ db: Database, name: String, sessionID: String, bytes: Int) throws {
        let now = nowMilliseconds()
        try db.execute(sql: """
            INSERT INTO record_uploads (doc_name, session_id, upload_seq, state, bytes, enqueued_at, updated_at)
            VALUES (?1, ?2, (SELECT coalesce(max(upload_seq), -1) + 1 FROM chunks WHERE session_id = ?2), 'pending', ?3, ?4, ?4)
            """, arguments: [name, sessionID, bytes, now])
    }

    /// Stores a session's point count, missed samples and boards from its chunks (while it
    /// records they are read live, so seals need not write the session row). Call when it
    /// stops recording.
    func storeSessionTotals(_ db: Database, sessionID: String) throws {
        try db.execute(sql: """
            UPDATE sessions SET point_count = (SELECT coalesce(sum(point_count), 0) FROM chunks WHERE session_id = ?1),
                missed = (SELECT coalesce(sum(missed), 0) FROM chunks WHERE session_id = ?1),
                boards = (SELECT coalesce(json_group_array(board), '[]')
                          FROM (SELECT DISTINCT board FROM chunks WHERE session_id = ?1 ORDER BY board))
            WHERE id = ?1
            """, arguments: [sessionID])
    }

    /// Marks the session stopped: it now awaits its hazard survey.
    public func endSession(_ end: SessionEnd) throws {
        try endSession(end, keepingStopGaps: [])
    }

    /// Marks the session stopped and keeps the gaps its stop left in one transaction
    /// (``endSession(_:sealing:keepingStopGaps:)`` with no chunk).
    public func endSession(_ end: SessionEnd, keepingStopGaps gaps: [StopGapBound]) throws {
        try endSession(end, sealing: [], keepingStopGaps: gaps)
    }

    /// Seals the stop's chunks (as ``seal(_:)`` each), keeps the gaps its stop left
    /// (``restartGapKept(_:)`` for each) and marks the session stopped, in
    /// one transaction: one fsync on a stop's path instead of one per chunk, one per gap and one
    /// for the end. The disk budget is checked in it, as a seal checks it, and enforced after the commit.
    @discardableResult
    public func endSession(_ end: SessionEnd, sealing chunks: [ChunkToSeal], keepingStopGaps gaps: [StopGapBound]) throws -> [String] {
        let checksums = chunks.map { $0.checksum ?? CRC32.checksum($0.bytes) }
        let (names, over) = try writer.write { db -> ([String], Bool) in
            let names = try zip(chunks, checksums).map { try sealInTransaction(db, $0, crc: $1) }
            for gap in gaps { try Self.keepRestartGap(db, gap) }
            guard let state = try String.fetchOne(db, sql: "SELECT state FROM sessions WHERE id = ?", arguments: [end.sessionID]) else {
                throw StoreError.unknownSession(end.sessionID)
            }
            guard state == "recording" else { throw StoreError.sessionState(end.sessionID, "already stopped") }
            try db.execute(sql: """
                UPDATE sessions SET ended_at = ?, stop_trigger = ?, state = 'awaiting_survey', distance_m = ?,
                    time_source = ? WHERE id = ?
                """, arguments: [end.endedAt, end.trigger.description, end.distance, end.timeSource.rawValue, end.sessionID])
            try db.execute(sql: "DELETE FROM open_chunks WHERE session_id = ?", arguments: [end.sessionID])
            try db.execute(sql: "DELETE FROM open_segments WHERE session_id = ?", arguments: [end.sessionID])
            try storeSessionTotals(db, sessionID: end.sessionID)
            try refreshSummary(db, sessionID: end.sessionID)
            return (names, try !chunks.isEmpty && overBudget(db, freshFreeSpace: false))
        }
        freeSpace.stored(chunks.reduce(0) { $0 + $1.bytes.count })
        journal?.ended(sessionID: end.sessionID)
        if !chunks.isEmpty { outboxDoorbell.ring() }
        if over { try enforceBudget() }
        return names
    }

    /// Writes the `records` document of a stopped session and queues it for upload.
    @discardableResult
    public func submitSurvey(sessionID: String, survey: HazardSurvey, submittedAt: Date) throws -> RecordsDocument {
        let valid = try survey.validated()
        defer { outboxDoorbell.ring() }
        return try writer.write { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT state FROM sessions WHERE id = ?", arguments: [sessionID]) else {
                throw StoreError.unknownSession(sessionID)
            }
            let state: String = row["state"]
            guard state == "awaiting_survey" else {
                throw StoreError.sessionState(sessionID, state == "recording" ? "still recording" : "survey already submitted")
            }
            // The original schema's record points at its data; one with an empty `gscope_data`
            // (no board streamed during the session) is an invalid document, so none is written.
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM chunks WHERE session_id = ?)", arguments: [sessionID]) ?? false else {
                throw StoreError.sessionState(sessionID, "recorded no data (no board streamed), so no records document is written")
            }
            // Two submissions in the same second would share a document name; the later one
            // moves to the next free second.
            var timestamp = Int64(submittedAt.timeIntervalSince1970.rounded(.down))
            while try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM record_uploads WHERE doc_name = ?)",
                                    arguments: ["\(configuration.userID)___\(timestamp)"]) ?? false {
                timestamp += 1
            }
            let hazards = valid.hazards
            let hazardsJSON = CompactJSON.encode(hazards)
            try db.execute(sql: """
                UPDATE sessions SET state = 'submitted', submitted_at = ?, hazards = ?, no_hazard = ?, record_name = ?
                WHERE id = ?
                """, arguments: [timestamp, hazardsJSON, valid == .noHazard, "\(configuration.userID)___\(timestamp)", sessionID])
            guard let record = try recordsDocument(db, sessionID: sessionID) else { throw StoreError.unknownSession(sessionID) }
            try enqueueRecords(db, name: record.name, sessionID: sessionID, bytes: record.firestoreSize)
            try refreshSummary(db, sessionID: sessionID)
            return record
        }
    }

    /// The session's `records` document, nil until its survey is submitted.
    public func recordsDocument(sessionID: String) throws -> RecordsDocument? {
        try reader.read { try recordsDocument($0, sessionID: sessionID) }
    }

    func recordsDocument(_ db: Database, sessionID: String) throws -> RecordsDocument? {
        guard let row = try Row.fetchOne(db, sql: "SELECT * FROM sessions WHERE id = ? AND state = 'submitted'",
                                         arguments: [sessionID]) else { return nil }
        let names = try String.fetchAll(db, sql: "SELECT name FROM chunks WHERE session_id = ? ORDER BY \(Self.sealOrder)", arguments: [sessionID])
        let hazardsText: String = row["hazards"] ?? "{}"
        let hazards = CompactJSON.decodeCounts(hazardsText) ?? [:]
        let noHazard: Bool = row["no_hazard"] ?? false
        let boardsText: String = row["boards"]
        let boards = CompactJSON.decodeStrings(boardsText) ?? []
        let startedAt: Double = row["started_at"]
        let endedAt: Double = row["ended_at"] ?? startedAt
        let source: String = row["time_source"] ?? TimeSource.unsynchronisedSystemClock.rawValue
        return RecordsDocument(
            userID: configuration.userID, timestamp: row["submitted_at"], survey: noHazard ? .noHazard : .hazards(hazards),
            gscopeData: names, sessionID: sessionID, boards: boards, start: Int64(startedAt.rounded()),
            end: Int64(endedAt.rounded()), pointCount: row["point_count"],
            timeSource: TimeSource(rawValue: source) ?? .unsynchronisedSystemClock,
            revision: row["revision"], revisedAt: (row["revised_at"] as Double?).map { Int64($0.rounded()) })
    }

    /// Closes sessions a crash or power loss left `recording`: each board's unsealed points
    /// (its segments past its sealed chunks, in the journal or, from earlier versions, in
    /// `open_segments`, or an open chunk of the format before segments)
    /// are sealed in chunks of at most 2,000 points, and
    /// the session then awaits its survey with stop trigger `recovered`. Returns the
    /// recovered session IDs. Call at startup before recording.
    @discardableResult
    public func recoverInterruptedSessions() throws -> [String] {
        let ids = try writer.write { db -> [String] in
            let ids = try String.fetchAll(db, sql: "SELECT id FROM sessions WHERE state = 'recording' ORDER BY started_at")
            for id in ids {
                for open in try openPoints(db, sessionID: id) {
                    let points = open.points
                    var seq = open.seq
                    let board = open.board
                    let source = open.timeSource
                    var start = 0
                    while start < points.count {
                        let slice = points[start..<min(start + RealtimeDataDocument.maxPoints, points.count)]
                        let chunk = ChunkToSeal(
                            sessionID: id, board: board, seq: seq, bytes: PointCodec.encode(slice), pointCount: slice.count,
                            firstTimestamp: slice.first!.gyroscope.timestamp, lastTimestamp: slice.last!.gyroscope.timestamp,
                            timeSource: source, missedSamples: slice.reduce(0) { $0 + $1.missedBefore })
                        _ = try sealInTransaction(db, chunk)
                        seq += 1
                        start += slice.count
                    }
                }
                try db.execute(sql: "DELETE FROM open_chunks WHERE session_id = ?", arguments: [id])
                try db.execute(sql: "DELETE FROM open_segments WHERE session_id = ?", arguments: [id])
                try Self.openRestartGaps(db, sessionID: id)
                // The track distance lived in memory; rebuild it from the stored locations.
                var distance = TrackDistance()
                var lastTimestamp: Double?
                var worst = TimeSource.systemClockSynchronised
                var any = false
                for chunk in try Row.fetchAll(db, sql: "SELECT \(Self.storedPointsColumn), last_ts, time_source FROM chunks WHERE session_id = ? ORDER BY board, seq", arguments: [id]) {
                    any = true
                    lastTimestamp = max(lastTimestamp ?? 0, chunk["last_ts"])
                    worst = max(worst, TimeSource(rawValue: chunk["time_source"]) ?? .unsynchronisedSystemClock)
                    for p in Self.decodeSalvaging([UInt8]((chunk["stored_points"] as Data?) ?? Data())) {
                        if let l = p.location { distance.add(latitude: l.latitude, longitude: l.longitude, accuracy: l.accuracy.map(Double.init)) }
                    }
                }
                try db.execute(sql: """
                    UPDATE sessions SET state = 'awaiting_survey', stop_trigger = 'recovered',
                        ended_at = coalesce(?, started_at), distance_m = ?, time_source = ? WHERE id = ?
                    """, arguments: [lastTimestamp, distance.metres,
                                     (any ? worst : .unsynchronisedSystemClock).rawValue, id])
                try storeSessionTotals(db, sessionID: id)
                try refreshSummary(db, sessionID: id)
                configuration.log("recovered interrupted session \(id)")
            }
            return ids
        }
        // Every session that was recording is sealed now: no segment is needed any more.
        journal?.dropAll()
        if !ids.isEmpty {
            outboxDoorbell.ring()
            try enforceBudget()
        }
        return ids
    }

    /// Sessions stopped but without a submitted survey, oldest first.
    public func sessionsAwaitingSurvey() throws -> [String] {
        try reader.read { try String.fetchAll($0, sql: "SELECT id FROM sessions WHERE state = 'awaiting_survey' ORDER BY started_at") }
    }

    /// Decodes a blob, keeping the valid prefix of a damaged one (a checkpoint is written
    /// atomically, so this only matters for a disk that lies about flushes).
    static func decodeSalvaging(_ bytes: [UInt8]) -> [RecordedPoint] {
        do { return try PointCodec.decode(bytes) } catch {
            return (try? PointCodec.decode(Array(bytes[0..<error.offset]))) ?? []
        }
    }
}
