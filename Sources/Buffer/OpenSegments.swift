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
        var byBoard: [(board: String, segments: [StoredSegment])] = []
        for (board, group) in Dictionary(grouping: stored.enumerated(), by: { $0.element.board }).sorted(by: { $0.key < $1.key }) {
            // Stable: equal first indices keep the order they were written in.
            byBoard.append((board, group.sorted { ($0.element.firstIndex, $0.offset) < ($1.element.firstIndex, $1.offset) }.map(\.element)))
        }
        for (board, segments) in byBoard {
            let sealed = try Row.fetchOne(db, sql: """
                SELECT coalesce(sum(point_count), 0) AS points, coalesce(max(seq) + 1, 0) AS next,
                       max(last_ts) AS last FROM chunks
                WHERE session_id = ? AND board = ?
                """, arguments: [sessionID, board])
            var next: Int = sealed?["points"] ?? 0
            var points: [RecordedPoint] = []
            var worst = TimeSource.systemClockSynchronised
            var previous: Double? = sealed?["last"]
            for segment in segments {
                let first = segment.firstIndex
                guard first <= next else { break }  // a hole: what follows cannot be placed
                let decoded = Self.decodeSalvaging(segment.points)
                let fresh = decoded.dropFirst(next - first)
                guard !fresh.isEmpty else { continue }
                for var point in fresh {
                    if let before = previous, point.gyroscope.timestamp <= before { point.gyroscope.timestamp = before + 1 }
                    previous = point.gyroscope.timestamp
                    points.append(point)
                }
                next += fresh.count
                worst = max(worst, TimeSource(rawValue: segment.timeSource) ?? .unsynchronisedSystemClock)
            }
            guard !points.isEmpty else { continue }
            out.append(OpenPoints(board: board, seq: sealed?["next"] ?? 0, points: points, timeSource: worst))
        }
        return out
    }
}
