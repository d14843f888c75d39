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
    /// Time of the last stored point before the gap, epoch ms: the gap begins after it.
    public var after: Double?
    /// Where the gap ends, epoch ms (the first sample of the board's stream after the restart),
    /// when a gateway before this one saw that stream; nil until the board streams again.
    public var until: Double?
    /// With `until`: the board's first stored points from there on (what that stream recorded),
    /// the anchors after the gap.
    public var head: [RecordedPoint]
    /// The gap opens the board's part of its session (`after` is the session's start, no
    /// sample's time: the board resumed from it, stalled or away, ``BackfillHold/opensSession``):
    /// none is counted missing before its first point, whose board may only have started its
    /// sensors with the session (30-130 ms). Kept with the gap (with `after`), so a gateway
    /// restarted before the log is read counts none either.
    public var opensSession: Bool

    /// Every field; the gap begins after `after`, by default after the tail's last point.
    public init(sessionID: String, board: String, nextSeq: Int, tail: [RecordedPoint], after: Double? = nil,
                until: Double? = nil, head: [RecordedPoint] = [], opensSession: Bool = false) {
        self.sessionID = sessionID
        self.board = board
        self.nextSeq = nextSeq
        self.tail = tail
        self.after = after ?? tail.last?.gyroscope.timestamp
        self.until = until
        self.head = head
        self.opensSession = opensSession
    }
}

extension RestartGap {
    /// Where the board was at the gap's edges, as fixes: the positions the last located point
    /// of the tail and the first of the head were given. The fixes of the gateway that stored
    /// them went with it; its points were located from them (each checkpoint journals the
    /// points still waiting for a fix, located as well as it could then), so these carry its
    /// track up to its last stored second, and its samples are placed between them and this
    /// gateway's fixes as a live gap's are between fixes.
    var edgeFixes: [LocatedFix] {
        [tail.last { $0.location != nil }, head.first { $0.location != nil }].compactMap { $0?.location.map(LocatedFix.init) }
    }
}

/// A restart gap being filled: what the board's log gave so far. A gap a session's stop cut
/// off from its download (``SessionController/keepStopGap(board:sessionID:)``) is filled the
/// same way, with the stream's first sample after it as its end.
struct PendingRestartGap {
    var gap: RestartGap
    /// Time of the first sample of the board's new stream, epoch ms: the gap ends before it.
    var until: Double?
    /// Logged samples downloaded so far.
    var logged = LoggedSamples()
    /// Where the board clock puts their values, for the stored tail's alignment.
    var loggedTimes = StoredTailAlignment.LoggedTimes()
    /// Time of the last point sealed into the session, epoch ms (nil: none yet, the filling
    /// begins at ``from(periodMs:)``).
    var sealedThrough: Double?
    /// Backfilled points sealed so far, and the chunks they went into.
    var filled = 0
    var sealedChunks = 0
    /// A stop gap's board as the stopped session left it: its gyro rate and its fixes (the
    /// board may be detached, or streaming into the next session, by the time its log comes).
    /// Nil for a restart gap, which uses the board's new stream, until the board leaves the
    /// recorder while the gap waits (``SessionController/keepStreamForRestartGaps(board:)``).
    var stoppedStream: (gyroRate: Double, merger: LocationMerger<GyroItem>)?
    /// The stored tail was streamed by this process (a gap its session's stop kept): its times
    /// are on the stream window's clock already, and the tail is in that window. Only a tail an
    /// earlier gateway stored is moved onto the new stream's clock (``StoredTailAlignment``).
    var tailStreamedHere = false
    /// Where in the tail each newer link's points begin (a held stretch's ``BackfillHold/linkStarts``).
    var tailLinkStarts: [Int] = []
    /// The board's log was asked for (once the gap is bounded and the board streams).
    var requested = false
    /// The gap opens the board's part of its session (``RestartGap/opensSession``).
    var opensSession: Bool { gap.opensSession }
    /// A second readout was asked for, the first having ended before the gap did.
    var readAgain = false
    /// The logged samples sealed so far: a later page's plan may place one of them again
    /// (its anchors moved), and it is not stored twice.
    var sealedSamples: Set<BackfillKey> = []
    /// The last logged sample sealed: the log's samples after it go after it.
    var lastSealed: BackfillKey?
    /// Each logged sample sealed, with its time in the session (epoch ms), in the order sealed:
    /// the stored points they now precede get their gap marks counted again
    /// (``SessionController/reviseStoredMarks(_:board:scale:periodMs:)``).
    var sealed: [(key: BackfillKey, time: Double)] = []

    /// Samples before the last one sealed that a page places again (with the planner's own
    /// ``BackfillPlanner/placingContext``): a page's anchors may move the samples near it.
    static let placedAgain = 256

    /// The first of the logged samples (in readout order) a page needs placed: from
    /// ``placedAgain`` before the last one sealed, which the log's samples after it follow;
    /// those before it are stored, or were no sample of the gap's.
    var placingFrom: Int {
        guard let last = lastSealed,
              let at = logged.samples.lastIndex(where: { $0.tick == last.tick && $0.resetUID == last.resetUID }) else { return 0 }
        return max(0, at - Self.placedAgain)
    }

    /// The stored tail was timed by an earlier gateway, on its clock: the board clock this
    /// process read places a logged sample on this process's clock, which the tail is not on
    /// until its own samples in the log relate the two (``StoredTailAlignment``).
    var tailIsAnEarlierGatewaysTimes: Bool { !tailStreamedHere && !gap.tail.isEmpty }

    /// The gap ends where this process's stream of the board begins: a gateway restart's gap
    /// no earlier gateway bounded (a stop's gap, or one with a stored head, ends in a stream
    /// whose boot an earlier link read).
    var endsAtThisProcessStream: Bool { !tailStreamedHere && gap.head.isEmpty }

    /// Whether the logged samples of boot `resetUID` are of a boot that ended before this
    /// process's stream (the board reset while the gateway was down): no link of this process
    /// read that boot's clock, and the gap ends in this process's stream.
    func isOfAnEndedBoot(_ resetUID: UInt8) -> Bool {
        endsAtThisProcessStream && logged.bootOrigins[resetUID] == nil
    }

    init(_ gap: RestartGap) {
        self.gap = gap
        until = gap.until
    }

    /// Where the filling begins, epoch ms: at the first gap in the stored tail, a step of more
    /// than one and a half sample periods (`periodMs`) between two points, else after the tail.
    /// The points a link drop's gap held for its backfill when the gateway died were stored by
    /// recovery after that gap, which the log fills too; their gap mark may not have been
    /// journaled (points written provisionally before the gap was known carry none).
    func from(periodMs: Double) -> Double {
        let tail = gap.tail
        let firstGap = zip(tail, tail.dropFirst()).first { $1.gyroscope.timestamp - $0.gyroscope.timestamp > periodMs * 1.5 }
        return min(firstGap?.0.gyroscope.timestamp ?? .infinity, gap.after ?? .infinity)
    }
}
