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
