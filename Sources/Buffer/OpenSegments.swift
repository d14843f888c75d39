import Foundation
import GRDB
import Recording

/// The points of a recording session not yet in a sealed chunk, per board: what recovery
/// seals and what an export of a live session shows.
struct OpenPoints {
    var board: String
    /// The seq the first chunk made of them gets.
    var seq: Int
    var points: [RecordedPoint]
    /// Weakest time source of the points.
    var timeSource: TimeSource
}

extension BufferStore {
    /// Every board's unsealed points of `sessionID`, by board: its segments (the journal's, or
    /// rows of `open_segments` from earlier versions) from the index its
    /// sealed chunks reach (a segment written before the seal that covers part of it is cut
    /// there), or an open chunk of the format before segments (databases written by earlier
    /// versions). A damaged segment keeps its valid prefix, and the points after it are kept
    /// only where they continue without a hole. A segment holds points as they were when it
    /// was written: samples still held then carry the time fit of that moment, which a later
    /// fit may have placed before a point written earlier; such a time is moved to 1 ms after
    /// the point before it, so the board's points stay in sample order.
    func openPoints(_ db: Database, sessionID: String) throws -> [OpenPoints] {
        var out: [OpenPoints] = []
        for row in try Row.fetchAll(db, sql: "SELECT board, seq, time_source, points FROM open_chunks WHERE session_id = ? ORDER BY board",
                                    arguments: [sessionID]) {
            out.append(OpenPoints(board: row["board"], seq: row["seq"],
                                  points: Self.decodeSalvaging([UInt8]((row["points"] as Data?) ?? Data())),
                                  timeSource: TimeSource(rawValue: row["time_source"]) ?? .unsynchronisedSystemClock))
        }
        // Rows of `open_segments` (databases written before the journal) first, then the
        // journal's records in the order written; by board, then index.
        var stored = try Row.fetchAll(db, sql: """
            SELECT board, first_index, point_count, time_source, points FROM open_segments WHERE session_id = ? ORDER BY id
            """, arguments: [sessionID]).map {
            StoredSegment(sessionID: sessionID, board: $0["board"], firstIndex: $0["first_index"], pointCount: $0["point_count"],
                          timeSource: $0["time_source"], points: [UInt8](($0["points"] as Data?) ?? Data()))
        }
        stored += journal?.segments(sessionID: sessionID) ?? SegmentJournal.segments(databasePath: path, sessionID: sessionID)
        // Written before the session's first fix moved its times onto GNSS time: moved as they are read.
        let shift = try Double.fetchOne(db, sql: "SELECT system_clock_shift_ms FROM sessions WHERE id = ?", arguments: [sessionID])
        stored = stored.map { Self.onGNSSTime($0, shift: shift) }
        for (board, segments) in Dictionary(grouping: stored, by: \.board).sorted(by: { $0.key < $1.key }) {
            let sealed = try Row.fetchOne(db, sql: """
                SELECT coalesce(sum(point_count), 0) AS points, coalesce(max(seq) + 1, 0) AS next,
                       max(last_ts) AS last FROM chunks
                WHERE session_id = ? AND board = ?
                """, arguments: [sessionID, board])
            let from: Int = sealed?["points"] ?? 0
            var worst = TimeSource.systemClockSynchronised
            // By index, in the order written: a later record of an index replaces an earlier
            // one. A held record (points after a gap waiting for a backfill) replaces the
            // provisional points written from its first index on before the gap was known;
            // the hold written out at its final indices (a record over that index) replaces
            // the held records.
            var slots: [RecordedPoint?] = []
            var held: [(start: Int, points: [RecordedPoint])] = []
            for segment in segments {
                let decoded = Self.decodeSalvaging(segment.points)
                if !decoded.isEmpty { worst = max(worst, TimeSource(rawValue: segment.timeSource) ?? .unsynchronisedSystemClock) }
                if segment.held {
                    if segment.firstIndex - from < slots.count { slots.removeSubrange(max(0, segment.firstIndex - from)...) }
                    held.append((segment.firstIndex, decoded))
                    continue
                }
                held.removeAll { segment.firstIndex <= $0.start && $0.start < segment.firstIndex + decoded.count }
                for (k, point) in decoded.enumerated() where segment.firstIndex + k >= from {
                    let slot = segment.firstIndex + k - from
                    if slot >= slots.count { slots += Array(repeating: nil, count: slot - slots.count + 1) }
                    slots[slot] = point
                }
            }
            // A hole: what follows cannot be placed.
            let placed = slots.prefix { $0 != nil }.compactMap { $0 }
            var previous: Double? = sealed?["last"]
            var points: [RecordedPoint] = []
            for var point in placed {
                if let before = previous, point.gyroscope.timestamp <= before { point.gyroscope.timestamp = before + 1 }
                previous = point.gyroscope.timestamp
                points.append(point)
            }
            points = Self.merging(held: held.flatMap(\.points), into: points, after: sealed?["last"])
            guard !points.isEmpty else { continue }
            out.append(OpenPoints(board: board, seq: sealed?["next"] ?? 0, points: points, timeSource: worst))
        }
        return out
    }

    /// `points` (in order) with the held points merged in by time: those after the sealed
    /// chunks' last time and not already there (the same sample written twice, once
    /// provisionally: equal readings within 5 ms).
    static func merging(held: [RecordedPoint], into points: [RecordedPoint], after sealedLast: Double?) -> [RecordedPoint] {
        guard !held.isEmpty else { return points }
        func same(_ a: RecordedPoint, _ b: RecordedPoint) -> Bool {
            abs(a.gyroscope.timestamp - b.gyroscope.timestamp) < 5 && a.gyroscope.x == b.gyroscope.x
                && a.gyroscope.y == b.gyroscope.y && a.gyroscope.z == b.gyroscope.z
        }
        var extra: [RecordedPoint] = []
        let sortedPoints = points.map(\.gyroscope.timestamp)
        for point in held.sorted(by: { $0.gyroscope.timestamp < $1.gyroscope.timestamp }) {
            let time = point.gyroscope.timestamp
            if let sealedLast, time <= sealedLast { continue }
            if let last = extra.last, same(last, point) { continue }
            // Nearby points of the placed ones (binary search on their times).
            var lo = 0, hi = sortedPoints.count
            while lo < hi {
                let mid = (lo + hi) / 2
                if sortedPoints[mid] < time - 5 { lo = mid + 1 } else { hi = mid }
            }
            var duplicate = false
            var i = lo
            while i < points.count, points[i].gyroscope.timestamp < time + 5 {
                if same(points[i], point) { duplicate = true; break }
                i += 1
            }
            if !duplicate { extra.append(point) }
        }
        var merged: [RecordedPoint] = []
        merged.reserveCapacity(points.count + extra.count)
        var j = 0
        for point in points {
            while j < extra.count, extra[j].gyroscope.timestamp < point.gyroscope.timestamp {
                merged.append(extra[j])
                j += 1
            }
            merged.append(point)
        }
        merged += extra[j...]
        return merged
    }
}
