/// One board as the gateway sees it.
public struct BoardStatus: Codable, Sendable, Equatable {
    /// `AA:BB:CC:DD:EE:FF`.
    public var address: String
    /// Connection/stream state in the board session's words (`connecting`, `streaming (…)`,
    /// `idle (sensors off; …)`, `lost: …`, `reconnecting (…)`…).
    public var state: String
    /// True while samples flow (set once samples really arrive, not when the stream is asked for).
    public var isStreaming: Bool
    /// Model and chip after the handshake (e.g. `MetaMotion S (BMI270), firmware 1.7.3, …`).
    public var model: String?
    /// What of the board's identity is not known and why (e.g. Device Information not
    /// exported by BlueZ), nil when fully known.
    public var missingIdentity: String?
    /// Last battery reading.
    public var batteryPercent: Int?
    public var batteryMillivolts: Int?
    /// Configured gyro and accelerometer rates, hertz.
    public var gyroRateHz: Double
    public var accelerometerRateHz: Double?
    /// Gyro samples received since the gateway started.
    public var gyroSamplesReceived: Int
    /// Gyro samples handed to the current (or last) session.
    public var gyroSamplesInSession: Int
    /// Wall-clock time of the last notification.
    public var lastSampleAt: Double?
    /// The board's flash log (`logging (flash N entries, full after …)`, `logging, downloading:
    /// N entries left, about …`, `off: …`, `failed: …`); nil before the board said and from
    /// older daemons.
    public var flashLog: String?
    /// Gyro samples downloaded from the flash log that filled gaps of the stream (nil from older
    /// daemons and before any).
    public var gyroSamplesBackfilled: Int?
    /// While the flash log downloads: entries still on the board in this readout, and about how
    /// long they take at the readout's pace so far (nil otherwise, and from older daemons).
    public var flashLogEntriesLeft: Int?
    public var flashLogSecondsLeft: Double?

    enum CodingKeys: String, CodingKey {
        case address, state, model, missingIdentity, batteryPercent, batteryMillivolts, gyroRateHz, accelerometerRateHz
        case gyroSamplesReceived, gyroSamplesInSession, lastSampleAt, flashLog, gyroSamplesBackfilled
        case flashLogEntriesLeft, flashLogSecondsLeft
        case isStreaming = "streaming"
    }

    /// A board in `state`; everything learnt later starts unknown or zero.
    public init(address: String, state: String, isStreaming: Bool = false, model: String? = nil, missingIdentity: String? = nil,
                batteryPercent: Int? = nil, batteryMillivolts: Int? = nil, gyroRateHz: Double, accelerometerRateHz: Double? = nil,
                gyroSamplesReceived: Int = 0, gyroSamplesInSession: Int = 0, lastSampleAt: Double? = nil) {
        self.address = address
        self.state = state
        self.isStreaming = isStreaming
        self.model = model
        self.missingIdentity = missingIdentity
        self.batteryPercent = batteryPercent
        self.batteryMillivolts = batteryMillivolts
        self.gyroRateHz = gyroRateHz
        self.accelerometerRateHz = accelerometerRateHz
        self.gyroSamplesReceived = gyroSamplesReceived
        self.gyroSamplesInSession = gyroSamplesInSession
        self.lastSampleAt = lastSampleAt
    }

    /// True while connected with the sensors off (no session records): the session's `idle`
    /// state, read from ``state`` so it survives the JSON round trip.
    public var isIdle: Bool { state.hasPrefix(Self.idleStatePrefix) }

    /// Connected and past the handshake, streaming or idle.
    public var isConnected: Bool { isStreaming || isIdle }

    /// How the board session words its idle state (`idle (sensors off; …)`).
    public static let idleStatePrefix = "idle ("

    /// How the board session words its streaming state (`streaming (…)`): the link is up and
    /// the stream asked for, whether or not its samples flow yet (``isStreaming``).
    public static let streamingStatePrefix = "streaming ("

    /// True in the streaming state (``streamingStatePrefix``), samples or not.
    public var isInStreamingState: Bool { state.hasPrefix(Self.streamingStatePrefix) }

    /// True once the gateway stopped the board on purpose (shutdown, or the board removed):
    /// its session ended, which is no loss of the board.
    public var isStopped: Bool { state == Self.stoppedState }

    /// How the board session words its end (``isStopped``).
    public static let stoppedState = "stopped"
}
