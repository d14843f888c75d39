/// A parsed NMEA 0183 sentence. Dispatch is on the 3-letter type; the talker is kept as
/// metadata because real cycles mix talkers (`$GPGGA` next to `$GNRMC`).
public enum NMEASentence: Sendable {
    case rmc(RMC)
    case gga(GGA)
    case gsa(GSA)
    case gsv(GSV)
    case vtg(VTG)
    case gll(GLL)
    case gns(GNS)
    case zda(ZDA)
    case gst(GST)
    case txt(TXT)
    /// `$P...` vendor sentences; skipped.
    case proprietary
    /// A well-formed sentence of a type we do not decode (for example GBS, DTM).
    case unsupported

    /// Recommended minimum data: time, date, position, speed, course and validity.
    public struct RMC: Sendable {
        public var talker: NMEATalker
        public var time: NMEATimeOfDay?
        /// Field 2: `A` valid, `V` warning/void.
        public var isValid: Bool
        public var latitude: Double?
        public var longitude: Double?
        public var speedKnots: Double?
        /// Course over ground, degrees true; often empty while stationary.
        public var courseTrue: Double?
        /// The date with the year exactly as sent (two digits, 0...99).
        public var date: NMEADate?
        /// Magnetic variation, degrees; east positive.
        public var magneticVariation: Double?
        /// NMEA 2.3+ FAA mode.
        public var mode: FAAMode?
        /// NMEA 4.1+ navigational status (`S`, `C`, `U`, `V`). Never used for validity:
        /// u-blox sends `V` on good fixes.
        public var navigationalStatus: UInt8?
    }

    /// Fix data: time, position, quality, satellites, HDOP, altitude.
    public struct GGA: Sendable {
        public var talker: NMEATalker
        public var time: NMEATimeOfDay?
        public var latitude: Double?
        public var longitude: Double?
        /// 0 invalid, 1 GPS, 2 DGPS, 3 PPS, 4 RTK fixed, 5 RTK float, 6 dead reckoning,
        /// 7 manual, 8 simulation.
        public var quality: Int?
        public var satellitesUsed: Int?
        public var hdop: Double?
        /// Antenna altitude above mean sea level, metres.
        public var altitudeMSL: Double?
        /// Geoid separation (HAE = MSL + separation), metres.
        public var geoidSeparation: Double?
        public var dgpsAge: Double?
    }

    /// DOPs and active satellites. Multi-GNSS receivers send one per constellation.
    public struct GSA: Sendable {
        public var talker: NMEATalker
        /// `A` automatic or `M` manual 2D/3D selection.
        public var selection: UInt8?
        /// 1 no fix, 2 2D, 3 3D.
        public var fixMode: Int?
        /// Number of non-empty PRN fields (satellites used by this constellation).
        public var satellitesUsed: Int
        public var pdop: Double?
        public var hdop: Double?
        public var vdop: Double?
        /// NMEA 4.11 system ID.
        public var system: GNSSSystem?
    }

    /// Satellites in view; one part of a multi-part group.
    public struct GSV: Sendable {
        public struct Satellite: Sendable {
            public var prn: Int
            public var elevation: Int?
            public var azimuth: Int?
            public var snr: Int?
        }
        public var talker: NMEATalker
        public var totalMessages: Int?
        public var messageNumber: Int?
        public var satellitesInView: Int?
        /// Up to four satellites per part.
        public var satellites: (Satellite?, Satellite?, Satellite?, Satellite?)
        /// NMEA 4.11 signal ID.
        public var signalID: Int?
    }

    /// Course and speed over ground.
    public struct VTG: Sendable {
        public var talker: NMEATalker
        public var courseTrue: Double?
        public var courseMagnetic: Double?
        public var speedKnots: Double?
        public var speedKmh: Double?
        public var mode: FAAMode?
    }

    /// Geographic position with time and status.
    public struct GLL: Sendable {
        public var talker: NMEATalker
        public var latitude: Double?
        public var longitude: Double?
        public var time: NMEATimeOfDay?
        public var isValid: Bool
        public var mode: FAAMode?
    }

    /// Multi-constellation fix data with one mode character per system.
    public struct GNS: Sendable {
        public var talker: NMEATalker
        public var time: NMEATimeOfDay?
        public var latitude: Double?
        public var longitude: Double?
        /// True when any per-system mode character is a usable FAA mode.
        public var anySystemValid: Bool
        /// Number of mode characters (constellations reported).
        public var systemCount: Int
        public var satellitesUsed: Int?
        public var hdop: Double?
        public var altitudeMSL: Double?
        public var geoidSeparation: Double?
        public var navigationalStatus: UInt8?
    }

    /// Time and date with a 4-digit year.
    public struct ZDA: Sendable {
        public var talker: NMEATalker
        public var time: NMEATimeOfDay?
        public var date: NMEADate?
        public var zoneHours: Int?
        public var zoneMinutes: Int?
    }

    /// Pseudorange error statistics (1-sigma, metres).
    public struct GST: Sendable {
        public var talker: NMEATalker
        public var time: NMEATimeOfDay?
        public var rangeRMS: Double?
        public var semiMajor: Double?
        public var semiMinor: Double?
        public var orientation: Double?
        public var latitudeSigma: Double?
        public var longitudeSigma: Double?
        public var altitudeSigma: Double?
    }

    /// Free text from the receiver (banners, `ANTENNA OK`).
    public struct TXT: Sendable {
        public var talker: NMEATalker
        public var totalMessages: Int?
        public var messageNumber: Int?
        public var identifier: Int?
        public var text: String
    }

    /// The UTC time of day the sentence carries, if its type has one and it was filled.
    public var time: NMEATimeOfDay? {
        switch self {
        case .rmc(let s): s.time
        case .gga(let s): s.time
        case .gll(let s): s.time
        case .gns(let s): s.time
        case .zda(let s): s.time
        case .gst(let s): s.time
        default: nil
        }
    }
}
