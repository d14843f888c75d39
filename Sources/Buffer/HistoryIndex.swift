import Foundation
import GRDB
import Recording

/// One day of the history index.
public struct HistoryDay: Hashable, Sendable, Codable {
    /// `YYYY-MM-DD` in the buffer's time zone (the day a session started).
    public var day: String
    public var sessions: Int
    /// Recorded session time, minutes.
    public var walkingMinutes: Double
    /// Metres along the GNSS tracks.
    public var distanceMetres: Double
    /// Gyro samples (points) recorded.
    public var samples: Int
    /// Sessions reporting each hazard type.
    public var hazards: [String: Int]
    /// Sessions fully uploaded.
    public var synced: Int
    /// Sessions with something not uploaded yet (including those awaiting a survey).
    public var unsynced: Int
    /// Sessions whose unsent data the disk budget evicted.
    public var lost: Int
    /// Samples missing in the sessions' gaps (the sum of their points' `missed_before`).
    public var missedSamples: Int

    enum CodingKeys: String, CodingKey {
        case day, sessions, samples, hazards, synced, unsynced, lost
        case missedSamples = "missed_samples"
        case walkingMinutes = "walking_minutes"
        case distanceMetres = "distance_m"
    }
}

/// The daily history index: per-session summaries updated whenever a session changes
/// (sealed, stopped, submitted, uploaded, evicted, deleted), and per-day totals recomputed
/// only for the day that changed. Reading history touches only `history_days`.
extension BufferStore {
    /// A session's point count, SQL over `sessions s`: while it records, summed from its
    /// chunks (covered by the chunk index; seals do not write the session row), afterwards
    /// the stored total.
    static let livePointCount = """
        CASE WHEN s.state = 'recording'
             THEN (SELECT coalesce(sum(c.point_count), 0) FROM chunks c WHERE c.session_id = s.id)
             ELSE s.point_count END
        """

    /// A session's missed samples, SQL over `sessions s`, live like `livePointCount` (each
    /// chunk counted them when it was sealed).
    static let liveMissed = """
        CASE WHEN s.state = 'recording'
             THEN (SELECT coalesce(sum(c.missed), 0) FROM chunks c WHERE c.session_id = s.id)
             ELSE s.missed END
        """

    /// A session's boards (JSON array, sorted), SQL over `sessions s`, live like `livePointCount`.
    static let liveBoards = """
        CASE WHEN s.state = 'recording'
             THEN (SELECT coalesce(json_group_array(board), '[]')
                   FROM (SELECT DISTINCT c.board AS board FROM chunks c WHERE c.session_id = s.id ORDER BY 1))
             ELSE s.boards END
        """

    /// The summary of one session, computed from the base tables. Its `samples` (what the
    /// day row counts) are 0 while the session records: a seal then changes nothing in the
    /// summary or the day, and `history` adds recording sessions' points live, so a
    /// seal writes no history page. `all_samples` is the session's full count.
    func computeSummary(_ db: Database, sessionID: String) throws -> Row? {
        try Row.fetchOne(db.cachedStatement(sql: """
            SELECT s.id AS session_id, s.day AS day,
                   CASE WHEN s.ended_at IS NULL THEN 0 ELSE s.ended_at - s.started_at END AS walking_ms,
                   s.distance_m AS distance_m, \(Self.livePointCount) AS all_samples,
                   CASE WHEN s.state = 'recording' THEN 0 ELSE s.point_count END AS samples,
                   \(Self.liveMissed) AS all_missed,
                   CASE WHEN s.state = 'recording' THEN 0 ELSE s.missed END AS missed,
                   coalesce(s.hazards, '{}') AS hazards,
                   CASE WHEN s.data_state = 'evicted' THEN 'lost'
                        WHEN s.state = 'submitted'
                            AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.session_id = s.id AND c.upload_state != 'sent')
                            AND NOT EXISTS (SELECT 1 FROM record_uploads r WHERE r.session_id = s.id AND r.state != 'sent')
                            THEN 'synced'
                        ELSE 'unsynced' END AS sync
            FROM sessions s WHERE s.id = ?
            """), arguments: [sessionID])
    }

