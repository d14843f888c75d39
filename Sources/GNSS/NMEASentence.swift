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
        @CompactTime public var time: NMEATimeOfDay?
        /// Field 2: `A` valid, `V` warning/void.
        public var isValid: Bool
        @CompactDouble public var latitude: Double?
        @CompactDouble public var longitude: Double?
        @CompactDouble public var speedKnots: Double?
        /// Course over ground, degrees true; often empty while stationary.
        @CompactDouble public var courseTrue: Double?
        /// The date with the year exactly as sent (two digits, 0...99).
        @CompactDate public var date: NMEADate?
        /// Magnetic variation, degrees; east positive.
        @CompactDouble public var magneticVariation: Double?
        /// NMEA 2.3+ FAA mode.
        public var mode: FAAMode?
        /// NMEA 4.1+ navigational status (`S`, `C`, `U`, `V`). Never used for validity:
        /// u-blox sends `V` on good fixes.
        public var navigationalStatus: UInt8?
    }

    /// Fix data: time, position, quality, satellites, HDOP, altitude.
    public struct GGA: Sendable {
        public var talker: NMEATalker
        @CompactTime public var time: NMEATimeOfDay?
        @CompactDouble public var latitude: Double?
        @CompactDouble public var longitude: Double?
        /// 0 invalid, 1 GPS, 2 DGPS, 3 PPS, 4 RTK fixed, 5 RTK float, 6 dead reckoning,
        /// 7 manual, 8 simulation.
        @CompactInt public var quality: Int?
        @CompactInt public var satellitesUsed: Int?
        @CompactDouble public var hdop: Double?
        /// Antenna altitude above mean sea level, metres.
        @CompactDouble public var altitudeMSL: Double?
        /// Geoid separation (HAE = MSL + separation), metres.
        @CompactDouble public var geoidSeparation: Double?
        @CompactDouble public var dgpsAge: Double?
    }

    /// DOPs and active satellites. Multi-GNSS receivers send one per constellation.
    public struct GSA: Sendable {
        public var talker: NMEATalker
        /// `A` automatic or `M` manual 2D/3D selection.
        public var selection: UInt8?
        /// 1 no fix, 2 2D, 3 3D.
        @CompactInt public var fixMode: Int?
        /// Number of non-empty PRN fields (satellites used by this constellation).
        public var satellitesUsed: Int
        @CompactDouble public var pdop: Double?
        @CompactDouble public var hdop: Double?
        @CompactDouble public var vdop: Double?
        /// NMEA 4.11 system ID.
        public var system: GNSSSystem?
    }

    /// Satellites in view; one part of a multi-part group.
    public struct GSV: Sendable {
        /// One satellite; small integer types keep the sentence value compact, which
        /// matters because GSV is 40 % of a typical stream.
        public struct Satellite: Sendable {
            public var prn: Int16
            /// Degrees above the horizon.
            public var elevation: Int16?
            /// Degrees true.
            public var azimuth: Int16?
            /// Carrier-to-noise ratio, dB-Hz.
            public var snr: Int16?
        }
        public var talker: NMEATalker
        @CompactInt public var totalMessages: Int?
        @CompactInt public var messageNumber: Int?
        @CompactInt public var satellitesInView: Int?
        /// Up to four satellites per part.
        public var satellites: (Satellite?, Satellite?, Satellite?, Satellite?)
        /// NMEA 4.11 signal ID.
        @CompactInt public var signalID: Int?
    }

    /// Course and speed over ground.
    public struct VTG: Sendable {
        public var talker: NMEATalker
        @CompactDouble public var courseTrue: Double?
        @CompactDouble public var courseMagnetic: Double?
        @CompactDouble public var speedKnots: Double?
        @CompactDouble public var speedKmh: Double?
        public var mode: FAAMode?
    }

    /// Geographic position with time and status.
    public struct GLL: Sendable {
        public var talker: NMEATalker
        @CompactDouble public var latitude: Double?
        @CompactDouble public var longitude: Double?
        @CompactTime public var time: NMEATimeOfDay?
        public var isValid: Bool
        public var mode: FAAMode?
    }

    /// Multi-constellation fix data with one mode character per system.
    public struct GNS: Sendable {
        public var talker: NMEATalker
        @CompactTime public var time: NMEATimeOfDay?
        @CompactDouble public var latitude: Double?
        @CompactDouble public var longitude: Double?
        /// True when any per-system mode character is a usable FAA mode.
        public var anySystemValid: Bool
        /// The most precise per-system mode (RTK over differential over autonomous over dead
        /// reckoning), which says what kind of fix the combined position is.
        public var bestMode: FAAMode?
        /// Number of mode characters (constellations reported).
        public var systemCount: Int
        @CompactInt public var satellitesUsed: Int?
        @CompactDouble public var hdop: Double?
        @CompactDouble public var altitudeMSL: Double?
        @CompactDouble public var geoidSeparation: Double?
        public var navigationalStatus: UInt8?
    }

    /// Time and date with a 4-digit year.
    public struct ZDA: Sendable {
        public var talker: NMEATalker
        @CompactTime public var time: NMEATimeOfDay?
        @CompactDate public var date: NMEADate?
        @CompactInt public var zoneHours: Int?
        @CompactInt public var zoneMinutes: Int?
    }

    /// Pseudorange error statistics (1-sigma, metres).
    public struct GST: Sendable {
        public var talker: NMEATalker
        @CompactTime public var time: NMEATimeOfDay?
        @CompactDouble public var rangeRMS: Double?
        @CompactDouble public var semiMajor: Double?
        @CompactDouble public var semiMinor: Double?
        @CompactDouble public var orientation: Double?
        @CompactDouble public var latitudeSigma: Double?
        @CompactDouble public var longitudeSigma: Double?
        @CompactDouble public var altitudeSigma: Double?
    }

    /// Free text from the receiver (banners, `ANTENNA OK`).
    ///
    /// The text is stored inline (up to 64 bytes, the most a standard sentence can carry)
    /// rather than as a `String`, so that ``NMEASentence`` stays a plain value that copies
    /// without reference counting on the hot path.
    public struct TXT: Sendable {
        public var talker: NMEATalker
        @CompactInt public var totalMessages: Int?
        @CompactInt public var messageNumber: Int?
        @CompactInt public var identifier: Int?
        var textStorage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
        var textLength: UInt8

        init(talker: NMEATalker, totalMessages: Int?, messageNumber: Int?, identifier: Int?, text: NMEAField) {
            self.talker = talker
            self.totalMessages = totalMessages
            self.messageNumber = messageNumber
            self.identifier = identifier
            textStorage = (0, 0, 0, 0, 0, 0, 0, 0)
            let length = min(text.count, 64)
            textLength = UInt8(length)
            withUnsafeMutableBytes(of: &textStorage) { storage in
                for offset in 0..<length { storage[offset] = text[offset] }
            }
        }

        /// The message text (truncated to 64 bytes).
        public var text: String {
            withUnsafeBytes(of: textStorage) { storage in
                String(decoding: storage.prefix(Int(textLength)), as: UTF8.self)
            }
        }
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
