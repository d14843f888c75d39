import Basics
import Foundation
import GRDB
import Recording

/// The gateway's durable buffer: one SQLite database (WAL, `synchronous=FULL`) holding
/// sessions, sealed chunks, the upload outbox, sync state and the daily history index, and
/// beside it the open chunks' segments (`SegmentJournal`). Local data is the source of truth; the Uplink drains the outbox.
///
/// Thread-safe: GRDB's pool serialises writes and runs reads concurrently.
public final class BufferStore: Sendable {
    /// Settings.
    public struct Configuration: Sendable {
        /// The disk budget enforced after every seal.
        public var budget: DiskBudget
        /// Days synced data is kept before retention deletes it.
        public var retentionDays: Double
        /// Where the history index's days begin and end.
        public var days: DayBoundaries
        /// The gateway's device UUID (`user_id` of records documents).
        public var userID: String
        /// Where log lines go (one line each; the daemon forwards them to its logger).
        public var log: @Sendable (String) -> Void
        /// The current wall-clock time (injected for tests).
        public var now: @Sendable () -> Date

        /// Settings with defaults: 1 GiB budget, 256 MiB free floor, 30 days retention.
        public init(userID: String, budget: DiskBudget = DiskBudget(), retentionDays: Double = 30,
                    days: DayBoundaries = .systemLocalTime,
                    log: @escaping @Sendable (String) -> Void = { FileHandle.standardError.write(Data(("mwgate buffer: " + $0 + "\n").utf8)) },
                    now: @escaping @Sendable () -> Date = { Date() }) {
            self.userID = userID
            self.budget = budget
            self.retentionDays = retentionDays
            self.days = days
            self.log = log
            self.now = now
        }
    }

    /// A problem opening or using the buffer.
    public enum StoreError: Error, CustomStringConvertible, Equatable {
        case missingDatabase(String)
        case durabilityNotApplied(Int)
        case unknownSession(String)
        case sessionState(String, String)
        case corruptChunk(String, String)
        case expired(String)

        public var description: String {
            switch self {
            case let .missingDatabase(path): "no buffer database at \(path)"
            case let .durabilityNotApplied(v): "PRAGMA synchronous reads back \(v), expected 2 (FULL)"
            case let .unknownSession(id): "unknown session \(id)"
            case let .sessionState(id, why): "session \(id): \(why)"
            case let .corruptChunk(name, why): "chunk \(name) is damaged: \(why)"
            case let .expired(id): "session \(id): its data was deleted by retention or the disk budget"
            }
        }
    }

    /// Page size of a database this version creates (see `init`).
    static let newDatabasePageSize = 1024
    /// WAL bytes between automatic checkpoints.
    static let checkpointBytes = 4 << 20
    /// The writer connection's page cache (the readers keep 512 KiB each).
    static let writerCacheKiB = 128

    /// File name of the database inside the state directory.
    public static let fileName = "buffer.sqlite"

    /// The database path.
    public let path: String
    public let configuration: Configuration
    let writer: any DatabaseWriter
    let reader: any DatabaseReader
    /// Throttled statvfs readings for the free-space floor.
    let freeSpace: FreeSpaceProbe
    /// Names of sealed chunks (random UUIDs without a file open per name).
    let chunkNames = ChunkNameGenerator()
    /// Rung after every commit that queues a document for upload (the Uplink waits for it).
    public let outboxDoorbell = OutboxDoorbell()
    /// The open chunks' segments (nil for a read-only store, which reads the files directly).
    let journal: SegmentJournal?

