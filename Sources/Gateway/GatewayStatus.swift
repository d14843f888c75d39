import Buffer
import Foundation
import GNSS
import MetaWear
import Recording

/// A snapshot of the whole gateway for the control API (`mwctl status`) and logs.
public struct GatewayStatus: Sendable, Equatable {
    /// When the snapshot was taken.
    public var generatedAt: Date
    /// Every board the gateway runs, by address.
    public var boards: [BoardStatus]
    /// The GNSS receiver.
    public var gnss: GNSSStatus
    /// The recording session.
    public var session: SessionStatus
    /// Whether the system clock is synchronised, and the time source new points get.
    public var clock: ClockStatus
    /// Documents waiting for upload (nil until first read, or when the buffer cannot be read).
    public var backlog: BacklogStats?
    /// The most recent problems, oldest first (at most ``GatewayStatus/maximumErrors``).
    public var lastErrors: [GatewayProblem]

    /// How many problems the status keeps.
    public static let maximumErrors = 10
}

/// One board as the gateway sees it.
public struct BoardStatus: Sendable, Equatable {
    /// `AA:BB:CC:DD:EE:FF`.
    public var address: String
    /// Connection/stream state, as reported by the board session.
    public var state: String
    /// True while samples flow.
    public var isStreaming: Bool
    /// True while connected with the sensors off (no session records).
    public var isIdle: Bool = false
    /// Model and chip after the handshake (e.g. `MetaMotion S (BMI270)`).
    public var model: String?
    /// What of the board's identity is not known and why (e.g. Device Information not
    /// exported by BlueZ), nil when fully known.
    public var missingIdentity: String? = nil
    /// Last battery reading.
    public var battery: BatteryState?
    /// Configured gyro and accelerometer rates, hertz.
    public var gyroRateHertz: Double
    public var accelerometerRateHertz: Double?
    /// Gyro samples received since the gateway started.
    public var gyroSamplesReceived: Int
    /// Gyro samples handed to the current (or last) session.
    public var gyroSamplesInSession: Int
    /// Wall-clock time of the last notification.
    public var lastSampleAt: Date?

    /// Connected and past the handshake, streaming or idle.
    public var isConnected: Bool { isStreaming || isIdle }
}

/// The receiver's state.
public struct GNSSStatus: Sendable, Equatable {
    /// The source spec (`serial:/dev/ttyACM0`), nil when none is configured.
    public var source: String?
    /// Mode of the last fix (nil before the first).
    public var mode: GNSSFix.Mode?
    /// Whether the last fix had a position.
    public var hasPosition: Bool
    /// Last position.
    public var latitude: Double?
    public var longitude: Double?
    /// Satellites in the last fix.
    public var satellitesUsed: Int?
    /// Wall-clock arrival of the last fix.
    public var lastFixAt: Date?
    /// Fixes received since start.
    public var fixesReceived: Int
    /// True while the source runs (false after it ended or failed).
    public var isRunning: Bool

    /// Seconds since the last fix at `date` (nil before the first fix).
    public func age(at date: Date) -> Double? { lastFixAt.map { date.timeIntervalSince($0) } }
}

/// The recording session's state.
public struct SessionStatus: Sendable, Equatable {
    /// `idle` or `recording`.
    public var isRecording: Bool
    /// The recording session.
    public var sessionID: String?
    /// What started it (`control_api`, `button:<board>`, `always`).
    public var trigger: String?
    /// Wall-clock start.
    public var startedAt: Date?
    /// Sessions stopped and waiting for their hazard survey, oldest first.
    public var awaitingSurvey: [String]
    /// Chunks sealed since the gateway started.
    public var chunksSealed: Int
    /// `manual` or `always`.
    public var mode: GatewaySettings.SessionMode
}

/// The system clock.
public struct ClockStatus: Sendable, Equatable {
    public var systemClockSynchronised: Bool
    /// The source times of new points come from.
    public var timeSource: TimeSource
}

/// A problem worth showing to the user (a refused command is not one: it is an answer).
public struct GatewayProblem: Sendable, Equatable, CustomStringConvertible {
    /// When it happened.
    public var at: Date
    /// `board`, `gnss`, `recording`, `buffer`.
    public var area: String
    public var message: String

    public init(at: Date, area: String, message: String) {
        self.at = at
        self.area = area
        self.message = message
    }

    public var description: String { "\(area): \(message)" }
}
