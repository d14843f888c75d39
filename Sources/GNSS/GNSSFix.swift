#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One position fix: everything a receiver said about one reporting cycle, merged.
///
/// Values the receiver did not send are nil, never zero. Units follow gpsd's TPV report:
/// degrees, metres, metres per second.
public struct GNSSFix: Sendable, Equatable, Codable {
    /// Fix dimension, numbered as gpsd's TPV `mode`.
    public enum Mode: Int, Sendable, Comparable, Codable {
        case noFix = 1
        case twoD = 2
        case threeD = 3

        public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// What kind of fix this is, numbered as gpsd's TPV `status`: only GPS, DGPS, RTK and
    /// PPS fixes are measurements; dead reckoning is an estimate, manual input and a
    /// simulator are not positions of this receiver at all.
    public enum Status: Int, Sendable, Codable, CaseIterable {
        /// No fix, or nothing said about it.
        case unknown = 0
        case gps = 1
        case dgps = 2
        case rtkFixed = 3
        case rtkFloat = 4
        case deadReckoning = 5
        /// GNSS with dead reckoning (gpsd's `STATUS_GNSSDR`).
        case gnssDeadReckoning = 6
        /// Manual input, or a surveyed position held for timing (gpsd's `STATUS_TIME`).
        case manual = 7
        case simulated = 8
        /// GGA quality 3, PPS.
        case pps = 9

        /// A position measured from satellites.
        public var isMeasurement: Bool {
            switch self {
            case .gps, .dgps, .rtkFixed, .rtkFloat, .pps: true
            default: false
            }
        }

        /// A position estimated by dead reckoning.
        public var isDeadReckoning: Bool { self == .deadReckoning || self == .gnssDeadReckoning }

        /// gpsd's mapping of a GGA quality (0 invalid, 1 GPS, 2 DGPS, 3 PPS, 4 RTK fixed,
        /// 5 RTK float, 6 dead reckoning, 7 manual, 8 simulator); nil for other numbers.
        public init?(ggaQuality: Int) {
            switch ggaQuality {
            case 0: self = .unknown
            case 1: self = .gps
            case 2: self = .dgps
            case 3: self = .pps
            case 4: self = .rtkFixed
            case 5: self = .rtkFloat
            case 6: self = .deadReckoning
            case 7: self = .manual
            case 8: self = .simulated
            default: return nil
            }
        }

        /// gpsd's mapping of an NMEA 2.3 mode indicator (A autonomous, D differential,
        /// P precise, E dead reckoning, F RTK float, R RTK fixed, M manual, S simulator,
        /// N not valid).
        public init(faaMode: FAAMode) {
            switch faaMode {
            case .autonomous: self = .gps
            case .differential, .precise: self = .dgps
            case .estimated: self = .deadReckoning
            case .rtkFloat: self = .rtkFloat
            case .rtkFixed: self = .rtkFixed
            case .manual: self = .manual
            case .simulated: self = .simulated
            case .notValid: self = .unknown
            }
        }
    }

    /// UTC time of the cycle, or nil while the date is still unknown (time-of-day only
    /// sentences before the first RMC or ZDA).
    public var time: Date?
    /// UTC time of day of the cycle, always known: the key the cycle was grouped by.
    public var timeOfDay: NMEATimeOfDay
    public var mode: Mode
    /// The kind of fix (``Status``): `.unknown` without a position.
    public var status: Status
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
    /// Horizontal error estimate in metres (gpsd's `eph`): from GST when the receiver
    /// sends it (root sum square of the latitude and longitude 1-sigma errors), otherwise
    /// estimated as gpsd does, HDOP × 19 m (× 2 m with DGPS). Nil without either.
    public var horizontalError: Double?
    /// Vertical error estimate in metres (gpsd's `epv`): GST altitude sigma, otherwise
    /// VDOP × 23 m (× 2.5 m with DGPS) on 3D fixes.
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
        arrival: Date, status: Status? = nil
    ) {
        self.time = time
        self.timeOfDay = timeOfDay
        self.mode = mode
        // A 2D or 3D fix nobody said more about is a plain GPS fix, as gpsd counts it.
        self.status = status ?? (mode >= .twoD ? .gps : .unknown)
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

    /// True for a 2D or 3D fix with a position (of any kind: see ``isMeasurement``).
    public var hasPosition: Bool { mode >= .twoD && latitude != nil && longitude != nil }

    /// True for a position measured from satellites (GPS, DGPS, RTK, PPS).
    public var isMeasurement: Bool { hasPosition && status.isMeasurement }

    /// True for a dead-reckoned position.
    public var isDeadReckoning: Bool { hasPosition && status.isDeadReckoning }
}
