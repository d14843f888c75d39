import Foundation
import GRDB
import Recording

/// What logged sessions (rates beyond the link, issue 21) still wait for from their boards'
/// flash logs (``KeptLoggedRest``), kept in `logged_rests` and `logged_rest_origins` so a
/// gateway killed, shut down or restarted before a board's log is read still fills the session
/// from it: one row per session and board, written when the board joins a logged session and
/// whenever its boot origins change, given its end at the stop (or at the board's return after
/// a restart), and deleted once the session has what the log held for it.
extension BufferStore {
    /// v7: what logged sessions wait for from their boards' logs.
    static func createLoggedRests(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE logged_rests (
                session_id TEXT NOT NULL,
                board TEXT NOT NULL,
                started_at REAL NOT NULL,
                end_ms REAL,
                gyro_rate REAL NOT NULL,
                accelerometer_rate REAL,
                PRIMARY KEY (session_id, board)
            ) WITHOUT ROWID;
            CREATE TABLE logged_rest_origins (
                session_id TEXT NOT NULL,
                board TEXT NOT NULL,
                reset_uid INTEGER NOT NULL,
                origin_ms REAL NOT NULL,
                PRIMARY KEY (session_id, board, reset_uid)
            ) WITHOUT ROWID;
            """)
    }

    /// Keeps (or updates) what `rest`'s session waits for from its board's log.
    public func keepLoggedRest(_ rest: KeptLoggedRest) throws {
        try writer.write { db in
            try db.execute(sql: """
                INSERT INTO logged_rests (session_id, board, started_at, end_ms, gyro_rate, accelerometer_rate)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (session_id, board) DO UPDATE SET end_ms = excluded.end_ms
                """, arguments: [rest.sessionID, rest.board, rest.startedAt, rest.end, rest.gyroRate, rest.accelerometerRate])
            for (uid, origin) in rest.bootOrigins.sorted(by: { $0.key < $1.key }) {
                try db.execute(sql: """
                    INSERT INTO logged_rest_origins (session_id, board, reset_uid, origin_ms) VALUES (?, ?, ?, ?)
                    ON CONFLICT (session_id, board, reset_uid) DO NOTHING
                    """, arguments: [rest.sessionID, rest.board, Int(uid), origin])
            }
        }
    }

    /// The logged session `sessionID` waits for nothing more from `board`'s log.
    public func loggedRestClosed(sessionID: String, board: String) throws {
        try writer.write { db in
            try db.execute(sql: "DELETE FROM logged_rests WHERE session_id = ? AND board = ?", arguments: [sessionID, board])
            try db.execute(sql: "DELETE FROM logged_rest_origins WHERE session_id = ? AND board = ?", arguments: [sessionID, board])
        }
    }

    /// What stopped logged sessions (a previous gateway's too, and those startup recovery
    /// closed) still wait for from their boards' logs, oldest session first, each with the seq
    /// of the board's next chunk and its last stored points. A session whose survey is in keeps
    /// its rests (their chunks revise its records document); rests of sessions the buffer no
    /// longer holds go.
    public func loggedRests() throws -> [KeptLoggedRest] {
        let rows = try writer.write { db -> [Row] in
            try db.execute(sql: """
                DELETE FROM logged_rests WHERE session_id NOT IN (SELECT id FROM sessions WHERE \(Self.correctable));
                DELETE FROM logged_rest_origins WHERE (session_id, board) NOT IN (SELECT session_id, board FROM logged_rests);
                """)
            return try Row.fetchAll(db, sql: "SELECT * FROM logged_rests ORDER BY started_at, board")
        }
        return try reader.read { db in
            try rows.map { row in
                let sessionID: String = row["session_id"]
                let board: String = row["board"]
                var origins: [UInt8: Double] = [:]
                for origin in try Row.fetchAll(db, sql: """
                    SELECT reset_uid, origin_ms FROM logged_rest_origins WHERE session_id = ? AND board = ?
                    """, arguments: [sessionID, board]) {
                    origins[UInt8(truncatingIfNeeded: origin["reset_uid"] as Int)] = origin["origin_ms"]
                }
                let (nextSeq, tail) = try storedTail(db, sessionID: sessionID, board: board)
                return KeptLoggedRest(sessionID: sessionID, board: board, startedAt: row["started_at"], end: row["end_ms"],
                                      gyroRate: row["gyro_rate"], accelerometerRate: row["accelerometer_rate"], bootOrigins: origins,
                                      nextSeq: nextSeq, storedTail: tail)
            }
        }
    }

    /// The seq of `board`'s next chunk in `sessionID` and its last stored points (at most
    /// ``KeptLoggedRest/storedTailLength``).
    private func storedTail(_ db: Database, sessionID: String, board: String) throws -> (nextSeq: Int, tail: [RecordedPoint]) {
        let rows = try Row.fetchCursor(db, sql: """
            SELECT seq, \(Self.storedPointsColumn) FROM chunks WHERE session_id = ? AND board = ? ORDER BY seq DESC
            """, arguments: [sessionID, board])
        var nextSeq: Int?
        var tail: [RecordedPoint] = []
        while tail.count < KeptLoggedRest.storedTailLength, let row = try rows.next() {
            nextSeq = nextSeq ?? (row["seq"] as Int) + 1
            let points = Self.decodeSalvaging([UInt8]((row["stored_points"] as Data?) ?? Data()))
            tail = Array(points.suffix(KeptLoggedRest.storedTailLength - tail.count)) + tail
        }
        return (nextSeq ?? 0, tail)
    }
}
