import Foundation

/// A `realtime_data` document: at most 2,000 points of one board, sealed once.
///
/// Fields (docs/data-model.md, docs/schema/realtime_data.schema.json): `data` (the points),
/// `session_id`, `board`, `seq` (0-based order of the board's chunks in its session) and
/// `schema_version`.
public struct RealtimeDataDocument: Hashable, Sendable {
    /// Firestore collection.
    public static let collection = "realtime_data"
    /// Points per document, at most.
    public static let maxPoints = 2000
    /// Version of the point schema.
    public static let schemaVersion: Int64 = 1

    /// Uppercase UUID v4 fixed when the chunk was sealed.
    public var name: String
    public var sessionID: String
    /// The board's address.
    public var board: String
    public var seq: Int
    public var points: [RecordedPoint]
    /// A revision of the chunk (its gap marks corrected after it was sealed): it replaces the
    /// document stored under its name rather than being created once.
    public var revised: Bool

    /// A document.
    public init(name: String, sessionID: String, board: String, seq: Int, points: [RecordedPoint], revised: Bool = false) {
        self.name = name
        self.sessionID = sessionID
        self.board = board
        self.seq = seq
        self.points = points
        self.revised = revised
    }

    /// The fields in Firestore's type system.
    public var fields: [(String, FirestoreValue)] {
        [
            ("data", .array(points.map(Self.value))),
            ("session_id", .string(sessionID)),
            ("board", .string(board)),
            ("seq", .integer(Int64(seq))),
            ("schema_version", .integer(Self.schemaVersion)),
        ]
    }

    /// Size by Firestore's rules (what `FirestoreSize.document` gives for `fields`), summed
    /// per point without building the value tree: the sinks check it before every commit.
    public var firestoreSize: Int {
        let names = Self.collection.utf8.count + 1 + name.utf8.count + 1 + 16
        var fields = "data".utf8.count + 1
        for p in points { fields += Self.firestoreSize(of: p) }
        fields += "session_id".utf8.count + 1 + sessionID.utf8.count + 1
        fields += "board".utf8.count + 1 + board.utf8.count + 1
        fields += "seq".utf8.count + 1 + 8 + "schema_version".utf8.count + 1 + 8
        return names + fields + 32
    }

    /// Firestore size of `value(p)`: key bytes + 1 per field, 8 per number, 1 per null,
    /// string bytes + 1.
    static func firestoreSize(of p: RecordedPoint) -> Int {
        // x, y, z (8 each) and timestamp (8), with their keys.
        let reading = 3 * (1 + 1 + 8) + "timestamp".utf8.count + 1 + 8
        var n = "gyroscope".utf8.count + 1 + reading
        if let l = p.location {
            n += "location".utf8.count + 1
            n += "latitude".utf8.count + 1 + 8 + "longitude".utf8.count + 1 + 8 + "timestamp".utf8.count + 1 + 8
            n += "accuracy".utf8.count + 1 + (l.accuracy == nil ? 1 : 8) + "age_ms".utf8.count + 1 + 8
            if l.deadReckoned { n += "dead_reckoned".utf8.count + 1 + 1 }
        } else {
            n += "location".utf8.count + 1 + 1
            n += "location_missing".utf8.count + 1 + (p.missingLocation ?? .noFix).name.utf8.count + 1
        }
        if p.accelerometer != nil { n += "accelerometer".utf8.count + 1 + reading }
        if p.missedBefore > 0 { n += "missed_before".utf8.count + 1 + 8 }
        if p.gapMilliseconds > 0 { n += "gap_ms".utf8.count + 1 + 8 }
        if p.backfilled { n += "backfilled".utf8.count + 1 + 1 }
        return n
    }

    /// Plain JSON of the document's fields.
    public var jsonText: String { FirestoreValue.map(fields).jsonText }

    /// One point: `{gyroscope:{x,y,z,timestamp}, location:{…}|null}` plus `location_missing`
    /// when null, `location.dead_reckoned: true` when the position was dead-reckoned,
    /// `accelerometer` when streamed, `missed_before` and `gap_ms` after a gap, `backfilled: true`
    /// when the sample came from the board's flash log rather than the stream.
    public static func value(_ p: RecordedPoint) -> FirestoreValue {
        var m: [(String, FirestoreValue)] = [
            ("gyroscope", .map([
                ("x", .float(p.gyroscope.x)), ("y", .float(p.gyroscope.y)), ("z", .float(p.gyroscope.z)),
                ("timestamp", .integer(Int64(p.gyroscope.timestamp.rounded()))),
            ])),
        ]
        if let l = p.location {
            var location: [(String, FirestoreValue)] = [
                ("latitude", .double(l.latitude)), ("longitude", .double(l.longitude)),
                ("timestamp", .integer(Int64(l.timestamp.rounded()))),
                ("accuracy", l.accuracy.map { .float($0) } ?? .null),
                ("age_ms", .integer(Int64(l.age.rounded()))),
            ]
            if l.deadReckoned { location.append(("dead_reckoned", .bool(true))) }
            m.append(("location", .map(location)))
        } else {
            m.append(("location", .null))
            m.append(("location_missing", .string((p.missingLocation ?? .noFix).name)))
        }
        if let a = p.accelerometer {
            m.append(("accelerometer", .map([
                ("x", .float(a.x)), ("y", .float(a.y)), ("z", .float(a.z)),
                ("timestamp", .integer(Int64(a.timestamp.rounded()))),
            ])))
        }
        if p.missedBefore > 0 { m.append(("missed_before", .integer(Int64(p.missedBefore)))) }
        if p.gapMilliseconds > 0 { m.append(("gap_ms", .integer(Int64(p.gapMilliseconds)))) }
        if p.backfilled { m.append(("backfilled", .bool(true))) }
        return .map(m)
    }
}

