import Basics
import ExportFormats
import Foundation
import GRDB
import Recording

/// One session's points recombined from its chunks, ordered by time.
public struct SessionDataset: Sendable {
    /// A point with the board it came from.
    public struct BoardPoint: Sendable, Hashable {
        public var board: String
        public var point: RecordedPoint
    }

    public var sessionID: String
    /// Epoch milliseconds.
    public var startedAt: Double
    public var endedAt: Double?
    public var state: String
    public var timeSource: String?
    public var boards: [String]
    /// Every point of every board, by gyro timestamp (stable for equal times).
    public var points: [BoardPoint]
    /// Chunks in seal order.
    public var chunkNames: [String]
    /// The walker's hazard survey; nil until it is submitted.
    public var survey: HazardSurvey?
    /// Metres walked as recorded when the session stopped; nil while it records.
    public var distanceMetres: Double?
}

extension BufferStore {
    /// Recombines a session's sealed chunks (and its open chunk, while recording) into one
    /// time-ordered dataset. Errors name the session: unknown, data evicted or expired, or a
    /// damaged chunk.
    public func dataset(sessionID: String) throws -> SessionDataset {
        try reader.read { db in
            guard let s = try Row.fetchOne(db, sql: "SELECT s.*, \(Self.liveBoards) AS live_boards FROM sessions s WHERE s.id = ?",
                                           arguments: [sessionID]) else {
                throw StoreError.unknownSession(sessionID)
            }
            if (s["data_state"] as String) == "evicted" { throw StoreError.expired(sessionID) }
            var points: [SessionDataset.BoardPoint] = []
            var names: [String] = []
            for r in try Row.fetchAll(db, sql: "SELECT *, \(Self.storedPointsColumn) FROM chunks WHERE session_id = ? ORDER BY \(Self.sealOrder)", arguments: [sessionID]) {
                if r["stored_points"] as Data? == nil { throw StoreError.expired(sessionID) }
                let doc = try Self.document(r)
                names.append(doc.name)
                points += doc.points.map { SessionDataset.BoardPoint(board: doc.board, point: $0) }
            }
            for open in try openPoints(db, sessionID: sessionID) {
                points += open.points.map { SessionDataset.BoardPoint(board: open.board, point: $0) }
            }
            let indexed = points.enumerated().sorted {
                ($0.element.point.gyroscope.timestamp, $0.offset) < ($1.element.point.gyroscope.timestamp, $1.offset)
            }
            let boardsText: String = s["live_boards"]
            return SessionDataset(
                sessionID: sessionID, startedAt: s["started_at"], endedAt: s["ended_at"], state: s["state"],
                timeSource: s["time_source"],
                boards: CompactJSON.decodeStrings(boardsText) ?? [],
                points: indexed.map(\.element), chunkNames: names,
                survey: Self.survey(s), distanceMetres: s["ended_at"] == nil ? nil : s["distance_m"])
        }
    }

    /// The submitted survey of a `sessions` row, nil while none is.
    private static func survey(_ row: Row) -> HazardSurvey? {
        guard (row["state"] as String) == "submitted" else { return nil }
        if (row["no_hazard"] as Bool?) == true { return .noHazard }
        return .hazards(CompactJSON.decodeCounts(row["hazards"] ?? "{}") ?? [:])
    }

    /// Sessions known to the buffer, newest first: (id, started epoch ms, state, points, the
    /// history day the gateway filed it under, in the gateway's day boundaries, not the reader's,
    /// and the source of its times, nil while it records).
    public func sessions(limit: Int = 100) throws
        -> [(id: String, startedAt: Double, state: String, points: Int, day: String, timeSource: String?)] {
        try reader.read { db in
            try Row.fetchAll(db, sql: """
                SELECT s.id, s.started_at, s.state, \(Self.livePointCount) AS points, s.day, s.time_source FROM sessions s
                ORDER BY s.started_at DESC LIMIT ?
                """, arguments: [limit]).map { ($0["id"], $0["started_at"], $0["state"], $0["points"], $0["day"], $0["time_source"]) }
        }
    }
}

/// Writes a session dataset in an export format.
public enum SessionExporter {
    /// The dataset as text in `format`.
    public static func render(_ d: SessionDataset, format: ExportFormat) -> String {
        switch format {
        case .json: json(d)
        case .csv: csv(d)
        case .geojson: geojson(d)
        case .gpx: gpx(d)
        case .html: SessionPicture.html(d)
        case .svg: SessionPicture.svg(d)
        }
    }

