import Basics
import Foundation
import GRDB
import Recording

/// What one budget or retention pass did.
public struct EvictionReport: Hashable, Sendable {
    /// Synced chunks whose points were dropped.
    public var syncedChunksDropped = 0
    /// Unsent sessions evicted whole.
    public var sessionsEvicted: [String] = []
    /// Point bytes freed.
    public var bytesFreed: Int64 = 0
    /// Still over budget afterwards (only the recording session is left).
    public var stillOverBudget = false
}

/// Reads the file system's free space (statvfs) at most every `interval` or every `stride`
/// bytes stored, whichever comes first, and at every check while close to the floor. A seal
/// stores ~100 kB; probing the file system for each would cost a syscall per seal for an
/// answer that only moves when something writes a lot.
final class FreeSpaceProbe: @unchecked Sendable {
    /// Longest time between two readings.
    static let interval: UInt64 = 1_000_000_000
    /// Most bytes stored between two readings.
    static let stride: Int64 = 4 << 20
    /// Within this distance of the floor, every check reads the file system.
    static let nearFloor: Int64 = 64 << 20

    private let directory: String
    private let lock = NSLock()
    private var lastFree: Int64?
    private var lastReadAt: UInt64 = 0
    private var storedSinceRead: Int64 = 0

    init(databasePath: String) {
        directory = URL(fileURLWithPath: databasePath).deletingLastPathComponent().path
    }

    /// Free bytes now (statvfs), nil if it cannot be read.
    func read() -> Int64? {
        var s = statvfs()
        guard statvfs(directory, &s) == 0 else { return nil }
        return Int64(s.f_bavail) * Int64(s.f_frsize)
    }

    /// Counts bytes just stored against the next reading.
    func stored(_ bytes: Int) {
        lock.lock()
        storedSinceRead += Int64(bytes)
        lock.unlock()
    }

    /// Whether free space is below `floor`: a fresh reading when `fresh`, when the last one
    /// is old, when much was stored since, or when it was near the floor; otherwise the last.
    func isBelow(_ floor: Int64, fresh: Bool) -> Bool {
        guard floor > 0 else { return false }
        lock.lock()
        defer { lock.unlock() }
        let now = DispatchTime.now().uptimeNanoseconds
        let due = fresh || lastFree.map { $0 - storedSinceRead < floor + Self.nearFloor } ?? true
            || now &- lastReadAt >= Self.interval || storedSinceRead >= Self.stride
        if due {
            lastFree = read()
            lastReadAt = now
            storedSinceRead = 0
        }
        guard let free = lastFree else { return false }
        return free < floor
    }
}

extension BufferStore {
    /// Stored point bytes (sealed and open chunks, the segment journal's points): the writer's
    /// running total, or a sum over the tables and files for a read-only store.
    public func storedBytes() throws -> Int64 {
        if reader is DatabaseQueue { return try storedBytesFromScratch() }
        return try writer.writeWithoutTransaction { try Self.storedBytes($0) } + (journal?.storedBytes ?? 0)
    }

    /// The writer connection's running total (see `installStoredBytesTotal`).
    static func storedBytes(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT bytes FROM temp.stored_bytes_total WHERE id = 0")) ?? 0
    }

    /// Stored point bytes summed over the tables and the journal's files (what the running
    /// total must equal).
    public func storedBytesFromScratch() throws -> Int64 {
        try reader.read { db in
            try Int64.fetchOne(db, sql: """
                SELECT (SELECT coalesce(sum(size), 0) FROM chunks) + (SELECT coalesce(sum(size), 0) FROM open_chunks)
                    + (SELECT coalesce(sum(size), 0) FROM open_segments)
                """) ?? 0
        } + SegmentJournal.storedBytes(databasePath: path)
    }

    /// Free bytes on the database's file system (statvfs), nil if it cannot be read.
    public func freeBytes() -> Int64? {
        freeSpace.read()
    }

    /// Over the byte cap or under the free-space floor. `freshFreeSpace` forces a statvfs
    /// reading (eviction just freed pages); otherwise a recent one may be used.
    func overBudget(_ db: Database, freshFreeSpace: Bool) throws -> Bool {
        if try Self.storedBytes(db) + (journal?.storedBytes ?? 0) > configuration.budget.maxBytes { return true }
        return freeSpace.isBelow(configuration.budget.minFreeBytes, fresh: freshFreeSpace)
    }

