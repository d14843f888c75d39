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
                try db.execute(sql: "UPDATE chunks SET upload_state = 'pending', updated_at = ? WHERE upload_state = 'in_flight'",
                               arguments: [now])
                var changed = db.changesCount
                try db.execute(sql: "UPDATE record_uploads SET state = 'pending', updated_at = ? WHERE state = 'in_flight'",
                               arguments: [now])
                changed += db.changesCount
                return changed
            }
            var changed = 0
            for id in ids {
                switch UploadHandle(id) {
                case let .chunk(row):
                    try db.execute(sql: "UPDATE chunks SET upload_state = 'pending', updated_at = ? WHERE id = ? AND upload_state = 'in_flight'",
                                   arguments: [now, row])
                case let .record(row):
                    try db.execute(sql: "UPDATE record_uploads SET state = 'pending', updated_at = ? WHERE id = ? AND state = 'in_flight'",
                                   arguments: [now, row])
                }
                changed += db.changesCount
            }
            return changed
        }
    }

    /// The next documents to upload under `nextBatch`'s rules (sessions with nothing in
    /// flight, lowest seq first, at most `perSession` each and `limit` in all, oldest session
    /// first), WITHOUT marking them in flight: a read, not a FULL-synchronous write. The
    /// Uplink's service, the only uploader, keeps its in-flight set in memory (so a crash
    /// needs no reset either), and so pays one SQLite commit per upload (`markSent`) instead
    /// of two.
    public func uploadCandidates(limit: Int = 16, perSession: Int = 4) throws -> [OutboxItem] {
        guard limit > 0, perSession > 0 else { return [] }
        return try reader.read { db in try Self.uploadCandidates(db, limit: limit, perSession: perSession) }
    }

    /// Pending items of a session after `seq`, lowest first, without handing them out (the
    /// Uplink prepares them while the commit before them is in flight).
    public func pendingItems(sessionID: String, afterSeq seq: Int, limit: Int) throws -> [OutboxItem] {
        guard limit > 0 else { return [] }
        return try reader.read { db in try Self.pendingItems(db, sessionID: sessionID, afterSeq: seq, limit: limit) }
    }

    /// Dead-lettered items, oldest first.
    public func deadLetters(limit: Int = 100) throws -> [DeadLetter] {
        try reader.read { db in
            try Row.fetchAll(db, sql: """
                SELECT name AS doc_name, 'realtime_data' AS kind, session_id, attempts, reason, updated_at, id AS handle
                FROM chunks WHERE upload_state = 'dead'
                UNION ALL
                SELECT doc_name, 'records', session_id, attempts, reason, updated_at, -id
                FROM record_uploads WHERE state = 'dead'
                ORDER BY updated_at, handle LIMIT ?
                """, arguments: [limit]).map {
                DeadLetter(documentName: $0["doc_name"], kind: $0["kind"], sessionID: $0["session_id"], attempts: $0["attempts"],
                           reason: $0["reason"])
            }
        }
    }

    /// Items uploaded and still held locally (sent chunks leave with retention or the budget).
    public func sentCount() throws -> Int {
        try reader.read { db in
            let chunks = try Int.fetchOne(db, sql: "SELECT count(*) FROM chunks WHERE upload_state = 'sent'") ?? 0
            let records = try Int.fetchOne(db, sql: "SELECT count(*) FROM record_uploads WHERE state = 'sent'") ?? 0
            return chunks + records
        }
    }
}
