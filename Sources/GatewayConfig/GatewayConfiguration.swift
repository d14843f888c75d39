import Basics
import GNSS
import MetaWear

/// mwgated's whole configuration (`mwgated.toml` plus the service directories systemd gives).
/// Every field has a default, so a gateway with no file at all discovers boards, reads GNSS
/// from /dev/gps0 when present, and writes documents to a directory in its state directory.
public struct GatewayConfiguration: Sendable, Equatable {
    /// Which boards and how they stream.
    public var boards: Boards
    /// Where fixes come from.
    public var gnss: GNSS
    /// When sessions record.
    public var session: Session
    /// What a walker can report.
    public var hazards: Hazards
    /// Disk limits of the local buffer.
    public var buffer: BufferLimits
    /// Where documents go upstream.
    public var sink: Sink
    /// Directories from the service manager.
    public var paths: ServicePaths
    /// What the daemon logs.
    public var log = Log()

    /// Logging settings (reloaded on SIGHUP).
    public struct Log: Sendable, Equatable {
        /// The least severe level written (swift-log's names).
        public enum Level: String, Sendable, Equatable, CaseIterable {
            case trace, debug, info, notice, warning, error, critical
        }

        /// Default `info`.
        public var level = Level.info

        public init() {}
    }

    /// Boards to connect and their sensor settings.
    public struct Boards: Sendable, Equatable {
        /// How boards are found.
        public enum Selection: Sendable, Equatable {
            /// Exactly these addresses (uppercase `AA:BB:CC:DD:EE:FF`); no discovery.
            case fixed([String])
            /// Any MetaWear board found by scanning; if `allow` is non-empty, only those.
            case discover(allow: [String])
        }

        /// How boards are found; default: discover any.
        public var selection: Selection = .discover(allow: [])
        /// Gyro output rate and range; default 100 Hz, ±2000 °/s.
        public var gyro = GyroConfiguration(rate: .hz100, range: .dps2000)
        /// Accelerometer settings, or nil when it is off (the default).
        public var accelerometer: AccelerometerConfiguration?
        /// Single (one sample per notification, default) or packed (three).
        public var sampleMode = SampleMode.single
        /// Whether each board also logs the streamed sensors to its flash while streaming,
        /// so what the link misses can be filled from the board. On by default (issue 21:
        /// the soak with faults loses nothing with it, docs/soak.md).
        public var backfill = true
        /// How each board's notifications come through bluetoothd (`[boards] notifications`).
        public var notifications = Notifications.acquire

        /// The sensors each board records to its flash and the gateway downloads instead of
        /// streaming: with `backfill` on, a gyro or accelerometer rate of 400 Hz or more is
        /// beyond what one link carries sample by sample, and then every configured sensor is
        /// logged (the points are the gyro's, each with the accelerometer sample taken with
        /// it, as in a backfill). Empty otherwise.
        public var logged: Set<MotionSensor> {
            guard backfill else { return [] }
            let rates = [gyro.rate.hertz] + (accelerometer.map { [$0.rate.hertz] } ?? [])
            guard rates.contains(where: StreamingConfiguration.isBeyondTheLink(hertz:)) else { return [] }
            return accelerometer == nil ? [.gyro] : [.gyro, .accelerometer]
        }

        /// The ways a board's notifications can come through bluetoothd.
        public enum Notifications: String, Sendable, Equatable, CaseIterable {
            /// `AcquireNotify` (a socket per link), falling back to `StartNotify` where
            /// bluetoothd refuses it. The default.
            case acquire
            /// `StartNotify` on every link (a D-Bus signal per notification).
            case startNotify = "start-notify"
            /// One `StartNotify` session per board, held through link drops: bluetoothd turns
            /// the board's notifications on again itself when the link comes back, before it
            /// has re-checked the board's services (docs/operations.md).
            case keptSession = "kept-session"
        }

        public init() {}

        /// The streaming request to hand to each board session (MetaWear's type). A
        /// configuration from `ConfigurationLoader` has already passed this check, so it only
        /// throws for values set in code beyond the link budget.
        public func streaming() throws(ConfigurationError) -> StreamingConfiguration {
            try StreamingConfiguration(
                gyro: gyro, gyroMode: sampleMode, accelerometer: accelerometer, accelerometerMode: sampleMode, logged: logged)
        }
    }

    /// The GNSS input.
    public struct GNSS: Sendable, Equatable {
        /// The source, or nil for none (no receiver: samples are recorded without positions).
        public var source: GNSSSourceSpec?
        /// Record dead-reckoned positions too (marked as such); by default only measured
        /// fixes (GPS, DGPS, RTK, PPS) give points a location.
        public var acceptDeadReckoning: Bool

        public init(source: GNSSSourceSpec? = nil, acceptDeadReckoning: Bool = false) {
            self.source = source
            self.acceptDeadReckoning = acceptDeadReckoning
        }

