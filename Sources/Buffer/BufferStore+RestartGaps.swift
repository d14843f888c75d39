import Foundation
import GRDB
import Recording

/// The gaps a gateway restart left (issue 21), kept in `restart_gaps` until the board's flash
/// log fills them: one row per recovered session and board, opened by startup recovery, given
/// its end once the board streams again (`until_ms`: the new stream's first sample), and
/// deleted once filled. A second restart before that finds the row, so the gap is filled after
/// any number of restarts while the board still holds it.
extension BufferStore {
    /// How much of a board's stored stream a restart gap keeps as its tail, milliseconds: more
    /// than the flash log holds from before a crash while it is trimmed (10 s and a margin).
    static let restartTailMilliseconds = 60_000.0

    /// The sessions a correction chunk may still be sealed into (a `WHERE` clause over
    /// `sessions`): stopped, survey or not, with their data kept.
    static let correctable = "state IN ('awaiting_survey', 'submitted') AND data_state = 'kept'"

    /// v6: the restart gaps waiting for a board's flash log.
    static func createRestartGaps(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE restart_gaps (
                session_id TEXT NOT NULL,
                board TEXT NOT NULL,
                until_ms REAL,
                PRIMARY KEY (session_id, board)
            ) WITHOUT ROWID;
            """)
    }

    /// v10: a gap a stop kept keeps where it begins (`after_ms`, epoch ms) and whether it opens
    /// the board's part of the session (`opens_session`, ``RestartGap/opensSession``). A board
    /// stalled through a whole session has no stored point to begin it at, and one stalled at
    /// the session's start has none before its gap: a restarted gateway lost the first's gap and
    /// counted the second's sensors' start-up (30-130 ms) as missing. NULL and 0 for the rows
    /// recovery opens (they begin after the stored tail) and for those kept before.
    static func addRestartGapOpenings(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE restart_gaps ADD COLUMN after_ms REAL;
            ALTER TABLE restart_gaps ADD COLUMN opens_session INTEGER NOT NULL DEFAULT 0;
            """)
    }

    /// Opens a restart gap for each board with points in `sessionID` (recovery, in its
    /// transaction), except a logged board's: its whole log waits for it (`logged_rests`).
    static func openRestartGaps(_ db: Database, sessionID: String) throws {
        try db.execute(sql: """
            INSERT OR IGNORE INTO restart_gaps (session_id, board)
            SELECT DISTINCT session_id, board FROM chunks WHERE session_id = ?1
              AND board NOT IN (SELECT board FROM logged_rests WHERE session_id = ?1)
            """, arguments: [sessionID])
    }

    /// The restart gaps still waiting for a board's log: in sessions recovered at startup, now
    /// or at an earlier start, stopped (a session whose survey is in gets its correction chunks
    /// too: they revise its records document). Rows of sessions the buffer no longer holds go.
    public func restartGaps() throws -> [RestartGap] {
        let rows = try writer.write { db -> [Row] in
            try db.execute(sql: """
                DELETE FROM restart_gaps WHERE session_id NOT IN (SELECT id FROM sessions WHERE \(Self.correctable))
                """)
            return try Row.fetchAll(db, sql: """
                SELECT g.session_id, g.board, g.until_ms, g.after_ms, g.opens_session FROM restart_gaps g
                JOIN sessions s ON s.id = g.session_id
                ORDER BY g.board, s.started_at
                """)
        }
        return try reader.read { db in
            try rows.compactMap { row in
                try restartGap(db, sessionID: row["session_id"], board: row["board"], until: row["until_ms"], after: row["after_ms"],
                               opensSession: row["opens_session"])
            }
        }
    }

    /// The gaps a gateway restart left in `sessionIDs`, as ``restartGaps()`` gives them.
    public func restartGaps(sessionIDs: [String]) throws -> [RestartGap] {
        try restartGaps().filter { sessionIDs.contains($0.sessionID) }
    }

    /// The restart gap of `board` in `sessionID` ends at `until` (epoch ms); a gap a stop kept
    /// (no row yet) is kept from now on.
    public func restartGapBounded(sessionID: String, board: String, until: Double) throws {
        try restartGapKept(StopGapBound(sessionID: sessionID, board: board, until: until))
    }

    /// The gap a session's stop left is kept: its end, where it begins and whether it opens the
    /// board's part of the session.
    public func restartGapKept(_ gap: StopGapBound) throws {
        try writer.write { db in try Self.keepRestartGap(db, gap) }
    }

    /// ``restartGapKept(_:)`` inside the caller's transaction. A gap's beginning, once kept, stays.
    static func keepRestartGap(_ db: Database, _ gap: StopGapBound) throws {
        try db.execute(sql: """
            INSERT INTO restart_gaps (session_id, board, until_ms, after_ms, opens_session) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (session_id, board) DO UPDATE SET until_ms = excluded.until_ms,
                after_ms = coalesce(excluded.after_ms, after_ms), opens_session = max(opens_session, excluded.opens_session)
            """, arguments: [gap.sessionID, gap.board, gap.until, gap.after, gap.opensSession])
    }

    /// The restart gap of `board` in `sessionID` is filled, or can no longer be.
    public func restartGapClosed(sessionID: String, board: String) throws {
        try writer.write { db in
            try db.execute(sql: "DELETE FROM restart_gaps WHERE session_id = ? AND board = ?", arguments: [sessionID, board])
        }
    }

    /// A board's gap in a session: its last stored points (about its last minute), the seq its
    /// next chunk gets, and with its end the board's first stored points from there on (in any
    /// session: what the stream after the restart recorded). It begins at `after` (epoch ms) when
    /// its stop kept that, else after the stored tail; one that `opensSession` may have no stored
    /// point in its session (the board stalled through all of it).
    private func restartGap(_ db: Database, sessionID: String, board: String, until: Double?, after: Double?,
                            opensSession: Bool) throws -> RestartGap? {
        // Newest chunk first, until the tail spans its minute.
        let rows = try Row.fetchCursor(db, sql: """
            SELECT seq, last_ts, \(Self.storedPointsColumn) FROM chunks
            WHERE session_id = ? AND board = ? ORDER BY seq DESC
            """, arguments: [sessionID, board])
        var nextSeq: Int?
        var chunks: [[RecordedPoint]] = []
        var newest: Double?
        while let row = try rows.next() {
            nextSeq = nextSeq ?? (row["seq"] as Int) + 1
            let points = Self.decodeSalvaging([UInt8]((row["stored_points"] as Data?) ?? Data()))
            guard !points.isEmpty else { break }
            newest = newest ?? points.last?.gyroscope.timestamp
            chunks.append(points)
            if let newest, let first = points.first, newest - first.gyroscope.timestamp >= Self.restartTailMilliseconds { break }
        }
        if nextSeq == nil, opensSession, let after {
            return RestartGap(sessionID: sessionID, board: board, nextSeq: 0, tail: [], after: after, until: until,
                              head: try restartGapHead(db, sessionID: sessionID, board: board, until: until), opensSession: true)
        }
        guard let nextSeq, let newest else { return nil }
        let tail = chunks.reversed().joined().filter { newest - $0.gyroscope.timestamp <= Self.restartTailMilliseconds }
        return RestartGap(sessionID: sessionID, board: board, nextSeq: nextSeq, tail: Array(tail), after: after, until: until,
                          head: try restartGapHead(db, sessionID: sessionID, board: board, until: until), opensSession: opensSession)
    }

    /// With the gap's end (`until`, epoch ms): the board's first stored points from there on, in
    /// any later session (what the stream after the restart recorded), about a minute of them.
    private func restartGapHead(_ db: Database, sessionID: String, board: String, until: Double?) throws -> [RecordedPoint] {
        var head: [RecordedPoint] = []
        if let until {
            let after = try Row.fetchCursor(db, sql: """
                SELECT \(Self.storedPointsColumn) FROM chunks
                WHERE session_id IN (SELECT id FROM sessions WHERE started_at >= (SELECT started_at FROM sessions WHERE id = ?1)
                                     AND id <> ?1)
                  AND board = ?2 AND last_ts >= ?3
                ORDER BY first_ts LIMIT 2
                """, arguments: [sessionID, board, until])
            while let row = try after.next() {
                head += Self.decodeSalvaging([UInt8]((row["stored_points"] as Data?) ?? Data()))
                    .filter { $0.gyroscope.timestamp >= until && $0.gyroscope.timestamp - until <= Self.restartTailMilliseconds }
            }
        }
        return head
    }
}
