/// JSON payloads of the control API. Methods whose answer is a tree (status, lists,
/// history) return these encoded as one JSON string (`s`), so scripts can pipe
/// `busctl call` output to `jq`; simple answers use native D-Bus types. Field names are
/// the camelCase names below and stable within API version 1. Times are Unix epoch seconds.

/// The whole gateway (`GetStatus`).
public struct StatusPayload: Codable, Sendable, Equatable {
    public var generatedAt: Double
    public var boards: [BoardPayload]
    public var gnss: GNSSPayload
    public var session: SessionPayload
    public var clock: ClockPayload
    public var backlog: BacklogPayload?
    public var sync: SyncStatusPayload
    public var storage: StoragePayload
    public var problems: [ProblemPayload]

    public init(generatedAt: Double, boards: [BoardPayload], gnss: GNSSPayload, session: SessionPayload,
                clock: ClockPayload, backlog: BacklogPayload?, sync: SyncStatusPayload, storage: StoragePayload,
                problems: [ProblemPayload]) {
        self.storage = storage
        self.generatedAt = generatedAt
        self.boards = boards
        self.gnss = gnss
        self.session = session
        self.clock = clock
        self.backlog = backlog
        self.sync = sync
        self.problems = problems
    }
}

/// One board.
public struct BoardPayload: Codable, Sendable, Equatable {
    public var address: String
    public var state: String
    public var streaming: Bool
    public var model: String?
    public var batteryPercent: Int?
    public var batteryMillivolts: Int?
    public var gyroRateHz: Double
    public var accelerometerRateHz: Double?
    public var gyroSamplesReceived: Int
    public var gyroSamplesInSession: Int
    public var lastSampleAt: Double?
    /// What of the board's identity is unknown and why (absent when DIS named model and firmware).
    public var missingIdentity: String?

    public init(address: String, state: String, streaming: Bool, model: String?, batteryPercent: Int?,
                batteryMillivolts: Int?, gyroRateHz: Double, accelerometerRateHz: Double?, gyroSamplesReceived: Int,
                gyroSamplesInSession: Int, lastSampleAt: Double?, missingIdentity: String? = nil) {
        self.missingIdentity = missingIdentity
        self.address = address
        self.state = state
        self.streaming = streaming
        self.model = model
        self.batteryPercent = batteryPercent
        self.batteryMillivolts = batteryMillivolts
        self.gyroRateHz = gyroRateHz
        self.accelerometerRateHz = accelerometerRateHz
        self.gyroSamplesReceived = gyroSamplesReceived
        self.gyroSamplesInSession = gyroSamplesInSession
        self.lastSampleAt = lastSampleAt
    }
}

/// The GNSS receiver.
public struct GNSSPayload: Codable, Sendable, Equatable {
    public var source: String?
    public var running: Bool
    /// `no_fix`, `2d`, `3d`, or nil before the first fix.
    public var mode: String?
    public var hasPosition: Bool
    public var latitude: Double?
    public var longitude: Double?
    public var satellitesUsed: Int?
    public var lastFixAt: Double?
    public var fixAgeSeconds: Double?
    public var fixesReceived: Int

    public init(source: String?, running: Bool, mode: String?, hasPosition: Bool, latitude: Double?, longitude: Double?,
                satellitesUsed: Int?, lastFixAt: Double?, fixAgeSeconds: Double?, fixesReceived: Int) {
        self.source = source
        self.running = running
        self.mode = mode
        self.hasPosition = hasPosition
        self.latitude = latitude
        self.longitude = longitude
        self.satellitesUsed = satellitesUsed
        self.lastFixAt = lastFixAt
        self.fixAgeSeconds = fixAgeSeconds
        self.fixesReceived = fixesReceived
    }
}

/// The recording session.
public struct SessionPayload: Codable, Sendable, Equatable {
    /// `idle` or `recording`.
    public var state: String
    public var sessionID: String?
    public var trigger: String?
    public var startedAt: Double?
    public var awaitingSurvey: [String]
    public var chunksSealed: Int
    /// `manual` or `always`.
    public var mode: String