        /// The default receiver device (the udev rule's stable symlink).
        public static let defaultDevice = "/dev/gps0"
    }

    /// Session control.
    public struct Session: Sendable, Equatable {
        /// When the gateway records.
        public enum Mode: String, Sendable, Equatable, CaseIterable {
            /// Only between start and stop (D-Bus `mwctl session start`, or the board button).
            case manual
            /// Always, from start-up; a new session begins after each stop.
            case always
        }

        /// Default `manual`.
        public var mode: Mode = .manual
        /// Whether a press of a board's button starts/stops a session. Default true.
        public var buttonToggles = true
        /// Whether the boards stream while no session records (live data in `mwctl status`
        /// without recording). Default false: sensors off between sessions, saving the boards'
        /// batteries.
        public var streamBetweenSessions = false
        /// Longest a session records, seconds (`[session] max_duration`): a session ends by
        /// itself after it, and a session at a logged rate is refused on a board whose flash
        /// cannot hold it. nil (the default): until stopped.
        public var maxDuration: Double?

        public init() {}
    }

    /// The hazard catalogue walkers tag points with.
    public struct Hazards: Sendable, Equatable {
        /// Hazard names (lowercase identifiers), in display order.
        public var names: [String] = ["pothole", "kerb", "obstacle", "uneven_surface", "steep_slope"]
        /// Intensities run from 1 to this value. Default 5.
        public var intensityScale = 5

        public init() {}

        /// Allowed values of `intensityScale`.
        public static let intensityScaleRange = 2...10
    }

    /// Limits of the SQLite buffer.
    public struct BufferLimits: Sendable, Equatable {
        /// Byte cap and free-space floor (the value the buffer enforces, from Basics).
        public var budget = DiskBudget()
        /// Days synced data is kept. Default 30.
        public var retentionDays: Double = 30

        public init() {}
    }

    /// The upstream sink.
    public struct Sink: Sendable, Equatable {
        /// Sink kinds and their settings.
        public enum Kind: Sendable, Equatable {
            /// JSON documents in a directory (no network).
            case directory(path: String)
            /// Google Cloud Firestore.
            case firestore(Firestore)
            /// PostgreSQL.
            case postgres(Postgres)

            /// The `type` string.
            public var name: String {
                switch self {
                case .directory: "directory"
                case .firestore: "firestore"
                case .postgres: "postgres"
                }
            }
        }

        /// Firestore settings.
        public struct Firestore: Sendable, Equatable {
            /// The Google Cloud project.
            public var projectID: String
            /// The database id; default "(default)".
            public var database = "(default)"
            /// `host:port` of a Firestore emulator, or nil for the real service.
            public var emulatorHost: String?
            /// systemd credential holding the service-account JSON key; default
            /// "firestore-key.json". Not needed with an emulator.
            public var credential = "firestore-key.json"

            public init(projectID: String) { self.projectID = projectID }
        }

        /// PostgreSQL settings.
        public struct Postgres: Sendable, Equatable {
            /// libpq-style TLS modes.
            public enum SSLMode: String, Sendable, Equatable, CaseIterable {
                case disable, prefer, require
                case verifyCA = "verify-ca"
                case verifyFull = "verify-full"
            }

            public var host: String
            public var port = 5432
            public var user: String
            public var database: String
            /// Default verify-full.
            public var sslMode = SSLMode.verifyFull
            /// systemd credential holding the password; default "postgres-password".
            public var passwordCredential = "postgres-password"

            public init(host: String, user: String, database: String) {
                self.host = host
                self.user = user
                self.database = database
            }
        }

        /// The sink; default a directory in the state directory.
        public var kind: Kind
        /// Most upload requests per second (token bucket). Default 5.
        public var maxRequestsPerSecond: Double = 5
        /// Most documents per upload request. Default 20.
        public var maxDocumentsPerRequest = 20

        public init(kind: Kind) { self.kind = kind }

        /// Allowed ranges.
        public static let requestsPerSecondRange = 0.01...100.0
        public static let documentsPerRequestRange = 1...500
    }

    /// The defaults for these directories; GNSS from /dev/gps0 when `fileExists` says it is
    /// there (the real check by default).
    public static func defaults(
        paths: ServicePaths = ServicePaths(),
        fileExists: (String) -> Bool = ServicePaths.fileExists
    ) -> GatewayConfiguration {
        GatewayConfiguration(
            boards: Boards(),
            gnss: GNSS(source: fileExists(GNSS.defaultDevice) ? .serial(path: GNSS.defaultDevice, baud: nil) : nil),
            session: Session(),
            hazards: Hazards(),
            buffer: BufferLimits(),
            sink: Sink(kind: .directory(path: paths.stateDirectory + "/outbox")),
            paths: paths)
    }
}