/// The hazard survey that closes a session.
public enum HazardSurvey: Hashable, Sendable {
    /// Hazard name to intensity.
    case hazards([String: Int])
    /// The walker explicitly reported no hazard.
    case noHazard

    /// Why a survey was refused.
    public struct Invalid: Error, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// Checks names and intensities; an empty map must be sent as `.noHazard`.
    public func validated() throws(Invalid) -> Self {
        guard case let .hazards(map) = self else { return self }
        guard !map.isEmpty else { throw Invalid(description: "empty hazard list: submit \"no hazard\" instead") }
        for (name, intensity) in map {
            let trimmed = name.trimmingCharacters(in: .whitespaces)
            guard !trimmed.isEmpty, name.utf8.count <= 128 else {
                throw Invalid(description: "hazard name must be 1 to 128 bytes, got \"\(name)\"")
            }
            guard !(name.hasPrefix("__") && name.hasSuffix("__")) else {
                throw Invalid(description: "hazard name \"\(name)\" is reserved by Firestore (__…__)")
            }
            guard intensity >= 0 else { throw Invalid(description: "hazard \"\(name)\" has negative intensity \(intensity)") }
        }
        return self
    }

    /// The `hazards` map (empty for no hazard).
    public var hazards: [String: Int] {
        if case let .hazards(m) = self { return m }
        return [:]
    }
}

/// The `records` document written when a session's survey is submitted.
///
/// Required fields (the original app's schema): `user_id`, `timestamp` (Unix epoch seconds of
/// submission), `hazards`, `gscope_data` (realtime_data names in seal order). Extra fields:
/// `schema_version`, `session_id`, `no_hazard`, `boards`, `start`, `end` (epoch ms),
/// `point_count`, `time_source`, and once revised `revision` and `revised_at`.
///
/// A record is revised when a board's flash log fills a gap of its session after the survey
/// went in (issue 21): the correction chunks are added to `gscope_data` after the others, and the
/// same document (same name) is written again with its new `end` and `point_count`.
public struct RecordsDocument: Hashable, Sendable {
    /// Firestore collection.
    public static let collection = "records"

    public var userID: String
    /// Unix epoch seconds of submission.
    public var timestamp: Int64
    public var survey: HazardSurvey
    public var gscopeData: [String]
    public var sessionID: String
    public var boards: [String]
    /// Epoch milliseconds.
    public var start: Int64
    /// Epoch milliseconds.
    public var end: Int64
    public var pointCount: Int
    public var timeSource: TimeSource
    /// How many times correction chunks were added after the survey went in (0: never; the
    /// document then has no `revision` or `revised_at` field, as before revisions existed).
    public var revision: Int
    /// When the last revision was made, epoch ms (nil until revised).
    public var revisedAt: Int64?

    /// A document.
    public init(userID: String, timestamp: Int64, survey: HazardSurvey, gscopeData: [String], sessionID: String,
                boards: [String], start: Int64, end: Int64, pointCount: Int, timeSource: TimeSource,
                revision: Int = 0, revisedAt: Int64? = nil) {
        self.userID = userID
        self.timestamp = timestamp
        self.survey = survey
        self.gscopeData = gscopeData
        self.sessionID = sessionID
        self.boards = boards
        self.start = start
        self.end = end
        self.pointCount = pointCount
        self.timeSource = timeSource
        self.revision = revision
        self.revisedAt = revisedAt
    }

    /// `user_id + "___" + time`.
    public var name: String { "\(userID)___\(timestamp)" }

    /// The fields in Firestore's type system.
    public var fields: [(String, FirestoreValue)] {
        var fields: [(String, FirestoreValue)] = [
            ("user_id", .string(userID)),
            ("timestamp", .integer(timestamp)),
            ("hazards", .map(survey.hazards.sorted { $0.key < $1.key }.map { ($0.key, .integer(Int64($0.value))) })),
            ("gscope_data", .array(gscopeData.map { .string($0) })),
            ("no_hazard", .bool(survey == .noHazard)),
            ("schema_version", .integer(RealtimeDataDocument.schemaVersion)),
            ("session_id", .string(sessionID)),
            ("boards", .array(boards.map { .string($0) })),
            ("start", .integer(start)),
            ("end", .integer(end)),
            ("point_count", .integer(Int64(pointCount))),
            ("time_source", .string(timeSource.rawValue)),
        ]
        if revision > 0 {
            fields.append(("revision", .integer(Int64(revision))))
            fields.append(("revised_at", revisedAt.map { .integer($0) } ?? .null))
        }
        return fields
    }

    /// Size by Firestore's rules.
    public var firestoreSize: Int {
        FirestoreSize.document(collection: Self.collection, documentID: name, fields: fields)
    }

    /// Plain JSON of the document's fields.
    public var jsonText: String { FirestoreValue.map(fields).jsonText }
}
