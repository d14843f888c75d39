import Foundation

/// What starts or stops a session.
public enum SessionTrigger: Hashable, Sendable, CustomStringConvertible {
    /// The control API (D-Bus / mwctl).
    case controlAPI
    /// A board's button, by board address.
    case button(board: String)
    /// `always` mode: recording whenever a board streams.
    case always
    /// Startup recovery closed a session interrupted by a crash or power loss.
    case recovered
    /// The gateway was shut down gracefully (SIGTERM) while recording.
    case shutdown
    /// The session reached its length (`[session] max_duration`, or the length it was started with).
    case maxDuration

    /// The stored name: `control_api`, `button:<board>`, `always`, `recovered`, `shutdown`,
    /// `max_duration`.
    public var description: String {
        switch self {
        case .controlAPI: "control_api"
        case let .button(board): "button:\(board)"
        case .always: "always"
        case .recovered: "recovered"
        case .shutdown: "shutdown"
        case .maxDuration: "max_duration"
        }
    }
}

/// A session that has just started.
public struct SessionStart: Hashable, Sendable {
    public var sessionID: String
    /// Epoch milliseconds.
    public var startedAt: Double
    public var trigger: SessionTrigger

    /// A value with every field.
    public init(sessionID: String, startedAt: Double, trigger: SessionTrigger) {
        self.sessionID = sessionID
        self.startedAt = startedAt
        self.trigger = trigger
    }
}

/// The points of one board accepted since the last write, appended once a second so a crash
/// loses at most that second: the points the open chunk committed since then and the samples
/// that arrived since then and are still held for the time fit or a fix (stored with their best
/// time and location at the time of writing; the seal stores their final form). Each point is
/// written once, however long it is held, so the bytes written per second stay the bytes of
/// that second.
public struct OpenSegment: Hashable, Sendable {
    public var sessionID: String
    public var board: String
    /// Index of the first point among all points of this board in this session (0-based,
    /// sealed chunks included). The board's sealed chunks cover the indices below the sum
    /// of their point counts; recovery keeps the segments' points from there on.
    public var firstIndex: Int
    /// Encoded points (PointCodec), in order.
    public var bytes: [UInt8]
    public var pointCount: Int
    /// Weakest time source of the points.
    public var timeSource: TimeSource
    /// Points held after a gap until the board's flash log fills it (with the backfilled
    /// samples placed so far), in time order: not yet at their final index. `firstIndex` is
    /// the index the hold's first point will get; recovery merges them into the board's points
    /// by time (a point already there is not added again).
    public var held: Bool

    /// A value with every field.
    public init(sessionID: String, board: String, firstIndex: Int, bytes: [UInt8], pointCount: Int, timeSource: TimeSource,
                held: Bool = false) {
        self.sessionID = sessionID
        self.board = board
        self.firstIndex = firstIndex
        self.bytes = bytes
        self.pointCount = pointCount
        self.timeSource = timeSource
        self.held = held
    }
}

/// A full or final chunk to seal. The store names it (uppercase UUID v4) in the same
/// transaction that seals it.
public struct ChunkToSeal: Hashable, Sendable {
    public var sessionID: String
    public var board: String
    public var seq: Int
    /// Encoded points (PointCodec), at most 2,000.
    public var bytes: [UInt8]
    public var pointCount: Int
    /// Epoch milliseconds of the first and last point.
    public var firstTimestamp: Double
    public var lastTimestamp: Double
    /// Weakest time source of the chunk's points.
    public var timeSource: TimeSource
    /// Gyro samples found missing inside the chunk.
    public var missedSamples: Int

    /// CRC-32 of `bytes` when the caller kept it while the chunk filled (the recorder
    /// does); nil to have the store compute it.
    public var checksum: UInt32?

    /// Index (as ``OpenSegment/firstIndex``) one past the chunk's last point: the seal
    /// drops the board's segments that end at or before it, in the same transaction. Nil
    /// leaves the segments alone.
    public var segmentsThrough: Int?

    /// A value with every field.
    public init(sessionID: String, board: String, seq: Int, bytes: [UInt8], pointCount: Int, firstTimestamp: Double, lastTimestamp: Double, timeSource: TimeSource, missedSamples: Int) {
        self.sessionID = sessionID
        self.board = board
        self.seq = seq
        self.bytes = bytes
        self.pointCount = pointCount
        self.firstTimestamp = firstTimestamp
        self.lastTimestamp = lastTimestamp
        self.timeSource = timeSource
        self.missedSamples = missedSamples
    }
}

