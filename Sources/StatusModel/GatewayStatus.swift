/// A snapshot of the whole gateway: what `mwctl status` shows, what `GetStatus` returns as
/// JSON and what the daemon's status line and journal events are made from.
///
/// This is the one status model. The gateway fills it where the data is (the recording
/// pipeline its board, GNSS, session, clock, backlog and problem parts; the control API the
/// sync and storage parts, which live beside the pipeline), the control API encodes it as is
/// and mwctl decodes the same type. Field names are the JSON names of API version 1 and stay
/// stable; times are Unix epoch seconds. Adding a field: add it here (optional or with a
/// default so older daemons' answers still decode), fill it where its data is, show it in
/// mwctl, and map it to a D-Bus property in `StatusMapping` only if it should be announced.
public struct GatewayStatus: Codable, Sendable, Equatable {
    /// When the snapshot was taken.
    public var generatedAt: Double
    /// Every board the gateway runs, sorted by address.
    public var boards: [BoardStatus]
    /// The GNSS receiver.
    public var gnss: GNSSStatus
    /// The recording session.
    public var session: SessionStatus
    /// Whether the system clock is synchronised, and the time source new points get.
    public var clock: ClockStatus
    /// Documents waiting for upload (nil until first read, or when the buffer cannot be read).
    public var backlog: BacklogStatus?
    /// The upstream sync. The sync service runs beside the pipeline, so the pipeline's own
    /// snapshots leave this nil and the control API fills it in every answer.
    public var sync: UpstreamSyncStatus?
    /// The buffer's disk. Like ``sync``, filled by the control API when it answers.
    public var storage: StorageStatus?
    /// The most recent problems, oldest first (at most ``GatewayStatus/maximumProblems``).
    public var problems: [GatewayProblem]
    /// The data path's bounded streams, from the boards' links to the pipeline, with their
    /// high-water marks (nil from daemons before they were reported).
    public var streams: [StreamStatus]?

    /// How many problems the status keeps.
    public static let maximumProblems = 10

    /// A snapshot of all parts.
    public init(generatedAt: Double, boards: [BoardStatus], gnss: GNSSStatus, session: SessionStatus, clock: ClockStatus,
                backlog: BacklogStatus?, sync: UpstreamSyncStatus? = nil, storage: StorageStatus? = nil,
                problems: [GatewayProblem], streams: [StreamStatus]? = nil) {
        self.generatedAt = generatedAt
        self.boards = boards
        self.gnss = gnss
        self.session = session
        self.clock = clock
        self.backlog = backlog
        self.sync = sync
        self.storage = storage
        self.problems = problems
        self.streams = streams
    }
}

/// A problem worth showing to the user (a refused command is not one: it is an answer).
public struct GatewayProblem: Codable, Sendable, Equatable, CustomStringConvertible {
    /// When it happened.
    public var at: Double
    /// `board`, `gnss`, `recording`, `buffer`.
    public var area: String
    public var message: String

    /// A problem of `area` that happened at `at` (epoch seconds).
    public init(at: Double, area: String, message: String) {
        self.at = at
        self.area = area
        self.message = message
    }

    public var description: String { "\(area): \(message)" }
}
