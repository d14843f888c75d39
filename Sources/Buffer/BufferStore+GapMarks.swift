import Foundation
import GRDB
import Recording

/// Sealed chunks whose points' gap marks (and times) a board's flash log corrected (issue 21):
/// a gap the log filled, or showed was a delay, after the point that follows it was sealed (recovery sealed the points a link
/// drop's gap held with their live mark; a stop committed its held points with theirs). The
/// chunk is revised in place: same name, seq and seal order, its points, checksum and
/// `missed` rewritten, and queued for upload again under a new row id (an upload of the old
/// version still under way then marks a row that no longer exists, as a revised records
/// document's does), to replace the stored document upstream.
extension BufferStore {
    /// v9: a revised chunk keeps the id it was sealed with (its place in the session's seal
    /// order: export, the records document's `gscope_data`) in `sealed_id`; NULL for a chunk
    /// never revised. A revised chunk replaces its stored document upstream.
    static func addChunkRevisions(_ db: Database) throws {
        try db.execute(sql: "ALTER TABLE chunks ADD COLUMN sealed_id INTEGER")
    }

    /// A session's chunks in seal order (an `ORDER BY` over `chunks`).
    static let sealOrder = "coalesce(sealed_id, id)"

    /// `board`'s stored points in `sessionID` at the marks' times (non-backfilled points of
    /// its sealed chunks) get those marks; each chunk changed is revised and queued again, the
    /// session's missed total and history follow. A chunk whose points were evicted is left.
    public func reviseGapMarks(sessionID: String, board: String, _ marks: [GapMark]) throws {
        guard let earliest = marks.map(\.timestamp).min(), let latest = marks.map(\.timestamp).max() else { return }
        let byTime = Dictionary(marks.map { ($0.timestamp, $0) }, uniquingKeysWith: { $1 })
        let revised = try writer.write { db -> Int in
            let rows = try Row.fetchAll(db, sql: """
                SELECT id, name, missed, \(Self.storedPointsColumn) FROM chunks
                WHERE session_id = ? AND board = ? AND last_ts >= ? AND first_ts <= ?
                """, arguments: [sessionID, board, earliest, latest])
            var revised = 0
            var delta = 0
            for row in rows {
                // Evicted, or damaged (left as recovery and export salvage it).
                guard let data = row["stored_points"] as Data?, var points = try? PointCodec.decode([UInt8](data)) else { continue }
                var changed = false
                for k in points.indices where !points[k].backfilled {
                    guard let mark = byTime[points[k].gyroscope.timestamp],
                          mark.missedBefore != points[k].missedBefore || mark.gapMilliseconds != points[k].gapMilliseconds
                            || (mark.movedTo.map { $0 != points[k].gyroscope.timestamp } ?? false) else { continue }
                    points[k].missedBefore = mark.missedBefore
                    points[k].gapMilliseconds = mark.missedBefore > 0 ? mark.gapMilliseconds : 0
                    if let time = mark.movedTo { points[k] = points[k].moved(by: time - points[k].gyroscope.timestamp) }
                    changed = true
                }
                guard changed else { continue }
                try revise(db, chunk: row["id"], name: row["name"], sessionID: sessionID, points: points)
                delta += points.reduce(0) { $0 + $1.missedBefore } - (row["missed"] as Int)
                revised += 1
            }
            guard revised > 0 else { return 0 }
            try db.execute(sql: "UPDATE sessions SET missed = missed + ? WHERE id = ? AND state != 'recording'",
                           arguments: [delta, sessionID])
            try refreshSummary(db, sessionID: sessionID)
            return revised
        }
        if revised > 0 { outboxDoorbell.ring() }
    }

    /// Rewrites chunk `id` with `points` under a new row id, pending upload after the session's
    /// other chunks.
    func revise(_ db: Database, chunk id: Int64, name: String, sessionID: String, points: [RecordedPoint]) throws {
        let bytes = PointCodec.encode(points)
        let now = nowMilliseconds()
        guard let newID = try Int64.fetchOne(db, sql: """
            SELECT max(coalesce((SELECT max(id) FROM chunks), 0), (SELECT value FROM chunk_id_floor WHERE id = 0)) + 1
            """) else { throw StoreError.corruptChunk(name, "no id for its revision") }
        try db.execute(sql: "DELETE FROM chunk_points WHERE chunk_id = ?", arguments: [id])
        try db.execute(sql: """
            UPDATE chunks SET id = ?1, sealed_id = coalesce(sealed_id, id), points = X'', size = ?2, crc32 = ?3, missed = ?4,
                upload_seq = (SELECT coalesce(max(upload_seq), -1) + 1 FROM chunks WHERE session_id = ?5),
                upload_state = 'pending', attempts = 0, reason = NULL, sent_at = NULL, updated_at = ?6,
                first_ts = coalesce(?8, first_ts), last_ts = coalesce(?9, last_ts)
            WHERE id = ?7
            """, arguments: [newID, bytes.count, Int64(CRC32.checksum(bytes)), points.reduce(0) { $0 + $1.missedBefore },
                             sessionID, now, id, points.first?.gyroscope.timestamp, points.last?.gyroscope.timestamp])
        try db.execute(sql: "INSERT INTO chunk_points (chunk_id, points) VALUES (?, ?)", arguments: [newID, Data(bytes)])
    }
}
