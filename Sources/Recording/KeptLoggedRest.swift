/// What a logged session (rates beyond the link, issue 21) still waits for from one board's
/// flash log, as the buffer keeps it across a gateway restart: while the session records (a
/// kill -9 or power loss leaves it there, and startup recovery closes the session at its last
/// stored point), and after its stop when the board's log was not read to the end (the board
/// away, or a graceful shutdown). The board's log is read when it is back, and what it took
/// from the session's start to `end` that is not stored yet is sealed into the session as
/// correction chunks.
///
/// The board ticks of the log are placed with the boot origins the session used (`bootOrigins`,
/// epoch ms), so the samples filled after a restart are on the session's time base, and those
/// a restart read again (a page stored but not yet deleted on the board) are found by the
/// stored tail (`storedTail`) and not stored twice.
public struct KeptLoggedRest: Hashable, Sendable {
    /// The logged session.
    public var sessionID: String
    /// The board.
    public var board: String
    /// The session's start, epoch ms: the board's samples from then on are the session's.
    public var startedAt: Double
    /// The session's end for this board, epoch ms: nil while the session records, or, for a
    /// session a restart interrupted, until the board is back (its return ends what it took
    /// for the session).
    public var end: Double?
    /// The rates the board logged at.
    public var gyroRate: Double
    public var accelerometerRate: Double?
    /// Where each boot's tick 0 lies, epoch ms, by reset UID (as the session placed its samples).
    public var bootOrigins: [UInt8: Double]
    /// Loaded from the store: the seq the board's next chunk in the session gets.
    public var nextSeq: Int
    /// Loaded from the store: the board's last stored points in the session, in order (at most
    /// ``storedTailLength``).
    public var storedTail: [RecordedPoint]

    /// How many of the board's last stored points a restart matches the log's first page with.
    public static let storedTailLength = 4

    /// Every field; `nextSeq` and `storedTail` are the store's to fill when it loads the rest.
    public init(sessionID: String, board: String, startedAt: Double, end: Double?, gyroRate: Double, accelerometerRate: Double?,
                bootOrigins: [UInt8: Double], nextSeq: Int = 0, storedTail: [RecordedPoint] = []) {
        self.sessionID = sessionID
        self.board = board
        self.startedAt = startedAt
        self.end = end
        self.gyroRate = gyroRate
        self.accelerometerRate = accelerometerRate
        self.bootOrigins = bootOrigins
        self.nextSeq = nextSeq
        self.storedTail = storedTail
    }
}
