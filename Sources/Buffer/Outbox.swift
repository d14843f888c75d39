import Foundation
import GRDB
import Recording

/// One document waiting for upload.
///
/// Delivery is at-least-once: an item handed out by `nextBatch` is `in_flight` until
/// `markSent` or `markFailed`; at startup in-flight items go back to pending. Document
/// names are fixed at seal (chunks) or submission (records), so a replayed upload is
/// idempotent upstream (create with `exists=false`, ALREADY_EXISTS = success). A records
/// document revised after its survey is queued again under the same name with a new `id`
/// (see `reviseRecords`), and replaces the stored one upstream.
public struct OutboxItem: Hashable, Sendable {
    /// Kind of document.
    public enum Kind: String, Hashable, Sendable {
        case realtimeData = "realtime_data"
        case records
    }

    /// The handle for `markSent`/`markFailed`: opaque, never reused (a chunk's row id for
    /// `realtime_data`, the negated upload row id for `records`).
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

/// Where an item's upload state lives: a `realtime_data` document's in its chunk row (so a
/// seal writes one row), a `records` document's in `record_uploads`. The public id is the
/// chunk's row id, or the negated `record_uploads` id; neither is ever reused.
enum UploadHandle {
    case chunk(Int64)
    case record(Int64)

    init(_ id: Int64) { self = id < 0 ? .record(-id) : .chunk(id) }
}

extension BufferStore {
    /// Hands out the next documents to upload and marks them in flight: for every session
    /// with nothing in flight, its lowest-seq pending items (up to `perSession`), oldest
    /// sessions first, at most `limit` in all. One session's items are consecutive in seq
    /// order, so the upstream sees them in order.
    public func nextBatch(limit: Int = 16, perSession: Int = 4) throws -> [OutboxItem] {
        guard limit > 0, perSession > 0 else { return [] }
        return try writer.write { db in
            let items = try Self.uploadCandidates(db, limit: limit, perSession: perSession)
            let now = nowMilliseconds()
            for item in items {
                switch UploadHandle(item.id) {
                case let .chunk(id):
                    try db.cachedStatement(sql: "UPDATE chunks SET upload_state = 'in_flight', updated_at = ? WHERE id = ?")
                        .execute(arguments: [now, id])
                case let .record(id):
                    try db.execute(sql: "UPDATE record_uploads SET state = 'in_flight', updated_at = ? WHERE id = ?",
                                   arguments: [now, id])
                }
            }
            return items
        }
    }

    /// The items `nextBatch` hands out, without marking them: for every session with nothing
    /// in flight, its lowest-seq pending items (up to `perSession`), oldest sessions first, at
    /// most `limit` in all.
    static func uploadCandidates(_ db: Database, limit: Int, perSession: Int) throws -> [OutboxItem] {
        // Every lookup goes through chunks(session_id, upload_state, upload_seq): one index
        // seek per session, never a read of the chunk rows (each about a page of blob).
        let sessions = try String.fetchAll(db, sql: """
            SELECT s.id FROM sessions s
            WHERE (EXISTS (SELECT 1 FROM chunks c WHERE c.session_id = s.id AND c.upload_state = 'pending')
                   OR EXISTS (SELECT 1 FROM record_uploads r WHERE r.session_id = s.id AND r.state = 'pending'))
              AND NOT EXISTS (SELECT 1 FROM chunks c WHERE c.session_id = s.id AND c.upload_state = 'in_flight')
              AND NOT EXISTS (SELECT 1 FROM record_uploads r WHERE r.session_id = s.id AND r.state = 'in_flight')
            ORDER BY s.started_at, s.id
            """)
        var items: [OutboxItem] = []
        for session in sessions where items.count < limit {
            items += try pendingItems(db, sessionID: session, afterSeq: nil, limit: min(perSession, limit - items.count))
        }
        return items
    }

