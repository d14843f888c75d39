import Basics

/// UTC time of day as sent in NMEA time fields, in microseconds since midnight.
public struct NMEATimeOfDay: Sendable, Hashable, Comparable, Codable {
    /// Microseconds since 00:00:00 UTC; up to 86,400,999,999 because of leap second 60.
    public var microseconds: Int64

    @inlinable public init(microseconds: Int64) { self.microseconds = microseconds }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.microseconds < rhs.microseconds }

    /// True when both times may name the same reporting cycle: within 10 ms, as receivers
    /// round fractions differently across sentences (`.99` in one, `.00` in the next). Only a
    /// hint: fixes 10 ms apart exist too, so ``FixAssembler`` also looks at which sentences
    /// the cycle already has.
    public func sameCycle(as other: Self) -> Bool {
        abs(microseconds - other.microseconds) <= 10_000
    }
}

/// A calendar date as sent by RMC (`ddmmyy`) or ZDA (day, month, 4-digit year).
public struct NMEADate: Sendable, Hashable {
    public var year: Int
    public var month: Int
    public var day: Int

    public init(year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// Days since 1970-01-01 (proleptic Gregorian).
    public var daysSinceEpoch: Int { CivilDate(year: year, month: month, day: day).daysSinceEpoch }

    /// The date `days` after 1970-01-01.
    public init(daysSinceEpoch days: Int) {
        let civil = CivilDate(daysSinceEpoch: days)
        self.init(year: civil.year, month: civil.month, day: civil.day)
    }

    /// True for a real calendar day.
    public var isValid: Bool {
        guard (1...12).contains(month), day >= 1 else { return false }
        let lengths = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31]
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
        return day <= lengths[month - 1] + (month == 2 && leap ? 1 : 0)
    }
}

/// The FAA mode indicator of NMEA 2.3 and later (RMC, GLL, VTG, and per system in GNS).
public enum FAAMode: UInt8, Sendable {
    case autonomous = 65  // A
    case differential = 68  // D
    case estimated = 69  // E (dead reckoning)
    case rtkFloat = 70  // F
    case manual = 77  // M
    case notValid = 78  // N
    case precise = 80  // P
    case rtkFixed = 82  // R
    case simulated = 83  // S

    /// True when the receiver says this output is a position from its own solution (not
    /// "not valid", manual input or a simulator).
    public var isUsable: Bool {
        switch self {
        case .notValid, .manual, .simulated: false
        default: true
        }
    }

    /// Precision order for choosing among per-system modes (higher is better).
    var rank: Int {
        switch self {
        case .notValid: 0
        case .simulated: 1
        case .manual: 2
        case .estimated: 3
        case .autonomous: 4
        case .differential, .precise: 5
        case .rtkFloat: 6
        case .rtkFixed: 7
        }
    }
}

/// GNSS constellation, from the NMEA 4.11 system ID or the talker.
public enum GNSSSystem: UInt8, Sendable {
    case gps = 1, glonass = 2, galileo = 3, beidou = 4, qzss = 5, navic = 6
}

/// The two-letter talker of a sentence; the parser keeps it as metadata only.
public enum NMEATalker: Sendable, Hashable {
    case gps, glonass, galileo, beidou, qzss, navic, combined
    /// Any other two-letter talker (for example `II`, `EC`).
    case other(UInt8, UInt8)

    init(_ first: UInt8, _ second: UInt8) {
        switch (first, second) {
        case (0x47, 0x50): self = .gps  // GP
        case (0x47, 0x4C): self = .glonass  // GL
        case (0x47, 0x41): self = .galileo  // GA
        case (0x47, 0x42), (0x42, 0x44): self = .beidou  // GB, BD
        case (0x47, 0x51), (0x51, 0x5A): self = .qzss  // GQ, QZ
        case (0x47, 0x49): self = .navic  // GI
        case (0x47, 0x4E): self = .combined  // GN
        default: self = .other(first, second)
        }
    }
}
