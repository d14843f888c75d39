/// The two streamed motion sensors and their chip-specific register map (reference §4.1, §5.1).
public enum MotionSensor: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case gyro
    case accelerometer

    /// Firmware module.
    public var module: ModuleID { self == .gyro ? .gyro : .accelerometer }

    /// Power mode register (start/stop).
    public static let powerRegister: UInt8 = 0x01
    /// Data-interrupt enable register.
    public static let interruptRegister: UInt8 = 0x02
    /// Config register (2 bytes).
    public static let configRegister: UInt8 = 0x03

    /// Single-sample data register.
    public func dataRegister(on chip: IMUChip) -> UInt8 {
        switch (self, chip) {
        case (.gyro, .bmi160): 0x05
        case (.gyro, .bmi270): 0x04
        case (.accelerometer, _): 0x04
        }
    }

    /// Packed (3 samples per notification) data register.
    public func packedRegister(on chip: IMUChip) -> UInt8 {
        switch (self, chip) {
        case (.gyro, .bmi160): 0x07
        case (.gyro, .bmi270): 0x05
        case (.accelerometer, .bmi160): 0x1C
        case (.accelerometer, .bmi270): 0x05
        }
    }

    /// Whether packed data is available for this module revision (BMI160 needs revision ≥ 1).
    public func supportsPacked(on chip: IMUChip, revision: UInt8) -> Bool {
        chip == .bmi270 || revision >= 1
    }

    public var description: String { rawValue }
}

/// Single-sample (one notification per sample) or packed (three samples per notification).
public enum SampleMode: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case single
    case packed

    /// Samples carried by one notification.
    public var samplesPerNotification: Int { self == .single ? 1 : 3 }

    public var description: String { rawValue }
}
