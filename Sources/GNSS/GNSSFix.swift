import Foundation

/// One position fix: everything a receiver said about one reporting cycle, merged.
///
/// Values the receiver did not send are nil, never zero. Units follow gpsd's TPV report:
/// degrees, metres, metres per second.
public struct GNSSFix: Sendable, Equatable {
    /// Fix dimension, numbered as gpsd's TPV `mode`.
    public enum Mode: Int, Sendable, Comparable {
        case noFix = 1
        case twoD = 2
        case threeD = 3

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// UTC time of the cycle, or nil while the date is still unknown (time-of-day only
    /// sentences before the first RMC or ZDA).
    public var time: Date?
    /// UTC time of day of the cycle, always known: the key the cycle was grouped by.
    public var timeOfDay: NMEATimeOfDay
    public var mode: Mode
    /// Degrees, north positive.
    public var latitude: Double?
    /// Degrees, east positive.
    public var longitude: Double?
    /// Metres above mean sea level (GGA/GNS).
    public var altitudeMSL: Double?
    /// Geoid separation; height above ellipsoid = altitudeMSL + geoidSeparation.
    public var geoidSeparation: Double?
    /// Speed over ground, metres per second.
    public var speed: Double?
    /// Course over ground, degrees true.
    public var track: Double?
    /// Magnetic variation, degrees, east positive.
    public var magneticVariation: Double?
    public var hdop: Double?
    public var vdop: Double?
    public var pdop: Double?
    /// Horizontal error estimate in metres: the root sum square of GST's latitude and
    /// longitude 1-sigma errors. Nil when the receiver sends no GST.
    public var horizontalError: Double?
    /// Vertical 1-sigma error from GST, metres.
    public var verticalError: Double?
    public var satellitesUsed: Int?
    /// GGA fix quality (0 invalid, 1 GPS, 2 DGPS, 4 RTK fixed, 5 RTK float, 6 DR, ...).
    public var quality: Int?
    /// `time` minus the system clock when the first sentence of the cycle arrived, in
    /// seconds. Positive when the system clock is behind GNSS time. Receivers emit a cycle
    /// tens to hundreds of milliseconds after its epoch, so expect a small negative value
    /// on a synchronised clock. Nil when `time` is nil.
    public var systemClockOffset: Double?
    /// System clock when the first sentence of the cycle arrived.
    public var arrival: Date

    public init(
        time: Date?, timeOfDay: NMEATimeOfDay, mode: Mode, latitude: Double? = nil,
        longitude: Double? = nil, altitudeMSL: Double? = nil, geoidSeparation: Double? = nil,
        speed: Double? = nil, track: Double? = nil, magneticVariation: Double? = nil,
        hdop: Double? = nil, vdop: Double? = nil, pdop: Double? = nil,
        horizontalError: Double? = nil, verticalError: Double? = nil,
        satellitesUsed: Int? = nil, quality: Int? = nil, systemClockOffset: Double? = nil,
        arrival: Date
    ) {
        self.time = time
        self.timeOfDay = timeOfDay
        self.mode = mode
        self.latitude = latitude
        self.longitude = longitude
        self.altitudeMSL = altitudeMSL
        self.geoidSeparation = geoidSeparation
        self.speed = speed
        self.track = track
        self.magneticVariation = magneticVariation
        self.hdop = hdop
        self.vdop = vdop
        self.pdop = pdop
        self.horizontalError = horizontalError
        self.verticalError = verticalError
        self.satellitesUsed = satellitesUsed
        self.quality = quality
        self.systemClockOffset = systemClockOffset
        self.arrival = arrival
    }

    /// True for a 2D or 3D fix with a position.
    public var hasPosition: Bool { mode >= .twoD && latitude != nil && longitude != nil }
}
