/// The recording session.
public struct SessionStatus: Codable, Sendable, Equatable {
    /// `idle` or `recording`.
    public var state: String
    /// The recording session.
    public var sessionID: String?
    /// What started it (`control_api`, `button:<board>`, `always`).
    public var trigger: String?
    /// Wall-clock start.
    public var startedAt: Double?
    /// Sessions stopped and waiting for their hazard survey, oldest first.
    public var awaitingSurvey: [String]
    /// Chunks sealed since the gateway started.
    public var chunksSealed: Int
    /// `manual` or `always`.
    public var mode: String

    /// The session part of a snapshot.
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

    /// Whether a session records.
    public var isRecording: Bool { state == Self.recording }

    /// The API's words for ``state``.
    public static let recording = "recording"
    public static let idle = "idle"
}

/// The system clock.
public struct ClockStatus: Codable, Sendable, Equatable {
    public var systemClockSynchronised: Bool
    /// `system_clock_synchronised`, `gnss_corrected` or `unsynchronised_system_clock`.
    public var timeSource: String

    /// The clock part of a snapshot.
    public init(systemClockSynchronised: Bool, timeSource: String) {
        self.systemClockSynchronised = systemClockSynchronised
        self.timeSource = timeSource
    }
}