    /// Opens (creating and migrating) the database for recording, sets `synchronous=FULL`
    /// on the writer and checks it stuck, and returns in-flight outbox items to pending.
    public init(path: String, configuration: Configuration) throws {
        self.path = path
        self.configuration = configuration
        freeSpace = FreeSpaceProbe(databasePath: path)
        journal = SegmentJournal(databasePath: path)
        var config = GRDB.Configuration()
        config.busyMode = .timeout(10)
        // Every reader's page cache is capped at 512 KiB (SQLite's default is 2 MiB each,
        // for the writer and every reader; the writer's is smaller still, below): the buffer's
        // big values are chunk blobs, written once and read once, which a cache does not speed
        // up; the B-tree pages that are read again fit many times over.
        config.maximumReaderCount = 3
        config.prepareDatabase { db in
            // 1 KiB pages (taken only by a new, empty file): every commit writes whole pages to
            // the WAL and a checkpoint writes them again, so a second's segments (2 kB a board)
            // and the page-1, pointer-map and B-tree pages each commit touches cost a quarter
            // of what 4 KiB pages do; on an SD card that is most of the bytes written per sample.
            try db.execute(sql: "PRAGMA page_size = \(Self.newDatabasePageSize)")
            try db.execute(sql: "PRAGMA journal_size_limit = 8388608")
            try db.execute(sql: "PRAGMA cache_size = -512")
            // Debian's SQLite zeroes every freed page (SECURE_DELETE), which writes each sealed
            // second's segment pages once more; FAST only clears deleted bytes on pages the
            // transaction writes anyway. Deleted sensor data is not a secret on this device.
            try db.execute(sql: "PRAGMA secure_delete = FAST")
        }
        let pool = try DatabasePool(path: path, configuration: config)
        // GRDB's WAL setup forces NORMAL after prepareDatabase; FULL makes every commit (and
        // so every seal and checkpoint) survive power loss.
        let synchronous = try pool.writeWithoutTransaction { db -> Int in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // The writer's cache fills with the pages of sealed chunks, written once and never
            // read through it again; a seal's pages (a 2,000-point chunk is about 50 pages of
            // 1 KiB) and the B-tree pages each seal walks fit in 128 KiB. At 512 KiB the rest
            // stayed resident for nothing: 0.4 MiB of mwgated's steady RSS.
            try db.execute(sql: "PRAGMA cache_size = -\(Self.writerCacheKiB)")
            if try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master") == 0 {
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                try db.execute(sql: "VACUUM")
            }
            // Checkpoint every 4 MiB of WAL whatever the page size (a database from before 1 KiB
            // pages keeps its 4 KiB ones): the second's segments reuse the pages seals freed,
            // so the fewer checkpoints, the more of those rewrites a checkpoint folds into one.
            let pageSize = try Int.fetchOne(db, sql: "PRAGMA page_size") ?? 4096
            try db.execute(sql: "PRAGMA wal_autocheckpoint = \(Self.checkpointBytes / max(pageSize, 512))")
            return try Int.fetchOne(db, sql: "PRAGMA synchronous") ?? -1
        }
        guard synchronous == 2 else { throw StoreError.durabilityNotApplied(synchronous) }
        try Self.migrator.migrate(pool)
        try pool.writeWithoutTransaction { db in try Self.installStoredBytesTotal(db) }
        writer = pool
        reader = pool
        try pool.write { db in
            let now = configuration.now().timeIntervalSince1970 * 1000
            // Through the (session, state) index: a bare `WHERE upload_state` would read every
            // chunk row, each about a page of blob.
            try db.execute(sql: """
                UPDATE chunks SET upload_state = 'pending', updated_at = ?
                WHERE session_id IN (SELECT id FROM sessions) AND upload_state = 'in_flight'
                """, arguments: [now])
            try db.execute(sql: "UPDATE record_uploads SET state = 'pending', updated_at = ? WHERE state = 'in_flight'",
                           arguments: [now])
        }
    }

    /// Opens an existing database read-only (mwctl history/export); a missing file is an error.
    public init(readOnlyPath path: String, configuration: Configuration) throws {
        guard FileManager.default.fileExists(atPath: path) else { throw StoreError.missingDatabase(path) }
        self.path = path
        self.configuration = configuration
        freeSpace = FreeSpaceProbe(databasePath: path)
        journal = nil
        var config = GRDB.Configuration()
        config.readonly = true
        config.busyMode = .timeout(5)
        let queue = try DatabaseQueue(path: path, configuration: config)
        writer = queue
        reader = queue
    }

    /// The database path inside a state directory.
    public static func path(inStateDirectory dir: String) -> String {
        URL(fileURLWithPath: dir).appendingPathComponent(fileName).path
    }

    /// The buffer's files in a state directory: the database, its WAL and the segment
    /// journal's files (what the buffer occupies on disk).
    public static func files(inStateDirectory dir: String) -> [String] {
        let database = path(inStateDirectory: dir)
        return [database, database + "-wal", SegmentJournal.sparePath(database)]
            + SegmentJournal.files(databasePath: database).map(\.path)
    }

    /// `PRAGMA synchronous` of the writer connection (2 = FULL).
    public func synchronousLevel() throws -> Int {
        try writer.writeWithoutTransaction { try Int.fetchOne($0, sql: "PRAGMA synchronous") ?? -1 }
    }

    /// `PRAGMA integrity_check` result ("ok" when healthy).
    public func integrityCheck() throws -> String {
        try reader.read { try String.fetchAll($0, sql: "PRAGMA integrity_check").joined(separator: "; ") }
    }

    static var migrator: DatabaseMigrator {
        var m = DatabaseMigrator()
        m.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE sessions (
                    id TEXT PRIMARY KEY,
                    started_at REAL NOT NULL,
                    start_trigger TEXT NOT NULL,
                    ended_at REAL,
                    stop_trigger TEXT,
                    state TEXT NOT NULL CHECK (state IN ('recording','awaiting_survey','submitted')),
                    data_state TEXT NOT NULL DEFAULT 'kept' CHECK (data_state IN ('kept','evicted','expired')),
                    boards TEXT NOT NULL DEFAULT '[]',
                    point_count INTEGER NOT NULL DEFAULT 0,
                    distance_m REAL NOT NULL DEFAULT 0,
                    time_source TEXT,
                    record_name TEXT,
                    submitted_at INTEGER,
                    hazards TEXT,
                    no_hazard INTEGER,
                    day TEXT NOT NULL
                );
                CREATE INDEX sessions_day ON sessions(day);
                CREATE TABLE chunks (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    name TEXT NOT NULL UNIQUE,
                    session_id TEXT NOT NULL REFERENCES sessions(id),
                    board TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    point_count INTEGER NOT NULL,
                    first_ts REAL NOT NULL,
                    last_ts REAL NOT NULL,
                    time_source TEXT NOT NULL,
                    missed INTEGER NOT NULL,
                    crc32 INTEGER NOT NULL,
                    sealed_at REAL NOT NULL,
                    size INTEGER NOT NULL,
                    points BLOB,
                    UNIQUE (session_id, board, seq)
                );
                CREATE TABLE open_chunks (
                    session_id TEXT NOT NULL REFERENCES sessions(id),
                    board TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    point_count INTEGER NOT NULL,
                    time_source TEXT NOT NULL,
                    updated_at REAL NOT NULL,
                    size INTEGER NOT NULL,
                    points BLOB NOT NULL,
                    PRIMARY KEY (session_id, board)
                );
                CREATE TABLE outbox (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    kind TEXT NOT NULL CHECK (kind IN ('realtime_data','records')),
                    doc_name TEXT NOT NULL UNIQUE,
                    session_id TEXT NOT NULL,
                    seq INTEGER NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('pending','in_flight','sent','dead')),
                    attempts INTEGER NOT NULL DEFAULT 0,
                    reason TEXT,
                    bytes INTEGER NOT NULL,
                    enqueued_at REAL NOT NULL,
                    updated_at REAL NOT NULL,
                    sent_at REAL,
                    UNIQUE (session_id, seq)
                );
                CREATE INDEX outbox_state ON outbox(state, session_id, seq);
                CREATE TABLE sync_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                CREATE TABLE evictions (
                    id INTEGER PRIMARY KEY AUTOINCREMENT,
                    at REAL NOT NULL,
                    kind TEXT NOT NULL CHECK (kind IN ('synced_chunk','unsent_session','retention')),
                    session_id TEXT NOT NULL,
                    chunks INTEGER NOT NULL,
                    bytes INTEGER NOT NULL,
                    reason TEXT NOT NULL
                );
                CREATE TABLE session_summaries (
                    session_id TEXT PRIMARY KEY,
                    day TEXT NOT NULL,
                    walking_ms REAL NOT NULL,
                    distance_m REAL NOT NULL,
                    samples INTEGER NOT NULL,
                    hazards TEXT NOT NULL,
                    sync TEXT NOT NULL
                );
                CREATE INDEX session_summaries_day ON session_summaries(day);
                CREATE TABLE history_days (
                    day TEXT PRIMARY KEY,
                    sessions INTEGER NOT NULL,
                    walking_ms REAL NOT NULL,
                    distance_m REAL NOT NULL,
                    samples INTEGER NOT NULL,
                    hazards TEXT NOT NULL,
                    synced INTEGER NOT NULL,
                    unsynced INTEGER NOT NULL,
                    lost INTEGER NOT NULL
                );
                """)
        }
        m.registerMigration("v2-upload-state-in-chunks") { db in try migrateToUploadStateInChunks(db) }
        m.registerMigration("v3-open-segments") { db in try createOpenSegments(db) }
        m.registerMigration("v4-chunk-points") { db in try createChunkPoints(db) }
        m.registerMigration("v5-missed-samples") { db in try addMissedSamples(db) }
        m.registerMigration("v6-restart-gaps") { db in try createRestartGaps(db) }
        m.registerMigration("v7-logged-rests") { db in try createLoggedRests(db) }
        m.registerMigration("v8-record-revisions") { db in try addRecordRevisions(db) }
        m.registerMigration("v9-chunk-revisions") { db in try addChunkRevisions(db) }
        m.registerMigration("v10-restart-gap-openings") { db in try addRestartGapOpenings(db) }
        m.registerMigration("v11-system-clock-shifts") { db in try addSystemClockShifts(db) }
        return m
    }

    /// v2: a seal writes fewer B-tree pages (each one is a 4 KiB WAL frame under the seal's
    /// fsync). The realtime_data upload state moves into the chunk row, so a seal inserts one
    /// row instead of a chunk row plus an outbox row with three indexes; records documents get
    /// a small outbox of their own, `record_uploads`. The chunk's two secondary indexes become
    /// one (session, upload state, upload order, board, seq, size, sealed_at, point_count)
    /// that covers the per-session reads, the Uplink's queue, the seal's duplicate check and
    /// next upload order (it replaces UNIQUE (session, board, seq)), `backlogStats` (every 2 s)
    /// and a recording session's live point count and boards, so none of them reads the
    /// page-sized chunk rows. Chunk ids stop using AUTOINCREMENT (a `sqlite_sequence` page per
    /// seal); a trigger keeps a floor so ids, the Uplink's handles, are still never reused. A
    /// recording session's point count and boards are read live and stored when it stops, and
    /// a summary's and a day's `samples` leave out sessions still recording (`history` adds
    /// those live), so a seal into a recording session writes no session, summary or day page.
    static func migrateToUploadStateInChunks(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE chunks_v2 (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                session_id TEXT NOT NULL REFERENCES sessions(id),
                board TEXT NOT NULL,
                seq INTEGER NOT NULL,
                upload_seq INTEGER NOT NULL,
                upload_state TEXT NOT NULL DEFAULT 'pending'
                    CHECK (upload_state IN ('pending','in_flight','sent','dead')),
                attempts INTEGER NOT NULL DEFAULT 0,
                reason TEXT,
                updated_at REAL NOT NULL,
                sent_at REAL,
                point_count INTEGER NOT NULL,
                first_ts REAL NOT NULL,
                last_ts REAL NOT NULL,
                time_source TEXT NOT NULL,
                missed INTEGER NOT NULL,
                crc32 INTEGER NOT NULL,
                sealed_at REAL NOT NULL,
                size INTEGER NOT NULL,
                points BLOB
            );
            INSERT INTO chunks_v2 (id, name, session_id, board, seq, upload_seq, upload_state, attempts, reason,
                                   updated_at, sent_at, point_count, first_ts, last_ts, time_source, missed, crc32,
                                   sealed_at, size, points)
                SELECT c.id, c.name, c.session_id, c.board, c.seq,
                       coalesce(o.seq, (SELECT coalesce(max(seq), -1) + 1 FROM outbox WHERE session_id = c.session_id) + c.id),
                       coalesce(o.state, 'pending'), coalesce(o.attempts, 0), o.reason,
                       coalesce(o.updated_at, c.sealed_at), o.sent_at, c.point_count, c.first_ts, c.last_ts,
                       c.time_source, c.missed, c.crc32, c.sealed_at, c.size, c.points
                FROM chunks c LEFT JOIN outbox o ON o.doc_name = c.name AND o.kind = 'realtime_data';
            CREATE TABLE chunk_id_floor (id INTEGER PRIMARY KEY CHECK (id = 0), value INTEGER NOT NULL);
            INSERT INTO chunk_id_floor (id, value) VALUES (0, max(
                coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0),
                coalesce((SELECT max(id) FROM chunks), 0)));
            CREATE TABLE record_uploads (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                doc_name TEXT NOT NULL UNIQUE,
                session_id TEXT NOT NULL UNIQUE,
                upload_seq INTEGER NOT NULL,
                state TEXT NOT NULL CHECK (state IN ('pending','in_flight','sent','dead')),
                attempts INTEGER NOT NULL DEFAULT 0,
                reason TEXT,
                bytes INTEGER NOT NULL,
                enqueued_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                sent_at REAL
            );
            INSERT INTO record_uploads (id, doc_name, session_id, upload_seq, state, attempts, reason, bytes,
                                        enqueued_at, updated_at, sent_at)
                SELECT id, doc_name, session_id, seq, state, attempts, reason, bytes, enqueued_at, updated_at, sent_at
                FROM outbox WHERE kind = 'records';
            DROP TABLE outbox;
            DROP TABLE chunks;
            ALTER TABLE chunks_v2 RENAME TO chunks;
            CREATE INDEX chunks_session_upload ON chunks(session_id, upload_state, upload_seq, board, seq, size, sealed_at,
                                                point_count);
            CREATE TRIGGER chunks_keep_id_floor AFTER DELETE ON chunks
                BEGIN UPDATE chunk_id_floor SET value = OLD.id WHERE id = 0 AND value < OLD.id; END;
            CREATE INDEX sessions_recording ON sessions(day) WHERE state = 'recording';
            UPDATE session_summaries SET samples = 0
                WHERE session_id IN (SELECT id FROM sessions WHERE state = 'recording');
            UPDATE history_days SET samples = (SELECT coalesce(sum(samples), 0) FROM session_summaries
                                               WHERE session_summaries.day = history_days.day);
            """)
    }

    /// v3: a recording session's unsealed points are appended once a second as segments (a
    /// row per board holding only that second's points) instead of rewriting each board's
    /// whole open chunk: on an SD card the rewrite was ~886 bytes written per sample. No
    /// secondary index: the table holds only the open chunks' points (seconds to minutes of
    /// them), and an index would be one more page in every second's transaction. `open_chunks`
    /// stays for sessions an earlier version left open; recovery seals both.
    static func createOpenSegments(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE open_segments (
                id INTEGER PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions(id),
                board TEXT NOT NULL,
                first_index INTEGER NOT NULL,
                point_count INTEGER NOT NULL,
                time_source TEXT NOT NULL,
                size INTEGER NOT NULL,
                points BLOB NOT NULL
            );
            """)
    }

    /// v4: a sealed chunk's points move to a row of their own in `chunk_points`; the chunk row
    /// keeps a zero-length `points` (NULL still means evicted). SQLite rewrites a whole row,
    /// overflow pages and all, when any column of it changes, so marking a chunk sent rewrote
    /// its ~42 kB blob (twice that written, with the checkpoint); now it rewrites a row of
    /// ~150 bytes. Chunks sealed before keep their points in the chunk row (`pointsColumn`
    /// reads both). Triggers drop a chunk's points row when the chunk is deleted or evicted.
    static func createChunkPoints(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE chunk_points (chunk_id INTEGER PRIMARY KEY, points BLOB NOT NULL);
            CREATE TRIGGER chunk_points_follow_delete AFTER DELETE ON chunks
                BEGIN DELETE FROM chunk_points WHERE chunk_id = OLD.id; END;
            CREATE TRIGGER chunk_points_follow_eviction AFTER UPDATE OF points ON chunks WHEN NEW.points IS NULL
                BEGIN DELETE FROM chunk_points WHERE chunk_id = OLD.id; END;
            """)
    }

    /// v5: history counts the samples missing in a session's gaps (the sum of its points'
    /// `missed_before`, which each chunk already stores as `missed` when it is sealed). A stopped
    /// session stores its total like `point_count`; summaries and days carry it beside `lost`
    /// (sessions evicted), which keeps its meaning. Existing sessions are counted from their
    /// chunk rows, which stay (points NULL) when evicted.
    static func addMissedSamples(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE sessions ADD COLUMN missed INTEGER NOT NULL DEFAULT 0;
            UPDATE sessions SET missed = (SELECT coalesce(sum(c.missed), 0) FROM chunks c WHERE c.session_id = sessions.id)
                WHERE state != 'recording';
            ALTER TABLE session_summaries ADD COLUMN missed INTEGER NOT NULL DEFAULT 0;
            UPDATE session_summaries SET missed = coalesce((SELECT s.missed FROM sessions s
                                                            WHERE s.id = session_summaries.session_id), 0);
            ALTER TABLE history_days ADD COLUMN missed INTEGER NOT NULL DEFAULT 0;
            UPDATE history_days SET missed = (SELECT coalesce(sum(missed), 0) FROM session_summaries
                                              WHERE session_summaries.day = history_days.day);
            """)
    }

    /// A sealed chunk's points as a column of a `SELECT` over `chunks`, named `stored_points`:
    /// from `chunk_points`, or from the row itself for a chunk sealed before v4; NULL once evicted.
    static let storedPointsColumn = """
        coalesce((SELECT cp.points FROM chunk_points cp WHERE cp.chunk_id = chunks.id), chunks.points) AS stored_points
        """

    /// The disk budget is checked after every seal. Instead of a SUM over every chunk, the
    /// writer connection keeps a running total of stored point bytes: summed once here, then
    /// kept by TEMP triggers. They run inside each writing transaction (a rollback undoes
    /// their change too), and living in the connection's in-memory temp schema they add no
    /// page to the WAL or to the seal's fsync. Every write goes through this one writer
    /// connection. Nothing may write chunks or open_chunks with INSERT OR REPLACE: its
    /// implicit delete would not fire the delete triggers.
    static func installStoredBytesTotal(_ db: Database) throws {
        try db.execute(sql: """
            PRAGMA temp_store = MEMORY;
            CREATE TEMP TABLE stored_bytes_total (id INTEGER PRIMARY KEY CHECK (id = 0), bytes INTEGER NOT NULL);
            INSERT INTO temp.stored_bytes_total (id, bytes) VALUES (0,
                (SELECT coalesce(sum(size), 0) FROM main.chunks) + (SELECT coalesce(sum(size), 0) FROM main.open_chunks)
                + (SELECT coalesce(sum(size), 0) FROM main.open_segments));
            CREATE TEMP TRIGGER chunks_bytes_insert AFTER INSERT ON main.chunks
                BEGIN UPDATE stored_bytes_total SET bytes = bytes + NEW.size WHERE id = 0; END;
            CREATE TEMP TRIGGER chunks_bytes_update AFTER UPDATE OF size ON main.chunks WHEN NEW.size != OLD.size
                BEGIN UPDATE stored_bytes_total SET bytes = bytes + NEW.size - OLD.size WHERE id = 0; END;
            CREATE TEMP TRIGGER chunks_bytes_delete AFTER DELETE ON main.chunks
                BEGIN UPDATE stored_bytes_total SET bytes = bytes - OLD.size WHERE id = 0; END;
            CREATE TEMP TRIGGER open_chunks_bytes_insert AFTER INSERT ON main.open_chunks
                BEGIN UPDATE stored_bytes_total SET bytes = bytes + NEW.size WHERE id = 0; END;
            CREATE TEMP TRIGGER open_chunks_bytes_update AFTER UPDATE OF size ON main.open_chunks WHEN NEW.size != OLD.size
                BEGIN UPDATE stored_bytes_total SET bytes = bytes + NEW.size - OLD.size WHERE id = 0; END;
            CREATE TEMP TRIGGER open_chunks_bytes_delete AFTER DELETE ON main.open_chunks
                BEGIN UPDATE stored_bytes_total SET bytes = bytes - OLD.size WHERE id = 0; END;
            CREATE TEMP TRIGGER open_segments_bytes_insert AFTER INSERT ON main.open_segments
                BEGIN UPDATE stored_bytes_total SET bytes = bytes + NEW.size WHERE id = 0; END;
            CREATE TEMP TRIGGER open_segments_bytes_delete AFTER DELETE ON main.open_segments
                BEGIN UPDATE stored_bytes_total SET bytes = bytes - OLD.size WHERE id = 0; END;
            """)
    }

    func nowMilliseconds() -> Double { configuration.now().timeIntervalSince1970 * 1000 }

    /// The local day (`YYYY-MM-DD`) of an epoch-millisecond time, by the configured boundaries.
    public func day(ofEpochMilliseconds ms: Double) -> String {
        configuration.days.day(ofEpochMilliseconds: ms)
    }
}