    /// Updates one session's summary and its day (and the day it left, if any).
    ///
    /// When only the sample count or the sync state changed (a stop, most uploads), the
    /// day is adjusted by the integer difference in place; anything else (a new session,
    /// a stop, a survey, a deletion) recomputes the day from its summaries, so the
    /// floating-point totals never accumulate rounding from repeated deltas.
    func refreshSummary(_ db: Database, sessionID: String) throws {
        let old = try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM session_summaries WHERE session_id = ?"),
                                   arguments: [sessionID])
        guard let row = try computeSummary(db, sessionID: sessionID) else {
            try db.execute(sql: "DELETE FROM session_summaries WHERE session_id = ?", arguments: [sessionID])
            if let old { try recomputeDay(db, day: old["day"]) }
            return
        }
        let day: String = row["day"]
        if let old, try applySummaryDelta(db, old: old, new: row) { return }
        try db.execute(sql: """
            INSERT OR REPLACE INTO session_summaries (session_id, day, walking_ms, distance_m, samples, hazards, sync, missed)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [row["session_id"], day, row["walking_ms"], row["distance_m"], row["samples"],
                             row["hazards"], row["sync"], row["missed"]])
        try recomputeDay(db, day: day)
        if let oldDay = old?["day"] as String?, oldDay != day { try recomputeDay(db, day: oldDay) }
    }

    /// Applies a samples/missed/sync-only change of a session's summary to it and its day in place;
    /// false (nothing written) when another field changed, so the caller recomputes.
    private func applySummaryDelta(_ db: Database, old: Row, new: Row) throws -> Bool {
        let day: String = new["day"]
        guard old["day"] as String == day, old["walking_ms"] as Double == new["walking_ms"] as Double,
              old["distance_m"] as Double == new["distance_m"] as Double,
              old["hazards"] as String == new["hazards"] as String else { return false }
        let oldSamples: Int = old["samples"], newSamples: Int = new["samples"]
        let oldMissed: Int = old["missed"], newMissed: Int = new["missed"]
        let oldSync: String = old["sync"], newSync: String = new["sync"]
        if oldSamples == newSamples && oldMissed == newMissed && oldSync == newSync { return true }
        func count(_ state: String) -> Int { (newSync == state ? 1 : 0) - (oldSync == state ? 1 : 0) }
        try db.cachedStatement(sql: """
            UPDATE history_days SET samples = samples + ?, synced = synced + ?, unsynced = unsynced + ?, lost = lost + ?,
                missed = missed + ?
            WHERE day = ?
            """).execute(arguments: [newSamples - oldSamples, count("synced"), count("unsynced"), count("lost"),
                                     newMissed - oldMissed, day])
        // A missing day row means the index was damaged; the caller rebuilds it.
        guard db.changesCount == 1 else { return false }
        try db.cachedStatement(sql: "UPDATE session_summaries SET samples = ?, sync = ?, missed = ? WHERE session_id = ?")
            .execute(arguments: [newSamples, newSync, newMissed, new["session_id"]])
        return true
    }

    /// Recomputes one day's totals from its session summaries.
    func recomputeDay(_ db: Database, day: String) throws {
        let rows = try Row.fetchAll(db, sql: "SELECT * FROM session_summaries WHERE day = ?", arguments: [day])
        guard !rows.isEmpty else {
            try db.execute(sql: "DELETE FROM history_days WHERE day = ?", arguments: [day])
            return
        }
        var walking = 0.0, distance = 0.0, samples = 0, synced = 0, unsynced = 0, lost = 0, missed = 0
        var hazards: [String: Int] = [:]
        for r in rows {
            walking += r["walking_ms"]
            distance += r["distance_m"]
            samples += r["samples"] as Int
            missed += r["missed"] as Int
            switch r["sync"] as String {
            case "synced": synced += 1
            case "lost": lost += 1
            default: unsynced += 1
            }
            let text: String = r["hazards"]
            if let map = CompactJSON.decodeCounts(text) {
                for name in map.keys { hazards[name, default: 0] += 1 }
            }
        }
        let hazardsJSON = CompactJSON.encode(hazards)
        try db.execute(sql: """
            INSERT OR REPLACE INTO history_days (day, sessions, walking_ms, distance_m, samples, hazards, synced, unsynced, lost,
                                                 missed)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: [day, rows.count, walking, distance, samples, hazardsJSON, synced, unsynced, lost, missed])
    }

    /// The last `days` days of history (newest first), read from the index only. `days` nil
    /// reads every day.
    public func history(days: Int? = nil) throws -> [HistoryDay] {
        try reader.read { db in
            var sql = "SELECT * FROM history_days"
            var arguments: StatementArguments = []
            if let days {
                let since = configuration.now().addingTimeInterval(-Double(max(days, 1) - 1) * 86_400)
                sql += " WHERE day >= ?"
                arguments = [day(ofEpochMilliseconds: since.timeIntervalSince1970 * 1000)]
            }
            sql += " ORDER BY day DESC"
            var days = try Row.fetchAll(db, sql: sql, arguments: arguments).map(Self.historyDay)
            // Samples (and missed ones) of sessions still recording are in their chunks until they stop.
            for r in try Row.fetchAll(db, sql: """
                SELECT s.day AS day, sum(\(Self.livePointCount)) AS samples, sum(\(Self.liveMissed)) AS missed
                FROM sessions s INDEXED BY sessions_recording
                WHERE s.state = 'recording' GROUP BY s.day
                """) {
                let day: String = r["day"]
                if let i = days.firstIndex(where: { $0.day == day }) {
                    days[i].samples += r["samples"] as Int
                    days[i].missedSamples += r["missed"] as Int
                }
            }
            return days
        }
    }

    static func historyDay(_ r: Row) -> HistoryDay {
        let text: String = r["hazards"]
        let hazards = CompactJSON.decodeCounts(text) ?? [:]
        return HistoryDay(day: r["day"], sessions: r["sessions"], walkingMinutes: (r["walking_ms"] as Double) / 60_000,
                          distanceMetres: r["distance_m"], samples: r["samples"], hazards: hazards,
                          synced: r["synced"], unsynced: r["unsynced"], lost: r["lost"], missedSamples: r["missed"])
    }

    /// The history recomputed from the base tables alone (what the index must equal).
    public func historyFromScratch() throws -> [HistoryDay] {
        try reader.read { db in
            var byDay: [String: HistoryDay] = [:]
            // Summed in milliseconds and divided once, as the index does: minutes summed session
            // by session differ from it in the last digit.
            var walkingMs: [String: Double] = [:]
            for id in try String.fetchAll(db, sql: "SELECT id FROM sessions") {
                guard let r = try computeSummary(db, sessionID: id) else { continue }
                let day: String = r["day"]
                var d = byDay[day] ?? HistoryDay(day: day, sessions: 0, walkingMinutes: 0, distanceMetres: 0, samples: 0,
                                                  hazards: [:], synced: 0, unsynced: 0, lost: 0,
                                                  missedSamples: 0)
                d.sessions += 1
                walkingMs[day, default: 0] += r["walking_ms"] as Double
                d.walkingMinutes = walkingMs[day, default: 0] / 60_000
                d.distanceMetres += r["distance_m"]
                d.samples += r["all_samples"] as Int
                d.missedSamples += r["all_missed"] as Int
                switch r["sync"] as String {
                case "synced": d.synced += 1
                case "lost": d.lost += 1
                default: d.unsynced += 1
                }
                let text: String = r["hazards"]
                for name in (CompactJSON.decodeCounts(text) ?? [:]).keys {
                    d.hazards[name, default: 0] += 1
                }
                byDay[day] = d
            }
            return byDay.values.sorted { $0.day > $1.day }
        }
    }

    /// Deletes a session and all its data (user request); its day is recomputed.
    public func deleteSession(_ sessionID: String) throws {
        try writer.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?)", arguments: [sessionID]) == true else {
                throw StoreError.unknownSession(sessionID)
            }
            try db.execute(sql: "DELETE FROM open_chunks WHERE session_id = ?", arguments: [sessionID])
            try db.execute(sql: "DELETE FROM open_segments WHERE session_id = ?", arguments: [sessionID])
            try db.execute(sql: "DELETE FROM chunks WHERE session_id = ?", arguments: [sessionID])
            try db.execute(sql: "DELETE FROM record_uploads WHERE session_id = ?", arguments: [sessionID])
            try db.execute(sql: "DELETE FROM sessions WHERE id = ?", arguments: [sessionID])
            try refreshSummary(db, sessionID: sessionID)
        }
        journal?.ended(sessionID: sessionID)
    }
}
