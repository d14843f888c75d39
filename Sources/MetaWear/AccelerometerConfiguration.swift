/// Accelerometer output data rate (reference §5.2). The code is the enum index + 1.
public enum AccelerometerRate: Int, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case hz0_78125 = 1, hz1_5625, hz3_125, hz6_25, hz12_5, hz25, hz50, hz100, hz200, hz400, hz800, hz1600

    /// Looks up a rate by hertz; anything else is an error naming the allowed rates.
    public init(hertz: Double) throws(ConfigurationError) {
        guard let rate = Self.allCases.first(where: { $0.hertz == hertz }) else {
            throw .unsupportedAccelerometerRate(hertz)
        }
        self = rate
    }

    /// Samples per second: 12.5 Hz × 2^(code − 5).
    public var hertz: Double {
        var value = 12.5
        if rawValue >= 5 {
            for _ in 5..<rawValue { value *= 2 }
        } else {
            for _ in rawValue..<5 { value /= 2 }
        }
        return value
    }

    /// Bosch ODR code, bits 0–3 of the conf byte.
    public var code: UInt8 { UInt8(rawValue) }

    public var description: String { "\(Self.format(hertz)) Hz" }

    static func format(_ hz: Double) -> String {
        hz == hz.rounded() ? String(Int(hz)) : String(hz)
    }
}

/// Accelerometer full-scale range. Raw value = ± g.
public enum AccelerometerRange: Int, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case g2 = 2, g4 = 4, g8 = 8, g16 = 16

    /// Looks up a range by ±g; anything else is an error naming the allowed ranges.
    public init(g: Int) throws(ConfigurationError) {
        guard let range = Self(rawValue: g) else { throw .unsupportedAccelerometerRange(g) }
        self = range
    }

    /// Range byte: ⚠ chip-specific (`03` is ±2 g on BMI160 but ±16 g on BMI270).
    public func byte(for chip: IMUChip) -> UInt8 {
        switch (chip, self) {
        case (.bmi160, .g2): 0x03
        case (.bmi160, .g4): 0x05
        case (.bmi160, .g8): 0x08
        case (.bmi160, .g16): 0x0C
        case (.bmi270, .g2): 0x00
        case (.bmi270, .g4): 0x01
        case (.bmi270, .g8): 0x02
        case (.bmi270, .g16): 0x03
        }
    }

    /// Range for a chip's range byte, nil when not in the table.
    public init?(byte: UInt8, chip: IMUChip) {
        guard let range = Self.allCases.first(where: { $0.byte(for: chip) == byte }) else { return nil }
        self = range
    }

    /// The range a chip starts with (the SDK's in-memory defaults: BMI160 `28 03`, ±2 g;
    /// BMI270 `A8 02`, ±8 g).
    public static func defaultRange(on chip: IMUChip) -> Self {
        switch chip {
        case .bmi160: .g2
        case .bmi270: .g8
        }
    }

    /// LSB per g: g = raw / scale.
    public var scale: Double {
        switch self {
        case .g2: 16384
        case .g4: 8192
        case .g8: 4096
        case .g16: 2048
        }
    }

    public var description: String { "±\(rawValue) g" }
}

/// Accelerometer rate and range: what `03 03 <conf> <range>` writes.
public struct AccelerometerConfiguration: Hashable, Sendable, CustomStringConvertible {
    /// Output data rate.
    public var rate: AccelerometerRate
    /// Full-scale range.
    public var range: AccelerometerRange

    /// Typed values.
    public init(rate: AccelerometerRate, range: AccelerometerRange) {
        self.rate = rate
        self.range = range
    }

    /// From numbers a user typed; invalid values throw errors naming the allowed values.
    public init(rateHertz: Double, rangeG: Int) throws(ConfigurationError) {
        self.init(rate: try AccelerometerRate(hertz: rateHertz), range: try AccelerometerRange(g: rangeG))
    }

    /// The two config bytes for a chip.
    ///
    /// BMI160: below 12.5 Hz undersampling (bit 7) on with bwp 0, else bwp 2.
    /// BMI270: below 12.5 Hz bwp 2 with filter_perf off, else filter_perf (bit 7) on with bwp 2.
    public func bytes(for chip: IMUChip) -> [UInt8] {
        let lowRate = rate.code <= 4
        let conf: UInt8 = switch chip {
        case .bmi160: lowRate ? 0x80 | rate.code : 0x20 | rate.code
        case .bmi270: lowRate ? 0x20 | rate.code : 0xA0 | rate.code
        }
        return [conf, range.byte(for: chip)]
    }

    /// Power-mode byte for `03 01`: BMI270 uses low-power mode (2) when filter_perf is off (ODR < 12.5 Hz).
    public func powerOnByte(for chip: IMUChip) -> UInt8 {
        chip == .bmi270 && rate.code <= 4 ? 0x02 : 0x01
    }

    public var description: String { "accelerometer \(rate), \(range)" }
}

/// An invalid sensor or streaming setting, named with the values that are allowed.
public enum ConfigurationError: Error, Hashable, Sendable, CustomStringConvertible {
    case unsupportedGyroRate(Double)
    case unsupportedGyroRange(Int)
    case unsupportedAccelerometerRate(Double)
    case unsupportedAccelerometerRange(Int)
    /// Nothing to stream.
    case noSensorSelected
    /// Single-sample (or packed) notification rate above what one BLE link carries.
    case exceedsLinkBudget(notificationsPerSecond: Double, limit: Double)
    /// Packed mode needs a module revision this board lacks.
    case packedUnsupported(sensor: MotionSensor, chip: IMUChip, revision: UInt8)
    /// The sensor is configured but the board has no such module.
    case sensorMissing(MotionSensor)

    public var description: String {
        switch self {
        case .unsupportedGyroRate(let hz):
            "gyro rate \(AccelerometerRate.format(hz)) Hz is not supported; allowed: "
                + GyroRate.allCases.map { String($0.rawValue) }.joined(separator: ", ") + " Hz"
        case .unsupportedGyroRange(let dps):
            "gyro range ±\(dps) °/s is not supported; allowed: ±"
                + GyroRange.allCases.map { String($0.rawValue) }.joined(separator: ", ±") + " °/s"
        case .unsupportedAccelerometerRate(let hz):
            "accelerometer rate \(AccelerometerRate.format(hz)) Hz is not supported; allowed: "
                + AccelerometerRate.allCases.map { AccelerometerRate.format($0.hertz) }.joined(separator: ", ") + " Hz"
        case .unsupportedAccelerometerRange(let g):
            "accelerometer range ±\(g) g is not supported; allowed: ±"
                + AccelerometerRange.allCases.map { String($0.rawValue) }.joined(separator: ", ±") + " g"
        case .noSensorSelected:
            "no sensor selected; enable the gyro, the accelerometer or both"
        case .exceedsLinkBudget(let rate, let limit):
            "this configuration needs \(AccelerometerRate.format((rate * 10).rounded() / 10)) notifications/s but one BLE link carries about \(AccelerometerRate.format(limit))/s; use packed mode (3 samples per notification) or lower the rate"
        case .packedUnsupported(let sensor, let chip, let revision):
            "packed \(sensor) data needs module revision ≥ 1 on \(chip), this board reports revision \(revision); use single-sample mode"
        case .sensorMissing(let sensor):
            "the board has no \(sensor) module"
        }
    }
}
