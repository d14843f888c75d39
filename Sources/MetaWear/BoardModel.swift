/// The MbientLab board family, detected from DIS model number (2A24) and module presence.
public enum BoardModel: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case metaWearR = "MetaWear R"
    case metaWearRG = "MetaWear RG"
    case metaWearRPro = "MetaWear RPro"
    case metaWearC = "MetaWear C"
    case metaWearCPro = "MetaWear CPro"
    case metaEnvironment = "MetaEnvironment"
    case metaHealth = "MetaHealth"
    case metaTracker = "MetaTracker"
    case metaMotionR = "MetaMotion R"
    case metaMotionRL = "MetaMotion RL"
    case metaMotionC = "MetaMotion C"
    case metaMotionS = "MetaMotion S"
    case unknown = "unknown"

    /// Applies the C++ SDK's rules (reference §3.3). `modelNumber` is the DIS 2A24 string.
    public static func detect(modelNumber: String?, modules: ModuleTable) -> BoardModel {
        switch modelNumber?.trimmingWhitespace() {
        case "0": return .metaWearR
        case "1": return modules.has(.barometer) && modules.has(.ambientLight) ? .metaWearRPro : .metaWearRG
        case "2":
            if modules.has(.magnetometer) { return .metaWearCPro }
            return modules.has(.humidity) ? .metaEnvironment : .metaWearC
        case "3": return .metaHealth
        case "4": return .metaTracker
        case "5": return modules.has(.ambientLight) ? .metaMotionR : .metaMotionRL
        case "6": return .metaMotionC
        case "8": return .metaMotionS
        default: return .unknown
        }
    }

    /// The models the SDK's table could name this board when its model number (DIS 2A24) is
    /// not known, for example because BlueZ did not export the Device Information service:
    /// every model number's rule applied to the module table, keeping the models built with
    /// `chip`. One entry means the board is identified; several mean it cannot be told apart
    /// from module info alone (reference §3.3: say so rather than guess).
    public static func candidates(modules: ModuleTable, chip: IMUChip) -> [BoardModel] {
        var found: [BoardModel] = []
        for number in ["0", "1", "2", "3", "4", "5", "6", "8"] {
            let model = detect(modelNumber: number, modules: modules)
            if model.mayCarry(chip), !found.contains(model) { found.append(model) }
        }
        return found
    }

    /// Whether boards of this model can carry `chip` (reference §3.4: the BMI270 is only on
    /// MetaMotion S; MetaWear R (MMA8452Q) and MetaEnvironment (BMA255) carry neither chip;
    /// the other boards predate the BMI270).
    func mayCarry(_ chip: IMUChip) -> Bool {
        switch self {
        case .metaMotionS: chip == .bmi270
        case .metaWearR, .metaEnvironment: false
        default: chip == .bmi160
        }
    }

    public var description: String { rawValue }
}

extension String {
    /// DIS strings sometimes carry trailing NULs or spaces.
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let last = scalars.last, last == " " || last == "\0" || last == "\n" || last == "\r" { scalars.removeLast() }
        while let first = scalars.first, first == " " || first == "\0" { scalars.removeFirst() }
        return String(scalars)
    }
}

/// The IMU chip behind the gyro and accelerometer modules. Register numbers and the
/// accelerometer config bytes differ between the two (reference §4.1, §5.1, §5.2).
public enum IMUChip: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// Bosch BMI160: MetaMotion R/RL/C, MetaWear RG/RPro/CPro.
    case bmi160 = "BMI160"
    /// Bosch BMI270: MetaMotion S.
    case bmi270 = "BMI270"

    /// Decides the chip from module info, never from the model (reference §3.4).
    ///
    /// Gyro implementation 0 = BMI160, 1 = BMI270; accelerometer implementation 1 = BMI160,
    /// 4 = BMI270. When both modules are present they must agree.
    public static func detect(modules: ModuleTable) throws(ChipDetectionError) -> IMUChip {
        let gyro = modules[.gyro].flatMap(\.implementation)
        let accel = modules[.accelerometer].flatMap(\.implementation)
        var fromGyro: IMUChip?
        var fromAccel: IMUChip?
        if let gyro {
            switch gyro {
            case 0: fromGyro = .bmi160
            case 1: fromGyro = .bmi270
            default: throw .unsupportedGyro(implementation: gyro)
            }
        }
        if let accel {
            switch accel {
            case 1: fromAccel = .bmi160
            case 4: fromAccel = .bmi270
            default: throw .unsupportedAccelerometer(implementation: accel)
            }
        }
        switch (fromGyro, fromAccel) {
        case (nil, nil): throw .noMotionSensor
        case (let chip?, nil), (nil, let chip?): return chip
        case (let g?, let a?):
            guard g == a else { throw .conflicting(gyro: g, accelerometer: a) }
            return g
        }
    }

    public var description: String { rawValue }
}

/// Why the IMU chip could not be determined.
public enum ChipDetectionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Neither gyro nor accelerometer is present.
    case noMotionSensor
    /// A gyro implementation other than 0 (BMI160) or 1 (BMI270).
    case unsupportedGyro(implementation: UInt8)
    /// An accelerometer implementation other than 1 (BMI160) or 4 (BMI270), e.g. 0 (MMA8452Q) or 3 (BMA255).
    case unsupportedAccelerometer(implementation: UInt8)
    /// Gyro and accelerometer report different chips.
    case conflicting(gyro: IMUChip, accelerometer: IMUChip)

    public var description: String {
        switch self {
        case .noMotionSensor:
            "board reports neither a gyro (0x13) nor an accelerometer (0x03) module"
        case .unsupportedGyro(let i):
            "gyro implementation \(i) is not supported (expected 0 = BMI160 or 1 = BMI270)"
        case .unsupportedAccelerometer(let i):
            "accelerometer implementation \(i) is not supported (expected 1 = BMI160 or 4 = BMI270; 0 = MMA8452Q and 3 = BMA255 are legacy chips)"
        case .conflicting(let g, let a):
            "gyro module says \(g) but accelerometer module says \(a)"
        }
    }
}
