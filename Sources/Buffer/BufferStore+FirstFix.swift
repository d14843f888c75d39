import Foundation
import GRDB
import Recording

/// A session's times taken on the unsynchronised system clock before the gateway's first GNSS
/// fix, moved onto GNSS time once that fix gives the correction (issue 21): the session
/// recording then, or one the same process stopped before it.
///
/// One transaction moves the session's start (and its day in the history) and end, revises each sealed
/// chunk whose time source is `unsynchronised_system_clock` (same name, seq and place in the
/// seal order, its points and first and last times moved, `gnss_corrected`, uploaded again to
/// replace the stored document), the gaps its boards' logs still fill and what a logged session
/// keeps of its start and boot origins, revises a records document already written (its start,
/// end and time source), and keeps the offset in the session (`system_clock_shift_ms`). The segment journal, a file
/// beside the database, is not rewritten: its records of the session whose time source is
/// `unsynchronised_system_clock` are read with the session's offset added (``openPoints(_:sessionID:)``),
/// so recovery after a kill -9 seals them on GNSS time. Killed before the commit, nothing moved
/// and the session says `unsynchronised_system_clock`; after it, every time is on GNSS time.
extension BufferStore {
    /// v11: the offset (ms) that moved a session's system-clock times onto GNSS time at the
    /// gateway's first fix; NULL: none (every session before this version).
    static func addSystemClockShifts(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE sessions ADD COLUMN system_clock_shift_ms REAL")
    }

    /// Moves the session's system-clock times `offset` ms later, onto GNSS time: recording, or
    /// stopped (its survey in or not) by the process whose first fix gives the offset.
    public func convertOntoGNSSTime(sessionID: String, by offset: Double) throws {
        let unsynchronised = TimeSource.unsynchronisedSystemClock.rawValue
        let revised = try writer.write { db -> Int in
            guard let session = try Row.fetchOne(db, sql: """
                SELECT started_at, state FROM sessions WHERE id = ? AND system_clock_shift_ms IS NULL
                """, arguments: [sessionID]) else {
                throw StoreError.sessionState(sessionID, "unknown, or its times were converted onto GNSS time before")
            }
            let startedAt: Double = session["started_at"]
            // A stopped session's time source is its start's and its points': all GNSS-corrected now.
            try db.execute(sql: """
                UPDATE sessions SET started_at = ?1, day = ?2, system_clock_shift_ms = ?3, ended_at = ended_at + ?3,
                    time_source = CASE WHEN time_source = ?4 THEN ?5 ELSE time_source END
                WHERE id = ?6
                """, arguments: [startedAt + offset, day(ofEpochMilliseconds: startedAt + offset), offset, unsynchronised,
                                 TimeSource.gnssCorrected.rawValue, sessionID])
            var revised = 0
            for row in try Row.fetchAll(db, sql: """
                SELECT id, name, \(Self.storedPointsColumn) FROM chunks WHERE session_id = ? AND time_source = ? ORDER BY id
                """, arguments: [sessionID, unsynchronised]) {
                // Evicted, or damaged: left as it is, and says so.
                guard let data = row["stored_points"] as Data?, let points = try? PointCodec.decode([UInt8](data)) else { continue }
                try revise(db, chunk: row["id"], name: row["name"], sessionID: sessionID, points: points.map { $0.shifted(by: offset) })
                try db.execute(sql: "UPDATE chunks SET time_source = ? WHERE name = ?",
                               arguments: [TimeSource.gnssCorrected.rawValue, row["name"] as String])
                revised += 1
            }
            // What a stopped session still waits for from its boards' logs.
            try db.execute(sql: "UPDATE restart_gaps SET after_ms = after_ms + ?1, until_ms = until_ms + ?1 WHERE session_id = ?2",
                           arguments: [offset, sessionID])
            try db.execute(sql: "UPDATE logged_rests SET started_at = started_at + ?1, end_ms = end_ms + ?1 WHERE session_id = ?2",
                           arguments: [offset, sessionID])
            try db.execute(sql: "UPDATE logged_rest_origins SET origin_ms = origin_ms + ? WHERE session_id = ?",
                           arguments: [offset, sessionID])
            // A records document already written says the old start, end and time source: revised
            // after the chunks (uploaded again after them), as a late correction revises it.
            if session["state"] as String == "submitted" {
                let last = try Int64.fetchOne(db, sql: "SELECT max(upload_seq) FROM chunks WHERE session_id = ?", arguments: [sessionID])
                try reviseRecords(db, sessionID: sessionID, after: last ?? -1)
                revised += 1
            }
            try refreshSummary(db, sessionID: sessionID)
            return revised
        }
        if revised > 0 { outboxDoorbell.ring() }
    }

    /// A segment of `sessionID` as the session's times are now: one written on the system
    /// clock before the session's first fix moved onto GNSS time (`shift`, ms; nil: none).
    static func onGNSSTime(_ segment: StoredSegment, shift: Double?) -> StoredSegment {
        guard let shift, segment.timeSource == TimeSource.unsynchronisedSystemClock.rawValue,
              let points = PointCodec.shifted(segment.points, by: shift) else { return segment }
        var moved = segment
        moved.points = points
        moved.timeSource = TimeSource.gnssCorrected.rawValue
        return moved
    }
}
