import Foundation
import GRDB
import Recording

/// One document waiting for upload.
///
/// Delivery is at-least-once: an item handed out by `nextBatch` is `in_flight` until
/// `markSent` or `markFailed`; at startup in-flight items go back to pending. Document
/// names are fixed at seal (chunks) or submission (records), so a replayed upload is
/// idempotent upstream (create with `exists=false`, ALREADY_EXISTS = success).
public struct OutboxItem: Hashable, Sendable {
    /// Kind of document.
    public enum Kind: String, Hashable, Sendable {
        case realtimeData = "realtime_data"
        case records
    }

    /// Row id, the handle for `markSent`/`markFailed`.
    public var id: Int64
    public var kind: Kind
    /// Document name (chunk UUID, or `user_id___time`).
    public var documentName: String
    public var sessionID: String
    /// Upload order within the session.
    public var seq: Int
    /// Failed attempts so far.
    public var attempts: Int
    /// Payload bytes (chunk blob, or the records document's Firestore size).
    public var bytes: Int
}

/// Outbox state of an item.
public enum OutboxState: String, Hashable, Sendable, CaseIterable {
    case pending
    case inFlight = "in_flight"
    case sent
    /// A permanent error: kept with its reason, does not block later items.
    case dead
}

/// The size of what is not uploaded yet.
public struct BacklogStats: Hashable, Sendable {
    /// Items pending or in flight.
    public var count: Int
    /// Their payload bytes.
    public var bytes: Int64
    /// Seconds since the oldest of them was queued, nil when none.
    public var oldestUnsentAge: Double?
    /// Items dead-lettered.
    public var dead: Int
    /// Items in flight.
    public var inFlight: Int
}

