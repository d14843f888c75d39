/// JSON payloads of the control API's answers other than the status (the status and the sync
/// state are the status model's types, `GatewayStatus` and `UpstreamSyncStatus` in
/// `StatusModel`). Methods whose answer is a tree (lists, history) return these encoded as one
/// JSON string (`s`), so scripts can pipe `busctl call` output to `jq`; simple answers use
/// native D-Bus types. Field names are the camelCase names below and stable within API
/// version 1. Times are Unix epoch seconds.

/// What one `SyncNow` pass did.
public struct SyncRunPayload: Codable, Sendable, Equatable {
    public var sent: Int
    public var failed: Int
    public var remaining: Int
    public var error: String?

    public init(sent: Int, failed: Int, remaining: Int, error: String? = nil) {
        self.sent = sent
        self.failed = failed
        self.remaining = remaining
        self.error = error
    }
}

/// What `StopSession` sealed.
public struct SessionEndPayload: Codable, Sendable, Equatable {
    public var sessionID: String
    public var endedAt: Double
    public var trigger: String
    public var boards: [String]
    public var points: Int
    public var distanceMetres: Double
    public var timeSource: String

    public init(sessionID: String, endedAt: Double, trigger: String, boards: [String], points: Int,
                distanceMetres: Double, timeSource: String) {
        self.sessionID = sessionID
        self.endedAt = endedAt
        self.trigger = trigger
        self.boards = boards
        self.points = points
        self.distanceMetres = distanceMetres
        self.timeSource = timeSource
    }
}

/// One session of `ListSessions`, newest first.
public struct SessionListingPayload: Codable, Sendable, Equatable {
    public var sessionID: String
    public var startedAt: Double
    /// `recording`, `awaiting_survey`, `submitted`...
    public var state: String
    public var points: Int
    /// The history day the gateway filed the session under (`2026-11-27`, in the gateway's
    /// day boundaries, not the reader's); absent from daemons before it was added.
    public var day: String?
    /// Where its times come from once it stopped (`gnss_corrected`, `system_clock_synchronised`,
    /// `unsynchronised_system_clock`: on a clock that was not set, and no GNSS fix corrected it,
    /// docs/data-model.md); absent while it records, and from daemons before it was added.
    public var timeSource: String?

    public init(sessionID: String, startedAt: Double, state: String, points: Int, day: String? = nil, timeSource: String? = nil) {
        self.sessionID = sessionID
        self.startedAt = startedAt
        self.state = state
        self.points = points
        self.day = day
        self.timeSource = timeSource
    }
}

/// What `SubmitSurvey` produced: the records document queued for upload.
public struct SurveyResultPayload: Codable, Sendable, Equatable {
    public var sessionID: String
    public var document: String
    public var points: Int
    public var chunks: Int
    /// Hazard name to intensity; empty for "no hazard".
    public var hazards: [String: Int]
    public var noHazard: Bool

    public init(sessionID: String, document: String, points: Int, chunks: Int, hazards: [String: Int], noHazard: Bool) {
        self.sessionID = sessionID
        self.document = document
        self.points = points
        self.chunks = chunks
        self.hazards = hazards
        self.noHazard = noHazard
    }
}

/// One day of `History`.
///
/// `lost` counts sessions whose unsent data the disk budget evicted (its meaning since the
/// first version, kept for scripts); `evictedSessions` says the same under a clear name, and
/// `missedSamples` counts the samples missing in the day's gaps (what `mwctl history` shows as
/// LOST).
public struct HistoryDayPayload: Codable, Sendable, Equatable {
    public var day: String
    public var sessions: Int
    public var walkingMinutes: Double
    public var distanceMetres: Double
    public var samples: Int
    public var hazards: [String: Int]
    public var synced: Int
    public var unsynced: Int
    /// Sessions evicted by the disk budget (same as `evictedSessions`).
    public var lost: Int
    /// Sessions evicted by the disk budget.
    public var evictedSessions: Int
    /// Samples missing in the sessions' gaps (sum of their points' `missed_before`).
    public var missedSamples: Int

    public init(day: String, sessions: Int, walkingMinutes: Double, distanceMetres: Double, samples: Int,
                hazards: [String: Int], synced: Int, unsynced: Int, lost: Int, missedSamples: Int) {
        self.day = day
        self.sessions = sessions
        self.walkingMinutes = walkingMinutes
        self.distanceMetres = distanceMetres
        self.samples = samples
        self.hazards = hazards
        self.synced = synced
        self.unsynced = unsynced
        self.lost = lost
        evictedSessions = lost
        self.missedSamples = missedSamples
    }

    private enum CodingKeys: String, CodingKey {
        case day, sessions, walkingMinutes, distanceMetres, samples, hazards, synced, unsynced, lost, evictedSessions,
             missedSamples
    }

    /// Decodes a day; a daemon older than `missedSamples` sends neither new key (0 missed).
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        self.init(day: try c.decode(String.self, forKey: .day), sessions: try c.decode(Int.self, forKey: .sessions),
                  walkingMinutes: try c.decode(Double.self, forKey: .walkingMinutes),
                  distanceMetres: try c.decode(Double.self, forKey: .distanceMetres),
                  samples: try c.decode(Int.self, forKey: .samples), hazards: try c.decode([String: Int].self, forKey: .hazards),
                  synced: try c.decode(Int.self, forKey: .synced), unsynced: try c.decode(Int.self, forKey: .unsynced),
                  lost: try c.decode(Int.self, forKey: .lost),
                  missedSamples: try c.decodeIfPresent(Int.self, forKey: .missedSamples) ?? 0)
    }
}

/// One board seen by `ScanBoards`.
public struct ScanResultPayload: Codable, Sendable, Equatable {
    public var address: String
    public var name: String?
    public var rssi: Int?
    /// Whether the gateway already runs this board.
    public var added: Bool

    public init(address: String, name: String?, rssi: Int?, added: Bool) {
        self.address = address
        self.name = name
        self.rssi = rssi
        self.added = added
    }
}
