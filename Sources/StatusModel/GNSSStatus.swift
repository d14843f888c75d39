/// The receiver's state.
public struct GNSSStatus: Codable, Sendable, Equatable {
    /// The source spec (`serial:/dev/ttyACM0`), nil when none is configured.
    public var source: String?
    /// True while the source runs (false after it ended or failed).
    public var isRunning: Bool
    /// Mode of the last fix: `no_fix`, `2d`, `3d`, or nil before the first.
    public var mode: String?
    /// Whether the last fix had a position.
    public var hasPosition: Bool
    /// Last position.
    public var latitude: Double?
    public var longitude: Double?
    /// Satellites in the last fix.
    public var satellitesUsed: Int?
    /// Wall-clock arrival of the last fix.
    public var lastFixAt: Double?
    /// Seconds from the last fix to the snapshot's ``GatewayStatus/generatedAt``.
    public var fixAgeSeconds: Double?
    /// Fixes received since start.
    public var fixesReceived: Int

    enum CodingKeys: String, CodingKey {
        case source, mode, hasPosition, latitude, longitude, satellitesUsed, lastFixAt, fixAgeSeconds, fixesReceived
        case isRunning = "running"
    }

    /// The receiver `source` before its first fix.
    public init(source: String?, isRunning: Bool = false, mode: String? = nil, hasPosition: Bool = false, latitude: Double? = nil,
                longitude: Double? = nil, satellitesUsed: Int? = nil, lastFixAt: Double? = nil, fixAgeSeconds: Double? = nil,
                fixesReceived: Int = 0) {
        self.source = source
        self.isRunning = isRunning
        self.mode = mode
        self.hasPosition = hasPosition
        self.latitude = latitude
        self.longitude = longitude
        self.satellitesUsed = satellitesUsed
        self.lastFixAt = lastFixAt
        self.fixAgeSeconds = fixAgeSeconds
        self.fixesReceived = fixesReceived
    }

    /// Seconds since the last fix at `now` (epoch seconds; nil before the first fix).
    public func age(at now: Double) -> Double? { lastFixAt.map { now - $0 } }

    /// The API's words for the fix modes.
    public enum Mode {
        public static let noFix = "no_fix"
        public static let twoD = "2d"
        public static let threeD = "3d"
    }
}