    /// Without Foundation's `ISO8601DateFormatter`: it loads ICU's calendar and time-zone data,
    /// megabytes that would stay resident in the daemon after the first export.
    static func iso(_ ms: Double) -> String { ISO8601Timestamp.string(fromEpochMilliseconds: ms) }

    /// `{session:{…}, points:[{board, gyroscope, location, …}]}` with the document point schema,
    /// each point written by the sinks' plain point writer (``JSONWriter/plainPoint(_:board:)``).
    static func json(_ d: SessionDataset) -> String {
        var out = JSONWriter(capacity: 256 + d.points.count * 220)
        out.raw(#"{"session":"#)
        out.plain(.map([
            ("id", .string(d.sessionID)), ("start", .integer(Int64(d.startedAt.rounded()))),
            ("end", d.endedAt.map { .integer(Int64($0.rounded())) } ?? .null), ("state", .string(d.state)),
            ("time_source", d.timeSource.map { .string($0) } ?? .null), ("boards", .array(d.boards.map { .string($0) })),
            ("chunks", .array(d.chunkNames.map { .string($0) })), ("point_count", .integer(Int64(d.points.count))),
        ]))
        out.raw(#","points":["#)
        for (i, bp) in d.points.enumerated() {
            if i > 0 { out.raw(",\n") }
            out.plainPoint(bp.point, board: bp.board)
        }
        out.raw("]}\n")
        return out.text
    }

    /// MetaBase-style columns: epoch (ms), time (UTC), elapsed (s), x/y/z (deg/s), then board,
    /// location and accelerometer. Readings, positions and accuracy are the shortest decimals
    /// that read back to the values stored (``ShortestDecimal/plain(_:)-(Float)``), without an
    /// exponent; elapsed seconds keep the millisecond resolution of the timestamps.
    static func csv(_ d: SessionDataset) -> String {
        var out = "epoch (ms),time (UTC),elapsed (s),x-axis (deg/s),y-axis (deg/s),z-axis (deg/s),board,"
            + "latitude (deg),longitude (deg),location time (ms),accuracy (m),location age (ms),location missing,"
            + "accel x (g),accel y (g),accel z (g),missed before,gap (ms),location dead reckoned,backfilled\n"
        let t0 = d.points.first?.point.gyroscope.timestamp ?? d.startedAt
        for bp in d.points {
            let p = bp.point
            let g = p.gyroscope
            var cells = [String(Int64(g.timestamp.rounded())), iso(g.timestamp), FixedDecimal.string((g.timestamp - t0) / 1000, places: 3),
                         decimal(g.x), decimal(g.y), decimal(g.z), bp.board]
            if let l = p.location {
                cells += [decimal(l.latitude), decimal(l.longitude), String(Int64(l.timestamp.rounded())),
                          l.accuracy.map(decimal) ?? "", String(Int64(l.age.rounded())), ""]
            } else {
                cells += ["", "", "", "", "", (p.missingLocation ?? .noFix).name]
            }
            if let a = p.accelerometer {
                cells += [decimal(a.x), decimal(a.y), decimal(a.z)]
            } else {
                cells += ["", "", ""]
            }
            cells.append(String(p.missedBefore))
            cells.append(String(p.gapMilliseconds))
            cells.append(p.location?.deadReckoned == true ? "true" : "")
            cells.append(p.backfilled ? "true" : "")
            out += cells.joined(separator: ",") + "\n"
        }
        return out
    }

    /// A recorded value as a positional decimal (empty for a non-finite value, which has none).
    static func decimal(_ value: Float) -> String { ShortestDecimal.plain(value) ?? "" }

    /// A recorded value as a positional decimal (empty for a non-finite value).
    static func decimal(_ value: Double) -> String { ShortestDecimal.plain(value) ?? "" }

    /// Distinct consecutive positions of one board's track; `afterGap` marks the first
    /// position after samples went missing, `deadReckoned` a dead-reckoned one.
    static func track(_ d: SessionDataset, board: String) -> [TrackPoint] {
        var out: [TrackPoint] = []
        var gapPending = false
        for bp in d.points where bp.board == board {
            if bp.point.missedBefore > 0 { gapPending = true }
            guard let l = bp.point.location else { continue }
            if let last = out.last, last.lat == l.latitude, last.lon == l.longitude, !gapPending { continue }
            out.append(TrackPoint(lat: l.latitude, lon: l.longitude, time: l.timestamp, afterGap: gapPending && !out.isEmpty,
                                  deadReckoned: l.deadReckoned, backfilled: bp.point.backfilled))
            gapPending = false
        }
        return out
    }

    /// A FeatureCollection with one LineString per board (coordinates [lon, lat]); `times`,
    /// `dead_reckoned` and `backfilled` run parallel to the coordinates, `gaps` lists when the first sample after
    /// each gap came (epoch ms), the samples missing and the gap's duration.
    static func geojson(_ d: SessionDataset) -> String {
        var out = JSONWriter(capacity: 1024 + d.points.count * 40)
        out.raw(#"{"type":"FeatureCollection","features":["#)
        for (index, board) in Set(d.points.map(\.board)).sorted().enumerated() {
            let t = track(d, board: board)
            if index > 0 { out.raw(",") }
            out.raw(#"{"type":"Feature","properties":{"session":"#)
            out.string(d.sessionID)
            out.raw(#","board":"#)
            out.string(board)
            out.raw(#","start":"#)
            out.number(Int64(d.startedAt.rounded()))
            out.raw(#","times":"#)
            list(t, into: &out) { $1.number(Int64($0.time.rounded())) }
            out.raw(#","dead_reckoned":"#)
            list(t, into: &out) { $0.deadReckoned ? $1.raw("true") : $1.raw("false") }
            out.raw(#","backfilled":"#)
            list(t, into: &out) { $0.backfilled ? $1.raw("true") : $1.raw("false") }
            out.raw(#","gaps":"#)
            let gaps = d.points.filter { $0.board == board && $0.point.missedBefore > 0 }.map(\.point)
            list(gaps, into: &out) { p, out in
                out.raw(#"{"timestamp":"#)
                out.number(Int64(p.gyroscope.timestamp.rounded()))
                out.raw(#","missed_before":"#)
                out.number(Int64(p.missedBefore))
                out.raw(#","gap_ms":"#)
                out.number(Int64(p.gapMilliseconds))
                out.raw("}")
            }
            out.raw(#"},"geometry":{"type":"LineString","coordinates":"#)
            list(t, into: &out) { p, out in
                out.raw("[")
                out.numberOrNull(p.lon)
                out.raw(",")
                out.numberOrNull(p.lat)
                out.raw("]")
            }
            out.raw("}}")
        }
        out.raw("]}\n")
        return out.text
    }

    /// A JSON array of `items`, each written by `element`.
    private static func list<Item>(_ items: [Item], into out: inout JSONWriter, _ element: (Item, inout JSONWriter) -> Void) {
        out.raw("[")
        for (i, item) in items.enumerated() {
            if i > 0 { out.raw(",") }
            element(item, &out)
        }
        out.raw("]")
    }

    /// GPX 1.1 with one track segment per board and stretch without a gap (a gap in the
    /// samples starts a new segment); a dead-reckoned point has `<type>dead reckoning</type>`
    /// (GPX's `fix` has no value for it), a backfilled one a `<cmt>` saying so.
    static func gpx(_ d: SessionDataset) -> String {
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            + "<gpx version=\"1.1\" creator=\"mwgate\" xmlns=\"http://www.topografix.com/GPX/1/1\">\n"
            + "<trk><name>\(d.sessionID)</name>\n"
        for board in Set(d.points.map(\.board)).sorted() {
            out += "<trkseg>\n"
            for p in track(d, board: board) {
                if p.afterGap { out += "</trkseg>\n<trkseg>\n" }
                out += "<trkpt lat=\"\(decimal(p.lat))\" lon=\"\(decimal(p.lon))\"><time>\(iso(p.time))</time>"
                    + (p.backfilled ? "<cmt>backfilled from the board's flash log</cmt>" : "")
                    + (p.deadReckoned ? "<type>dead reckoning</type>" : "") + "</trkpt>\n"
            }
            out += "</trkseg>\n"
        }
        out += "</trk>\n</gpx>\n"
        return out
    }
}

/// One position of an exported track.
struct TrackPoint {
    var lat: Double
    var lon: Double
    /// Epoch milliseconds.
    var time: Double
    /// The first position after samples went missing.
    var afterGap: Bool
    var deadReckoned: Bool
    /// The position's point came from the board's flash log (a filled gap).
    var backfilled: Bool = false
}
