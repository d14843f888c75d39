import BlueZ
import Foundation
import GNSS
import MetaWear
import Recording

/// Everything the gateway needs to run, as plain values. The TOML configuration maps onto
/// this; tests build it directly.
public struct GatewaySettings: Sendable {
    /// How boards are found.
    public enum BoardSelection: Sendable, Equatable {
        /// Exactly these boards, connected by address.
        case addresses([BluetoothAddress])
        /// Boards found by scanning; `allowList` (when not nil) limits which are adopted,
        /// `namePrefix` also identifies boards that do not advertise the MetaWear service.
        case discovery(allowList: Set<BluetoothAddress>?, namePrefix: String?)
    }

    /// When sessions start.
    public enum SessionMode: String, Sendable, Equatable {
        /// Sessions start and stop on command (control API or a board's button).
        case manual
        /// A session starts as soon as a board streams; a button press ends it and the
        /// next samples start a new one.
        case always
    }

    /// Boards to run.
    public var boards: BoardSelection
    /// What every board streams (gyro is required: points are gyro samples).
    public var streaming: StreamingConfiguration
    /// Where fixes come from (nil: no receiver; points get `location_missing = no_fix`).
    public var gnss: GNSSSourceSpec?
    /// Manual or always-on sessions.
    public var sessionMode: SessionMode
    /// Hazard names the survey offers; a survey naming others is refused (empty: any name).
    public var hazardCatalogue: [String]
    /// Directory holding the buffer database and the device identity (systemd's
    /// `STATE_DIRECTORY`).
    public var stateDirectory: String
    /// D-Bus address of the bus BlueZ is on; nil is the system bus (honouring
    /// `DBUS_SYSTEM_BUS_ADDRESS`).
    public var busAddress: String?
    /// Disk budget and retention of the buffer.
    public var budget: BufferBudget
    /// In `always` mode, how long no board may stream before the session ends (a short
    /// reconnect must not split a walk).
    public var alwaysModeIdleStop: Duration
    /// How often the system clock's synchronisation is re-read.
    public var clockCheckInterval: Duration
    /// Battery read interval of the boards (nil: only at connect).
    public var batteryInterval: Duration?
    /// Whether a press of a board's button starts or stops a session.
    public var buttonTogglesSession: Bool = true
    /// Whether the boards stream while no session records (live data without recording, at
    /// the cost of the boards' batteries). Off, a connected board's sensors are stopped
    /// between sessions; `always` mode streams regardless.
    public var streamBetweenSessions: Bool = false
    /// Longest a session records, seconds (`[session] max_duration`; nil: until stopped). A
    /// session ends by itself after it; at a logged rate a session is refused when a board's
    /// flash cannot hold it.
    public var maxSessionDuration: Double?
    /// Whether dead-reckoned fixes give points a location (marked `dead_reckoned`); measured
    /// fixes always do, manual input and simulator fixes never.
    public var acceptDeadReckoning: Bool = false
    /// Whether each board also logs its streamed sensors to its flash while streaming, so
    /// the gaps of the link can be filled from the board (`[boards] backfill`, on by default
    /// in the configuration the daemon reads). Off here: a gateway built without a
    /// configuration (the tests, an embedder) asks for it.
    public var backfill: Bool = false
    /// How each board's notifications come through bluetoothd (`[boards] notifications`).
    public var notificationDelivery: NotificationDelivery = .automatic

    /// Settings with defaults for everything but the boards, the stream and the state directory.
    public init(boards: BoardSelection, streaming: StreamingConfiguration, gnss: GNSSSourceSpec? = nil,
                sessionMode: SessionMode = .manual, hazardCatalogue: [String] = GatewaySettings.defaultHazards,
                stateDirectory: String, busAddress: String? = nil, budget: BufferBudget = BufferBudget(),
                alwaysModeIdleStop: Duration = .seconds(30), clockCheckInterval: Duration = .seconds(10),
                batteryInterval: Duration? = .seconds(600)) {
        self.boards = boards
        self.streaming = streaming
        self.gnss = gnss
        self.sessionMode = sessionMode
        self.hazardCatalogue = hazardCatalogue
        self.stateDirectory = stateDirectory
        self.busAddress = busAddress
        self.budget = budget
        self.alwaysModeIdleStop = alwaysModeIdleStop
        self.clockCheckInterval = clockCheckInterval
        self.batteryInterval = batteryInterval
    }

    /// The hazards offered when the configuration names none.
    public static let defaultHazards = ["pothole", "crack", "uneven_surface", "obstacle", "slippery", "steep_slope", "kerb"]

    /// Checks what cannot be checked by types; the error names the problem.
    public func validate() throws(GatewaySettingsError) {
        guard let gyro = streaming.gyro else {
            throw GatewaySettingsError("the gyro must be streamed: recorded points are gyro samples")
        }
        _ = gyro
        if case .addresses(let list) = boards, list.isEmpty {
            throw GatewaySettingsError("no boards: give board addresses or enable discovery")
        }
        guard !stateDirectory.isEmpty else { throw GatewaySettingsError("the state directory is empty") }
        for name in hazardCatalogue where name.isEmpty || name.contains(where: { $0.isWhitespace }) {
            throw GatewaySettingsError("bad hazard name '\(name)' (non-empty, no spaces)")
        }
        if Set(hazardCatalogue).count != hazardCatalogue.count {
            throw GatewaySettingsError("the hazard catalogue names a hazard twice")
        }
        guard alwaysModeIdleStop >= .zero else { throw GatewaySettingsError("alwaysModeIdleStop is negative") }
    }

    /// Gyro rate of every board, hertz.
    public var gyroRateHertz: Double { streaming.gyro?.rate.hertz ?? 0 }
    /// Accelerometer rate of every board, hertz (nil when not streamed).
    public var accelerometerRateHertz: Double? { streaming.accelerometer?.rate.hertz }
}

/// The buffer's disk limits.
public struct BufferBudget: Sendable, Equatable {
    /// Largest database size, bytes.
    public var maxBytes: Int64
    /// Free space always left on the file system, bytes.
    public var minFreeBytes: Int64
    /// Days synced data is kept.
    public var retentionDays: Double

    /// 1 GiB, 256 MiB free, 30 days.
    public init(maxBytes: Int64 = 1 << 30, minFreeBytes: Int64 = 256 << 20, retentionDays: Double = 30) {
        self.maxBytes = maxBytes
        self.minFreeBytes = minFreeBytes
        self.retentionDays = retentionDays
    }
}

/// Settings that cannot work; the message says why.
public struct GatewaySettingsError: Error, Equatable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
