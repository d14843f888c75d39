/// Gyro output data rate. Raw value = hertz. Same codes on BMI160 and BMI270 (reference §4.2).
public enum GyroRate: Int, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case hz25 = 25, hz50 = 50, hz100 = 100, hz200 = 200, hz400 = 400, hz800 = 800, hz1600 = 1600, hz3200 = 3200

    /// Looks up a rate by hertz; anything else is an error naming the allowed rates.
    public init(hertz: Double) throws(ConfigurationError) {
        guard let rate = Self.allCases.first(where: { Double($0.rawValue) == hertz }) else {
            throw .unsupportedGyroRate(hertz)
        }
        self = rate
    }

    /// Samples per second.
    public var hertz: Double { Double(rawValue) }

    /// Bosch ODR code (6 = 25 Hz … 13 = 3200 Hz).
    public var code: UInt8 {
        switch self {
        case .hz25: 6
        case .hz50: 7
        case .hz100: 8
        case .hz200: 9
        case .hz400: 10
        case .hz800: 11
        case .hz1600: 12
        case .hz3200: 13
        }
    }

    public var description: String { "\(rawValue) Hz" }
}

/// Gyro full-scale range. Raw value = ± degrees per second.
public enum GyroRange: Int, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case dps125 = 125, dps250 = 250, dps500 = 500, dps1000 = 1000, dps2000 = 2000

    /// Looks up a range by ±°/s; anything else is an error naming the allowed ranges.
    public init(degreesPerSecond: Int) throws(ConfigurationError) {
        guard let range = Self(rawValue: degreesPerSecond) else { throw .unsupportedGyroRange(degreesPerSecond) }
        self = range
    }

    /// Config byte 1 (`gyr_range`).
    public var byte: UInt8 {
        switch self {
        case .dps2000: 0
        case .dps1000: 1
        case .dps500: 2
        case .dps250: 3
        case .dps125: 4
        }
    }

    /// Range for a config byte 1, nil when out of the table.
    public init?(byte: UInt8) {
        guard let range = Self.allCases.first(where: { $0.byte == byte & 0x07 }), byte <= 0x07 else { return nil }
        self = range
    }

    /// LSB per °/s: degrees per second = raw / scale.
    public var scale: Double {
        switch self {
        case .dps2000: 16.4
        case .dps1000: 32.8
        case .dps500: 65.6
        case .dps250: 131.2
        case .dps125: 262.4
        }
    }

    public var description: String { "±\(rawValue) °/s" }
}

/// Gyro rate and range: what `13 03 <byte0> <byte1>` writes.
public struct GyroConfiguration: Hashable, Sendable, CustomStringConvertible {
    /// Output data rate.
    public var rate: GyroRate
    /// Full-scale range.
    public var range: GyroRange

    /// Typed values.
    public init(rate: GyroRate, range: GyroRange) {
        self.rate = rate
        self.range = range
    }

    /// From numbers a user typed; invalid values throw errors naming the allowed values.
    public init(rateHertz: Double, rangeDegreesPerSecond: Int) throws(ConfigurationError) {
        self.init(rate: try GyroRate(hertz: rateHertz), range: try GyroRange(degreesPerSecond: rangeDegreesPerSecond))
    }

    /// The two config bytes. bwp is always 2 ("normal"), as every SDK writes.
    public var bytes: [UInt8] { [0x20 | rate.code, range.byte] }

    public var description: String { "gyro \(rate), \(range)" }
}