    /// A session's pending items after `afterSeq` (all when nil), lowest seq first.
    static func pendingItems(_ db: Database, sessionID: String, afterSeq: Int?, limit: Int) throws -> [OutboxItem] {
        let floor = afterSeq ?? Int.min
        var mine = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT id, name, upload_seq, attempts, size FROM chunks
            WHERE session_id = ? AND upload_state = 'pending' AND upload_seq > ? ORDER BY upload_seq LIMIT ?
            """), arguments: [sessionID, floor, limit]).map {
            OutboxItem(id: $0["id"], kind: .realtimeData, documentName: $0["name"], sessionID: sessionID,
                       seq: $0["upload_seq"], attempts: $0["attempts"], bytes: $0["size"])
        }
        if let r = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT id, doc_name, upload_seq, attempts, bytes FROM record_uploads
            WHERE session_id = ? AND state = 'pending' AND upload_seq > ?
            """), arguments: [sessionID, floor]) {
            mine.append(OutboxItem(id: -(r["id"] as Int64), kind: .records, documentName: r["doc_name"],
                                   sessionID: sessionID, seq: r["upload_seq"], attempts: r["attempts"], bytes: r["bytes"]))
        }
        return Array(mine.sorted { $0.seq < $1.seq }.prefix(limit))
    }

    /// Marks items uploaded (ALREADY_EXISTS on a replay counts too).
    public func markSent(_ ids: [Int64]) throws {
        try writer.write { db in
            let now = nowMilliseconds()
            var sessions = Set<String>()
            for id in ids {
                let session: String?
                switch UploadHandle(id) {
                case let .chunk(id):
                    session = try String.fetchOne(db.cachedStatement(sql: """
                        UPDATE chunks SET upload_state = 'sent', sent_at = ?1, updated_at = ?1, reason = NULL WHERE id = ?2
                        RETURNING session_id
                        """), arguments: [now, id])
                case let .record(id):
                    session = try String.fetchOne(db, sql: """
                        UPDATE record_uploads SET state = 'sent', sent_at = ?1, updated_at = ?1, reason = NULL WHERE id = ?2
                        RETURNING session_id
                        """, arguments: [now, id])
                }
                if let session { sessions.insert(session) }
            }
            for s in sessions { try refreshSummary(db, sessionID: s) }
        }
    }

    /// Records a failed upload: transient failures go back to pending (attempts + 1),
    /// permanent ones to dead with the reason.
    public func markFailed(_ id: Int64, permanent: Bool, reason: String) throws {
        try writer.write { db in
            let arguments: StatementArguments = [permanent ? "dead" : "pending", reason, nowMilliseconds()]
            let session: String?
            switch UploadHandle(id) {
            case let .chunk(rowID):
                session = try String.fetchOne(db, sql: """
                    UPDATE chunks SET upload_state = ?, attempts = attempts + 1, reason = ?, updated_at = ? WHERE id = ?
                    RETURNING session_id
                    """, arguments: arguments + [rowID])
            case let .record(rowID):
                session = try String.fetchOne(db, sql: """
                    UPDATE record_uploads SET state = ?, attempts = attempts + 1, reason = ?, updated_at = ? WHERE id = ?
                    RETURNING session_id
                    """, arguments: arguments + [rowID])
            }
            if permanent, let session {
                configuration.log("outbox: item \(id) of session \(session) dead-lettered: \(reason)")
            }
        }
    }

    /// Puts dead items back to pending (after the cause was fixed); all sessions when nil.
    @discardableResult
    public func requeueDead(sessionID: String? = nil) throws -> Int {
        let requeued = try writer.write { db in
            let now = nowMilliseconds()
            let sessionFilter = sessionID == nil ? "" : " AND session_id = ?"
            let arguments: StatementArguments = sessionID.map { [now, $0] } ?? [now]
            try db.execute(sql: """
                UPDATE chunks SET upload_state = 'pending', updated_at = ?
                WHERE session_id IN (SELECT id FROM sessions) AND upload_state = 'dead'
                """ + sessionFilter, arguments: arguments)
            var changed = db.changesCount
            try db.execute(sql: "UPDATE record_uploads SET state = 'pending', updated_at = ? WHERE state = 'dead'" + sessionFilter,
                           arguments: arguments)
            changed += db.changesCount
            return changed
        }
        if requeued > 0 { outboxDoorbell.ring() }
        return requeued
    }

    /// Items by state with their reasons (for diagnostics).
    public func outboxState(of documentName: String) throws -> (state: OutboxState, attempts: Int, reason: String?)? {
        try reader.read { db in
            guard let r = try Row.fetchOne(db, sql: """
                SELECT upload_state AS state, attempts, reason FROM chunks WHERE name = ?1
                UNION ALL SELECT state, attempts, reason FROM record_uploads WHERE doc_name = ?1
                """, arguments: [documentName]) else { return nil }
            return (OutboxState(rawValue: r["state"]) ?? .pending, r["attempts"], r["reason"])
        }
    }

    /// Backlog size: what is pending or in flight.
    public func backlogStats() throws -> BacklogStats {
        try reader.read { db in
            // Covered by chunks_session_upload (size and sealed_at are in it): no chunk row is
            // read, however large the backlog.
            let c = try Row.fetchOne(db, sql: """
                SELECT count(*) AS n, coalesce(sum(size), 0) AS bytes, min(sealed_at) AS oldest,
                       (SELECT count(*) FROM chunks WHERE session_id IN (SELECT id FROM sessions) AND upload_state = 'dead') AS dead,
                       (SELECT count(*) FROM chunks WHERE session_id IN (SELECT id FROM sessions) AND upload_state = 'in_flight') AS in_flight
                FROM chunks WHERE session_id IN (SELECT id FROM sessions) AND upload_state IN ('pending', 'in_flight')
                """)!
            let r = try Row.fetchOne(db, sql: """
                SELECT count(*) AS n, coalesce(sum(bytes), 0) AS bytes, min(enqueued_at) AS oldest,
                       (SELECT count(*) FROM record_uploads WHERE state = 'dead') AS dead,
                       (SELECT count(*) FROM record_uploads WHERE state = 'in_flight') AS in_flight
                FROM record_uploads WHERE state IN ('pending', 'in_flight')
                """)!
            let oldest = [c["oldest"] as Double?, r["oldest"] as Double?].compactMap { $0 }.min()
            func sum<T: DatabaseValueConvertible & AdditiveArithmetic>(_ column: String, as: T.Type) -> T {
                (c[column] as T) + (r[column] as T)
            }
            return BacklogStats(count: sum("n", as: Int.self), bytes: sum("bytes", as: Int64.self),
                                oldestUnsentAge: oldest.map { (nowMilliseconds() - $0) / 1000 },
                                dead: sum("dead", as: Int.self), inFlight: sum("in_flight", as: Int.self))
        }
    }

    /// The `realtime_data` document of a sealed chunk, decoded from its blob (checksum
    /// verified); nil for an unknown name.
    public func realtimeDocument(name: String) throws -> RealtimeDataDocument? {
        try reader.read { db in
            guard let r = try Row.fetchOne(db, sql: "SELECT *, \(Self.storedPointsColumn) FROM chunks WHERE name = ?", arguments: [name]) else { return nil }
            return try Self.document(r)
        }
    }

    static func document(_ r: Row) throws -> RealtimeDataDocument {
        let name: String = r["name"]
        guard let data = r["stored_points"] as Data? else { throw StoreError.corruptChunk(name, "points deleted (synced and dropped)") }
        let bytes = [UInt8](data)
        let crc: Int64 = r["crc32"]
        guard UInt32(truncatingIfNeeded: crc) == CRC32.checksum(bytes) else { throw StoreError.corruptChunk(name, "checksum mismatch") }
        let points: [RecordedPoint]
        do { points = try PointCodec.decode(bytes) } catch { throw StoreError.corruptChunk(name, error.description) }
        guard points.count == r["point_count"] as Int else {
            throw StoreError.corruptChunk(name, "\(points.count) points, expected \(r["point_count"] as Int)")
        }
        return RealtimeDataDocument(name: name, sessionID: r["session_id"], board: r["board"], seq: r["seq"], points: points,
                                    revised: (r["sealed_id"] as Int64?) != nil)
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
