import Foundation
import GRDB

/// A dead-lettered outbox item with the reason it was refused.
public struct DeadLetter: Hashable, Sendable, Codable {
    public var documentName: String
    public var kind: String
    public var sessionID: String
    public var attempts: Int
    public var reason: String?
}

extension BufferStore {
    /// Puts in-flight items back to pending without counting an attempt: the Uplink calls
    /// this for items it took but did not send (cancellation, more than it can run at once),
    /// and for all in-flight items (`ids` nil) when its service starts.
    @discardableResult
    public func releaseInFlight(_ ids: [Int64]? = nil) throws -> Int {
        try writer.write { db in
            let now = nowMilliseconds()
            guard let ids else {
                try db.execute(sql: "UPDATE outbox SET state = 'pending', updated_at = ? WHERE state = 'in_flight'", arguments: [now])
                return db.changesCount
            }
            var changed = 0
            for id in ids {
                try db.execute(sql: "UPDATE outbox SET state = 'pending', updated_at = ? WHERE id = ? AND state = 'in_flight'",
                               arguments: [now, id])
                changed += db.changesCount
            }
            return changed
        }
    }

    /// The next documents to upload under `nextBatch`'s rules (sessions with nothing in
    /// flight, lowest seq first, at most `perSession` each and `limit` in all, oldest unsent
    /// session first), WITHOUT marking them in flight: a read, not a FULL-synchronous write.
    /// The Uplink's service, the only uploader, keeps its in-flight set in memory (so a crash
    /// needs no reset either), and so pays one SQLite commit per upload (`markSent`) instead
    /// of two. One pass over the pending rows: `nextBatch` orders by a per-row subquery that
    /// scans the session's whole outbox, quadratic in a long session's backlog.
    public func uploadCandidates(limit: Int = 16, perSession: Int = 4) throws -> [OutboxItem] {
        try reader.read { db in
            try Row.fetchAll(db, sql: """
                WITH open AS (
                    SELECT session_id, min(enqueued_at) AS first FROM outbox
                    WHERE state IN ('pending', 'in_flight') GROUP BY session_id
                    HAVING sum(state = 'in_flight') = 0
                ), ranked AS (
                    SELECT o.*, open.first AS first,
                           row_number() OVER (PARTITION BY o.session_id ORDER BY o.seq) AS rank
                    FROM outbox o JOIN open ON open.session_id = o.session_id
                    WHERE o.state = 'pending'
                )
                SELECT * FROM ranked WHERE rank <= ? ORDER BY first, session_id, seq LIMIT ?
                """, arguments: [perSession, limit]).map { r in
                OutboxItem(id: r["id"], kind: OutboxItem.Kind(rawValue: r["kind"]) ?? .realtimeData, documentName: r["doc_name"],
                           sessionID: r["session_id"], seq: r["seq"], attempts: r["attempts"], bytes: r["bytes"])
            }
        }
    }

    /// Pending items of a session after `seq`, lowest first, without handing them out (the
    /// Uplink prepares them while the commit before them is in flight).
    public func pendingItems(sessionID: String, afterSeq seq: Int, limit: Int) throws -> [OutboxItem] {
        try reader.read { db in
            try Row.fetchAll(db, sql: """
                SELECT * FROM outbox WHERE state = 'pending' AND session_id = ? AND seq > ? ORDER BY seq LIMIT ?
                """, arguments: [sessionID, seq, limit]).map { r in
                OutboxItem(id: r["id"], kind: OutboxItem.Kind(rawValue: r["kind"]) ?? .realtimeData, documentName: r["doc_name"],
                           sessionID: r["session_id"], seq: r["seq"], attempts: r["attempts"], bytes: r["bytes"])
            }
        }
    }

    /// Dead-lettered items, oldest first.
    public func deadLetters(limit: Int = 100) throws -> [DeadLetter] {
        try reader.read { db in
            try Row.fetchAll(db, sql: """
                SELECT doc_name, kind, session_id, attempts, reason FROM outbox WHERE state = 'dead' ORDER BY updated_at, id LIMIT ?
                """, arguments: [limit]).map {
                DeadLetter(documentName: $0["doc_name"], kind: $0["kind"], sessionID: $0["session_id"], attempts: $0["attempts"],
                           reason: $0["reason"])
            }
        }
    }

    /// Items sent so far (all time).
    public func sentCount() throws -> Int {
        try reader.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM outbox WHERE state = 'sent'") ?? 0 }
    }
}