    public init(state: String, sessionID: String?, trigger: String?, startedAt: Double?, awaitingSurvey: [String],
                chunksSealed: Int, mode: String) {
        self.state = state
        self.sessionID = sessionID
        self.trigger = trigger
        self.startedAt = startedAt
        self.awaitingSurvey = awaitingSurvey
        self.chunksSealed = chunksSealed
        self.mode = mode
    }
}

/// The system clock.
public struct ClockPayload: Codable, Sendable, Equatable {
    public var systemClockSynchronised: Bool
    /// `system_clock_synchronised`, `gnss_corrected` or `unsynchronised_system_clock`.
    public var timeSource: String

    public init(systemClockSynchronised: Bool, timeSource: String) {
        self.systemClockSynchronised = systemClockSynchronised
        self.timeSource = timeSource
    }
}

/// Documents waiting for upload, and the disk they use.
public struct BacklogPayload: Codable, Sendable, Equatable {
    public var documents: Int
    public var bytes: Int64
    public var oldestUnsentAgeSeconds: Double?
    public var dead: Int
    public var inFlight: Int

    public init(documents: Int, bytes: Int64, oldestUnsentAgeSeconds: Double?, dead: Int, inFlight: Int) {
        self.documents = documents
        self.bytes = bytes
        self.oldestUnsentAgeSeconds = oldestUnsentAgeSeconds
        self.dead = dead
        self.inFlight = inFlight
    }
}

/// A recent problem.
public struct ProblemPayload: Codable, Sendable, Equatable {
    public var at: Double
    public var area: String
    public var message: String

    public init(at: Double, area: String, message: String) {
        self.at = at
        self.area = area
        self.message = message
    }
}

/// The upstream sync, as the sync service reports it (`SyncStatus`).
public struct SyncStatusPayload: Codable, Sendable, Equatable {
    /// False when the gateway runs without an upstream (buffer only).
    public var configured: Bool
    /// The upstream's base URL (no credentials).
    public var endpoint: String?
    /// `idle`, `uploading`, `backing_off`, `offline`, `auth_failed`, `disabled`...
    public var state: String
    /// Whether credentials are present (never the credentials themselves).
    public var credentialsPresent: Bool?
    public var lastSuccessAt: Double?
    public var lastAttemptAt: Double?
    public var lastError: String?
    public var nextAttemptAt: Double?
    public var documentsSent: Int

    public init(configured: Bool, endpoint: String? = nil, state: String, credentialsPresent: Bool? = nil,
                lastSuccessAt: Double? = nil, lastAttemptAt: Double? = nil, lastError: String? = nil,
                nextAttemptAt: Double? = nil, documentsSent: Int = 0) {
        self.configured = configured
        self.endpoint = endpoint
        self.state = state
        self.credentialsPresent = credentialsPresent
        self.lastSuccessAt = lastSuccessAt
        self.lastAttemptAt = lastAttemptAt
        self.lastError = lastError
        self.nextAttemptAt = nextAttemptAt
        self.documentsSent = documentsSent
    }

    /// The answer when no upstream is configured.
    public static let notConfigured = SyncStatusPayload(configured: false, state: "disabled")
}

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

    public init(sessionID: String, startedAt: Double, state: String, points: Int) {
        self.sessionID = sessionID
        self.startedAt = startedAt
        self.state = state
        self.points = points
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

/// The state directory's disk and the buffer's budget.
public struct StoragePayload: Codable, Sendable, Equatable {
    public var stateDirectory: String
    /// Free bytes on the state directory's file system (nil when it cannot be read).
    public var freeBytes: Int64?
    /// The buffer database's size on disk, with its WAL.
    public var bufferBytes: Int64?
    /// The configured budget: the most the buffer may use, and the free space it must leave.
    public var budgetMaxBytes: Int64
    public var budgetMinFreeBytes: Int64

    public init(stateDirectory: String, freeBytes: Int64?, bufferBytes: Int64?, budgetMaxBytes: Int64, budgetMinFreeBytes: Int64) {
        self.stateDirectory = stateDirectory
        self.freeBytes = freeBytes
        self.bufferBytes = bufferBytes
        self.budgetMaxBytes = budgetMaxBytes
        self.budgetMinFreeBytes = budgetMinFreeBytes
    }
}