/// The end of a gap a session's stop left for a board's flash log to fill (a restart gap the
/// stop bounded, ``RecordingStore/restartGapBounded(sessionID:board:until:)``).
public struct StopGapBound: Hashable, Sendable {
    public var sessionID: String
    public var board: String
    /// Epoch milliseconds.
    public var until: Double
    /// Where the gap begins, epoch ms (``RestartGap/after``): a restarted gateway finds no stored
    /// point there when the gap opens the board's part of the session.
    public var after: Double?
    /// The gap opens the board's part of the session (``RestartGap/opensSession``).
    public var opensSession: Bool

    /// A value with every field.
    public init(sessionID: String, board: String, until: Double, after: Double? = nil, opensSession: Bool = false) {
        self.sessionID = sessionID
        self.board = board
        self.until = until
        self.after = after
        self.opensSession = opensSession
    }
}

/// A session that has stopped and now awaits its hazard survey.
public struct SessionEnd: Hashable, Sendable {
    public var sessionID: String
    /// Epoch milliseconds.
    public var endedAt: Double
    public var trigger: SessionTrigger
    public var boards: [String]
    public var pointCount: Int
    /// Metres along the GNSS track.
    public var distance: Double
    /// Weakest time source of the session's points.
    public var timeSource: TimeSource

    /// A value with every field.
    public init(sessionID: String, endedAt: Double, trigger: SessionTrigger, boards: [String], pointCount: Int, distance: Double, timeSource: TimeSource) {
        self.sessionID = sessionID
        self.endedAt = endedAt
        self.trigger = trigger
        self.boards = boards
        self.pointCount = pointCount
        self.distance = distance
        self.timeSource = timeSource
    }
}

/// Durable local storage for sessions: the Buffer module implements it on SQLite.
/// Calls are synchronous and local; recording never waits on the network.
public protocol RecordingStore: AnyObject {
    /// Records a new session.
    func beginSession(_ start: SessionStart) throws
    /// Appends the segments of every board in one durable transaction (once a second while
    /// recording).
    func append(_ segments: [OpenSegment]) throws
    /// Seals a chunk (and drops the segments it covers) in one durable transaction; returns
    /// the document name it was given.
    @discardableResult func seal(_ chunk: ChunkToSeal) throws -> String
    /// The session's times taken on the unsynchronised system clock before the first GNSS fix
    /// (recording, or stopped by this process before it) move `offset` ms later, onto GNSS
    /// time, in one durable transaction: its start and end, the points of its sealed chunks and
    /// segments whose time source is ``TimeSource/unsynchronisedSystemClock`` (then
    /// ``TimeSource/gnssCorrected``), the gaps its boards' logs still fill, and what a logged
    /// session keeps of its start and boot origins. A sealed chunk is revised (same name,
    /// uploaded again), so is a records document already written; a kill -9 leaves each time
    /// either as it was or converted.
    func convertOntoGNSSTime(sessionID: String, by offset: Double) throws
    /// Marks the session stopped and awaiting its survey.
    func endSession(_ end: SessionEnd) throws
    /// Marks the session stopped and keeps the gaps its stop left (``StopGapBound``, each filled
    /// later from its board's flash log) in one durable transaction: each commit on a stop's
    /// path is an fsync within a SIGTERM's 2 s (issue 18 §2.7).
    func endSession(_ end: SessionEnd, keepingStopGaps gaps: [StopGapBound]) throws
    /// Seals the stop's chunks (every board's last one, in order per board), keeps the gaps
    /// its stop left and marks the session stopped, in one durable transaction: a stop's
    /// writes are one commit (one fsync) however many boards it stops (issue 18 §2.7). Returns
    /// the chunks' document names, in order.
    @discardableResult
    func endSession(_ end: SessionEnd, sealing chunks: [ChunkToSeal], keepingStopGaps gaps: [StopGapBound]) throws -> [String]
    /// Writes the session's `records` document and queues it for upload.
    @discardableResult func submitSurvey(sessionID: String, survey: HazardSurvey, submittedAt: Date) throws -> RecordsDocument
    /// Sessions stopped but without a submitted survey, oldest first (a previous run's too).
    func sessionsAwaitingSurvey() throws -> [String]
    /// The restart gap of `board` in `sessionID` (``RestartGap``) ends at `until`, epoch ms:
    /// kept, so a gateway started after another restart still fills it. A gap a session's stop
    /// kept (the board's log not read yet) is kept this way too, so a restart before the board
    /// is back does not forget it.
    func restartGapBounded(sessionID: String, board: String, until: Double) throws
    /// Keeps the gap a session's stop left (``StopGapBound``) with its end, where it begins and
    /// whether it opens the board's part of the session: a gateway restarted before the board's
    /// log is read fills it as this one would.
    func restartGapKept(_ gap: StopGapBound) throws
    /// The restart gap of `board` in `sessionID` is filled, or can no longer be.
    func restartGapClosed(sessionID: String, board: String) throws
    /// What a logged session waits for from a board's flash log (``KeptLoggedRest``; its
    /// `nextSeq` and `storedTail` are not stored): kept, or updated, so a gateway restarted
    /// before the board's log is read still fills the session from it.
    func keepLoggedRest(_ rest: KeptLoggedRest) throws
    /// The logged session `sessionID` has everything `board`'s log held for it, or can no longer get it.
    func loggedRestClosed(sessionID: String, board: String) throws
    /// `board`'s stored points in `sessionID` at the marks' times get those gap marks (and the
    /// times they are moved to): the board's log filled the gap they followed, or showed it was
    /// a delay, after their chunk was sealed. The chunk is revised in place (same document
    /// name) and uploaded again.
    func reviseGapMarks(sessionID: String, board: String, _ marks: [GapMark]) throws
}

