import Foundation
import GRDB
import Recording

/// Records documents revised after their survey (issue 21): a board's flash log filled a gap
/// of the session late (away at the stop, a download still running, a restart gap, a logged
/// session's rest), and the correction chunks sealed into it are named by its record.
extension BufferStore {
    /// v8: a session counts the revisions of its records document and keeps when the last one
    /// was made. Existing sessions were never revised (0, NULL): their documents stay as written.
    static func addRecordRevisions(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE sessions ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE sessions ADD COLUMN revised_at REAL;
            """)
    }

    /// A correction chunk (upload order `chunkUploadSeq`) was sealed into a session whose survey
    /// is in (a board's flash log filled a gap late, issue 21): its records document is revised,
    /// in the seal's transaction. The document keeps its name; its `gscope_data` now names the
    /// chunk after the others, `revision` counts up and `revised_at` says when. Its upload is
    /// queued again after the chunk, as a new outbox row (a new handle): an upload of the old
    /// version still under way is marked sent on a row that no longer exists, so it cannot mark
    /// the revision sent, and a version still unsent is replaced (one upload).
    func reviseRecords(_ db: Database, sessionID: String, after chunkUploadSeq: Int64) throws {
        let now = nowMilliseconds()
        try db.execute(sql: "UPDATE sessions SET revision = revision + 1, revised_at = ? WHERE id = ?", arguments: [now, sessionID])
        guard let record = try recordsDocument(db, sessionID: sessionID) else { throw StoreError.unknownSession(sessionID) }
        try db.execute(sql: "DELETE FROM record_uploads WHERE session_id = ?", arguments: [sessionID])
        try db.execute(sql: """
            INSERT INTO record_uploads (doc_name, session_id, upload_seq, state, bytes, enqueued_at, updated_at)
            VALUES (?1, ?2, ?3, 'pending', ?4, ?5, ?5)
            """, arguments: [record.name, sessionID, chunkUploadSeq + 1, record.firestoreSize, now])
    }

    /// What an outbox item of kind `records` uploads, read with its outbox row in one read:
    /// the session's records document; ``RecordsUpload/replaced`` when a revision replaced the
    /// row since the item was read (the revision, queued after the chunks it names, is uploaded
    /// instead); ``RecordsUpload/missing`` when the session has no records document.
    public func recordsDocument(forUpload item: OutboxItem) throws -> RecordsUpload {
        try reader.read { db in
            guard let record = try recordsDocument(db, sessionID: item.sessionID) else { return .missing }
            guard case let .record(row) = UploadHandle(item.id),
                  try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM record_uploads WHERE id = ?)", arguments: [row]) == true
            else { return .replaced }
            return .document(record)
        }
    }
}

/// What an outbox item of kind `records` uploads (``BufferStore/recordsDocument(forUpload:)``).
public enum RecordsUpload: Sendable {
    /// The session's records document, as it is now.
    case document(RecordsDocument)
    /// A revision replaced the item's outbox row: the revision's own row uploads it.
    case replaced
    /// The session has no records document (its survey was never submitted).
    case missing

    /// The document, if there is one to upload.
    public var document: RecordsDocument? {
        if case .document(let record) = self { record } else { nil }
    }
}
