import MetaWear

/// A board's stream that a gateway restart cut (kill -9, power loss) while the board went on
/// logging: startup recovery sealed the interrupted session up to its last stored point, and
/// what the board took from then until its stream is back is only in its flash log.
///
/// The stored tail holds the raw counts the log's entries are matched with (the anchors), so
/// the logged samples after it are placed on the streamed time base as after a link drop, and
/// sealed into the interrupted session as correction chunks, which its records document names.
public struct RestartGap: Hashable, Sendable {
    /// The interrupted (recovered) session.
    public var sessionID: String
    /// The board.
    public var board: String
    /// The seq the board's next chunk in that session gets.
    public var nextSeq: Int
    /// The board's last stored points of that session, in order (about its last minute).
    public var tail: [RecordedPoint]

    /// Every field.
    public init(sessionID: String, board: String, nextSeq: Int, tail: [RecordedPoint]) {
        self.sessionID = sessionID
        self.board = board
        self.nextSeq = nextSeq
        self.tail = tail
    }

    /// Time of the last stored point, epoch ms: the gap begins after it.
    public var after: Double? { tail.last?.gyroscope.timestamp }
}

/// A restart gap being filled: what the board's log gave so far.
struct PendingRestartGap {
    var gap: RestartGap
    /// Monotonic time of the first sample of the board's new stream: the gap ends before it.
    var streamResumedAt: Int64?
    /// Logged samples downloaded so far.
    var logged = LoggedSamples()
    /// Time of the last point sealed into the session, epoch ms (the tail's at first).
    var sealedThrough: Double?
    /// Backfilled points sealed so far, and the chunks they went into.
    var filled = 0
    var sealedChunks = 0

    init(_ gap: RestartGap) {
        self.gap = gap
        sealedThrough = gap.after
    }
}