extension BufferStore {
    /// Hands out the next documents to upload and marks them in flight: for every session
    /// with nothing in flight, its lowest-seq pending items (up to `perSession`), oldest
    /// sessions first, at most `limit` in all. One session's items are consecutive in seq
    /// order, so the upstream sees them in order.
    public func nextBatch(limit: Int = 16, perSession: Int = 4) throws -> [OutboxItem] {
        try writer.write { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT * FROM outbox o WHERE o.state = 'pending'
                  AND NOT EXISTS (SELECT 1 FROM outbox f WHERE f.session_id = o.session_id AND f.state = 'in_flight')
                ORDER BY (SELECT min(enqueued_at) FROM outbox m WHERE m.session_id = o.session_id), o.session_id, o.seq
                """)
            var perSessionCount: [String: Int] = [:]
            var items: [OutboxItem] = []
            for r in rows where items.count < limit {
                let session: String = r["session_id"]
                guard perSessionCount[session, default: 0] < perSession else { continue }
                perSessionCount[session, default: 0] += 1
                items.append(OutboxItem(id: r["id"], kind: OutboxItem.Kind(rawValue: r["kind"]) ?? .realtimeData,
                                        documentName: r["doc_name"], sessionID: session, seq: r["seq"],
                                        attempts: r["attempts"], bytes: r["bytes"]))
            }
            let now = nowMilliseconds()
            for item in items {
                try db.execute(sql: "UPDATE outbox SET state = 'in_flight', updated_at = ? WHERE id = ?", arguments: [now, item.id])
            }
            return items
        }
    }

    /// Marks items uploaded (ALREADY_EXISTS on a replay counts too).
    public func markSent(_ ids: [Int64]) throws {
        try writer.write { db in
            let now = nowMilliseconds()
            var sessions = Set<String>()
            for id in ids {
                try db.execute(sql: "UPDATE outbox SET state = 'sent', sent_at = ?, updated_at = ?, reason = NULL WHERE id = ?",
                               arguments: [now, now, id])
                if let s = try String.fetchOne(db, sql: "SELECT session_id FROM outbox WHERE id = ?", arguments: [id]) { sessions.insert(s) }
            }
            for s in sessions { try refreshSummary(db, sessionID: s) }
        }
    }

    /// Records a failed upload: transient failures go back to pending (attempts + 1),
    /// permanent ones to dead with the reason.
    public func markFailed(_ id: Int64, permanent: Bool, reason: String) throws {
        try writer.write { db in
            try db.execute(sql: """
                UPDATE outbox SET state = ?, attempts = attempts + 1, reason = ?, updated_at = ? WHERE id = ?
                """, arguments: [permanent ? "dead" : "pending", reason, nowMilliseconds(), id])
            if permanent, let s = try String.fetchOne(db, sql: "SELECT session_id FROM outbox WHERE id = ?", arguments: [id]) {
                configuration.log("outbox: item \(id) of session \(s) dead-lettered: \(reason)")
            }
        }
    }

    /// Puts dead items back to pending (after the cause was fixed); all sessions when nil.
    @discardableResult
    public func requeueDead(sessionID: String? = nil) throws -> Int {
        try writer.write { db in
            if let sessionID {
                try db.execute(sql: "UPDATE outbox SET state = 'pending', updated_at = ? WHERE state = 'dead' AND session_id = ?",
                               arguments: [nowMilliseconds(), sessionID])
            } else {
                try db.execute(sql: "UPDATE outbox SET state = 'pending', updated_at = ? WHERE state = 'dead'",
                               arguments: [nowMilliseconds()])
            }
            return db.changesCount
        }
    }

    /// Items by state with their reasons (for diagnostics).
    public func outboxState(of documentName: String) throws -> (state: OutboxState, attempts: Int, reason: String?)? {
        try reader.read { db in
            guard let r = try Row.fetchOne(db, sql: "SELECT state, attempts, reason FROM outbox WHERE doc_name = ?",
                                           arguments: [documentName]) else { return nil }
            return (OutboxState(rawValue: r["state"]) ?? .pending, r["attempts"], r["reason"])
        }
    }

    /// Backlog size: what is pending or in flight.
    public func backlogStats() throws -> BacklogStats {
        try reader.read { db in
            let r = try Row.fetchOne(db, sql: """
                SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes, min(enqueued_at) AS oldest,
                       (SELECT count(*) FROM outbox WHERE state = 'dead') AS dead,
                       (SELECT count(*) FROM outbox WHERE state = 'in_flight') AS in_flight
                FROM outbox WHERE state IN ('pending', 'in_flight')
                """)!
            let oldest: Double? = r["oldest"]
            return BacklogStats(count: r["n"], bytes: r["bytes"],
                                oldestUnsentAge: oldest.map { (nowMilliseconds() - $0) / 1000 }, dead: r["dead"],
                                inFlight: r["in_flight"])
        }
    }

    /// The `realtime_data` document of a sealed chunk, decoded from its blob (checksum
    /// verified); nil for an unknown name.
    public func realtimeDocument(name: String) throws -> RealtimeDataDocument? {
        try reader.read { db in
            guard let r = try Row.fetchOne(db, sql: "SELECT * FROM chunks WHERE name = ?", arguments: [name]) else { return nil }
            return try Self.document(r)
        }
    }

    static func document(_ r: Row) throws -> RealtimeDataDocument {
        let name: String = r["name"]
        guard let data = r["points"] as Data? else { throw StoreError.corruptChunk(name, "points deleted (synced and dropped)") }
        let bytes = [UInt8](data)
        let crc: Int64 = r["crc32"]
        guard UInt32(truncatingIfNeeded: crc) == CRC32.checksum(bytes) else { throw StoreError.corruptChunk(name, "checksum mismatch") }
        let points: [RecordedPoint]
        do { points = try PointCodec.decode(bytes) } catch { throw StoreError.corruptChunk(name, error.description) }
        guard points.count == r["point_count"] as Int else {
            throw StoreError.corruptChunk(name, "\(points.count) points, expected \(r["point_count"] as Int)")
        }
        return RealtimeDataDocument(name: name, sessionID: r["session_id"], board: r["board"], seq: r["seq"], points: points)
    }

    /// Stores a key of sync state (the Uplink's cursors, auth expiry, ...).
    public func setSyncState(_ key: String, _ value: String) throws {
        try writer.write { try $0.execute(sql: "INSERT OR REPLACE INTO sync_state (key, value) VALUES (?, ?)", arguments: [key, value]) }
    }

    /// Reads a key of sync state.
    public func syncState(_ key: String) throws -> String? {
        try reader.read { try String.fetchOne($0, sql: "SELECT value FROM sync_state WHERE key = ?", arguments: [key]) }
    }
}