/// A stored point's gap mark counted again (``RecordingStore/reviseGapMarks(sessionID:board:_:)``).
public struct GapMark: Hashable, Sendable {
    /// The point's gyro timestamp, epoch ms, as stored.
    public var timestamp: Double
    /// Samples missing before it (`missed_before`), and the gap's length (`gap_ms`, 0 with none).
    public var missedBefore: Int
    public var gapMilliseconds: Int
    /// The time the board's log puts it at, epoch ms, when that is not `timestamp`: its stream
    /// was stamped late (a delay taken for a loss, which the log contradicts). Its accelerometer
    /// reading, streamed on the same link as late, moves as far (``RecordedPoint/moved(by:)``).
    public var movedTo: Double?

    /// Every field.
    public init(timestamp: Double, missedBefore: Int, gapMilliseconds: Int, movedTo: Double? = nil) {
        self.timestamp = timestamp
        self.missedBefore = missedBefore
        self.gapMilliseconds = gapMilliseconds
        self.movedTo = movedTo
    }
}

extension RecordingStore {
    /// Each gap, then the end, one after another.
    public func endSession(_ end: SessionEnd, keepingStopGaps gaps: [StopGapBound]) throws {
        for gap in gaps { try restartGapKept(gap) }
        try endSession(end)
    }
    /// Each chunk, then the gaps and the end.
    @discardableResult
    public func endSession(_ end: SessionEnd, sealing chunks: [ChunkToSeal], keepingStopGaps gaps: [StopGapBound]) throws -> [String] {
        let names = try chunks.map { try seal($0) }
        try endSession(end, keepingStopGaps: gaps)
        return names
    }
    /// A store that keeps no times beyond the recorder's.
    public func convertOntoGNSSTime(sessionID: String, by offset: Double) throws {}
    /// A store that keeps no restart gaps (it keeps nothing across a restart).
    public func restartGapBounded(sessionID: String, board: String, until: Double) throws {}
    /// A store that keeps only a gap's end (``restartGapBounded(sessionID:board:until:)``).
    public func restartGapKept(_ gap: StopGapBound) throws {
        try restartGapBounded(sessionID: gap.sessionID, board: gap.board, until: gap.until)
    }
    /// A store that keeps no restart gaps.
    public func restartGapClosed(sessionID: String, board: String) throws {}
    /// A store that keeps nothing across a restart.
    public func keepLoggedRest(_ rest: KeptLoggedRest) throws {}
    /// A store that keeps nothing across a restart.
    public func loggedRestClosed(sessionID: String, board: String) throws {}
    /// A store whose sealed chunks are not revised.
    public func reviseGapMarks(sessionID: String, board: String, _ marks: [GapMark]) throws {}
}