    /// Enforces the budget: first drops points already synced (oldest first), then evicts the
    /// oldest unsent whole session (never the one recording). Each step is one transaction,
    /// counted in `evictions` and logged.
    @discardableResult
    public func enforceBudget() throws -> EvictionReport {
        var report = EvictionReport()
        let budget = configuration.budget
        try writer.writeWithoutTransaction { db in
            guard try overBudget(db, freshFreeSpace: true) else { return }
            while try overBudget(db, freshFreeSpace: true) {
                if let row = try Row.fetchOne(db, sql: """
                    SELECT id, session_id, size FROM chunks WHERE upload_state = 'sent' AND points IS NOT NULL ORDER BY id LIMIT 1
                    """) {
                    try db.inTransaction {
                        try db.execute(sql: "UPDATE chunks SET points = NULL, size = 0 WHERE id = ?", arguments: [row["id"]])
                        try db.execute(sql: "INSERT INTO evictions (at, kind, session_id, chunks, bytes, reason) VALUES (?, 'synced_chunk', ?, 1, ?, ?)",
                                       arguments: [nowMilliseconds(), row["session_id"], row["size"], "disk budget \(budget.maxBytes) B"])
                        return .commit
                    }
                    report.syncedChunksDropped += 1
                    report.bytesFreed += row["size"] as Int64
                } else if let victim = try Row.fetchOne(db, sql: """
                    SELECT s.id, (SELECT count(*) FROM chunks c WHERE c.session_id = s.id) AS n,
                           (SELECT coalesce(sum(size), 0) FROM chunks c WHERE c.session_id = s.id) AS bytes
                    FROM sessions s WHERE s.state != 'recording' AND s.data_state = 'kept'
                      AND EXISTS (SELECT 1 FROM chunks c WHERE c.session_id = s.id AND c.points IS NOT NULL)
                    ORDER BY s.started_at LIMIT 1
                    """) {
                    let id: String = victim["id"]
                    try db.inTransaction {
                        try db.execute(sql: "DELETE FROM chunks WHERE session_id = ?", arguments: [id])
                        try db.execute(sql: "UPDATE sessions SET data_state = 'evicted' WHERE id = ?", arguments: [id])
                        try db.execute(sql: "INSERT INTO evictions (at, kind, session_id, chunks, bytes, reason) VALUES (?, 'unsent_session', ?, ?, ?, ?)",
                                       arguments: [nowMilliseconds(), id, victim["n"], victim["bytes"], "disk budget \(budget.maxBytes) B"])
                        try refreshSummary(db, sessionID: id)
                        return .commit
                    }
                    report.sessionsEvicted.append(id)
                    report.bytesFreed += victim["bytes"] as Int64
                } else {
                    report.stillOverBudget = true
                    break
                }
                // Return freed pages to the file system so the free-space floor sees them.
                try db.execute(sql: "PRAGMA incremental_vacuum")
                _ = try? Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            }
            try db.execute(sql: "PRAGMA incremental_vacuum")
        }
        if report.syncedChunksDropped > 0 {
            configuration.log("disk budget: dropped \(report.syncedChunksDropped) synced chunk(s)")
        }
        for id in report.sessionsEvicted {
            configuration.log("disk budget: evicted unsent session \(id) (its data is lost)")
        }
        if report.stillOverBudget {
            configuration.log("disk budget: still over budget; only the recording session is left, recording continues")
        }
        return report
    }

    /// Deletes the points of chunks synced more than `retentionDays` ago.
    @discardableResult
    public func applyRetention() throws -> Int {
        let cutoff = nowMilliseconds() - configuration.retentionDays * 86_400_000
        let dropped = try writer.write { db -> Int in
            let rows = try Row.fetchAll(db, sql: """
                SELECT id, session_id, size FROM chunks
                WHERE session_id IN (SELECT id FROM sessions) AND upload_state = 'sent' AND sent_at < ? AND points IS NOT NULL
                """, arguments: [cutoff])
            for r in rows {
                try db.execute(sql: "UPDATE chunks SET points = NULL, size = 0 WHERE id = ?", arguments: [r["id"]])
                try db.execute(sql: "INSERT INTO evictions (at, kind, session_id, chunks, bytes, reason) VALUES (?, 'retention', ?, 1, ?, ?)",
                               arguments: [nowMilliseconds(), r["session_id"], r["size"], "synced over \(configuration.retentionDays) days ago"])
            }
            return rows.count
        }
        if dropped > 0 { configuration.log("retention: dropped \(dropped) synced chunk(s)") }
        return dropped
    }

    /// Eviction counts by kind (`synced_chunk`, `unsent_session`, `retention`).
    public func evictionCounts() throws -> [String: Int] {
        try reader.read { db in
            var out: [String: Int] = [:]
            for r in try Row.fetchAll(db, sql: "SELECT kind, count(*) AS n FROM evictions GROUP BY kind") { out[r["kind"]] = r["n"] }
            return out
        }
    }
}
