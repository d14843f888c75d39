import Foundation
import GRDB
import Recording

extension BufferStore {
    /// How much of a board's stored stream a restart gap keeps as its tail, milliseconds: more
    /// than the flash log holds from before a crash while it is trimmed (10 s and a margin).
    static let restartTailMilliseconds = 60_000.0

    /// The gaps a gateway restart left in `sessionIDs` (the sessions
    /// ``recoverInterruptedSessions()`` closed, awaiting their survey): per session and board,
    /// the board's last stored points (about its last minute) and the seq its next chunk gets.
    /// The board's flash log fills them when it streams again (``RestartGap``).
    public func restartGaps(sessionIDs: [String]) throws -> [RestartGap] {
        try reader.read { db in
            var gaps: [RestartGap] = []
            for id in sessionIDs {
                guard try String.fetchOne(db, sql: "SELECT state FROM sessions WHERE id = ?", arguments: [id]) == "awaiting_survey" else {
                    continue
                }
                let boards = try String.fetchAll(db, sql: "SELECT DISTINCT board FROM chunks WHERE session_id = ? ORDER BY board",
                                                 arguments: [id])
                for board in boards {
                    // Newest chunk first, until the tail spans its minute.
                    let rows = try Row.fetchCursor(db, sql: """
                        SELECT seq, last_ts, \(Self.storedPointsColumn) FROM chunks
                        WHERE session_id = ? AND board = ? ORDER BY seq DESC
                        """, arguments: [id, board])
                    var nextSeq: Int?
                    var chunks: [[RecordedPoint]] = []
                    var newest: Double?
                    while let row = try rows.next() {
                        nextSeq = nextSeq ?? (row["seq"] as Int) + 1
                        let points = Self.decodeSalvaging([UInt8]((row["stored_points"] as Data?) ?? Data()))
                        guard !points.isEmpty else { break }
                        newest = newest ?? points.last?.gyroscope.timestamp
                        chunks.append(points)
                        if let newest, let first = points.first, newest - first.gyroscope.timestamp >= Self.restartTailMilliseconds { break }
                    }
                    guard let nextSeq, let newest else { continue }
                    let tail = chunks.reversed().joined().filter { newest - $0.gyroscope.timestamp <= Self.restartTailMilliseconds }
                    gaps.append(RestartGap(sessionID: id, board: board, nextSeq: nextSeq, tail: Array(tail)))
                }
            }
            return gaps
        }
    }
}
