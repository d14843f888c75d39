/// A typed notification from the board.
public enum MetaWearEvent: Hashable, Sendable {
    /// Gyro samples in °/s (1 or 3).
    case gyro(MotionSamples)
    /// Accelerometer samples in g (1 or 3).
    case accelerometer(MotionSamples)
    /// Battery reply.
    case battery(BatteryState)
    /// Board clock reply.
    case boardClock(BoardClock)
    /// Button press or release.
    case button(ButtonEvent)
    /// Module-info reply.
    case moduleInfo(ModuleInfo)
    /// Config read-back `[mod, 83, b0, b1]`.
    case configuration(MotionSensor, [UInt8])
    /// MAC address reply.
    case macAddress(MACAddress)
    /// `[mod, 02, id]` answer to an allocating command (data processor, event, logger, timer, macro).
    case allocated(ModuleID, id: UInt8)
    /// Anything else, kept with its bytes and the reason it was not decoded.
    case unknown(UnknownNotification)
}

/// A notification the decoder could not type, with its bytes.
public struct UnknownNotification: Hashable, Sendable, CustomStringConvertible {
    /// The bytes as received.
    public var bytes: [UInt8]
    /// Why it was not decoded.
    public var reason: String

    public var description: String { "[\(Hex.string(bytes))]: \(reason)" }
}

/// Decodes notifications for one connected board. Needs the chip (register numbers differ)
/// and the ranges in force (scale). Never traps on any input.
public struct NotificationDecoder: Hashable, Sendable {
    /// IMU chip of the board.
    public var chip: IMUChip
    /// Range the gyro was configured with.
    public var gyroRange: GyroRange
    /// Range the accelerometer was configured with.
    public var accelerometerRange: AccelerometerRange

    private var gyroScale: Double
    private var accelScale: Double
    private var gyroData: UInt8
    private var gyroPacked: UInt8
    private var accelPacked: UInt8

    /// A decoder for a board; ranges not given are the chip's defaults in MbientLab's SDK
    /// (gyro ±2000 °/s; accelerometer ±2 g on BMI160, ±8 g on BMI270), what a board that was
    /// never configured streams with.
    public init(chip: IMUChip, gyroRange: GyroRange = .dps2000, accelerometerRange: AccelerometerRange? = nil) {
        let accelerometerRange = accelerometerRange ?? AccelerometerRange.defaultRange(on: chip)
        self.chip = chip
        self.gyroRange = gyroRange
        self.accelerometerRange = accelerometerRange
        gyroScale = gyroRange.scale
        accelScale = accelerometerRange.scale
        gyroData = MotionSensor.gyro.dataRegister(on: chip)
        gyroPacked = MotionSensor.gyro.packedRegister(on: chip)
        accelPacked = MotionSensor.accelerometer.packedRegister(on: chip)
    }

    /// Decodes one notification.
    public func decode(_ bytes: [UInt8]) -> MetaWearEvent {
        bytes.withUnsafeBufferPointer { decode(buffer: $0) }
    }

    /// Decodes one notification from a buffer (no copy unless it is kept as unknown).
    public func decode(buffer b: UnsafeBufferPointer<UInt8>) -> MetaWearEvent {
        guard b.count >= 2 else { return unknown(b, "shorter than the 2-byte header") }
        let module = b[0]
        let register = b[1]
        switch module {
        case 0x13:
            if register == gyroData { return motion(b, packed: false, scale: gyroScale, gyro: true) }
            if register == gyroPacked { return motion(b, packed: true, scale: gyroScale, gyro: true) }
            if register == 0x83 { return configuration(.gyro, b) }
        case 0x03:
            if register == 0x04 { return motion(b, packed: false, scale: accelScale, gyro: false) }
            if register == accelPacked { return motion(b, packed: true, scale: accelScale, gyro: false) }
            if register == 0x83 { return configuration(.accelerometer, b) }
        case 0x11:
            if register == 0x8C {
                guard b.count == 5 else { return unknown(b, "battery reply must be 5 bytes, got \(b.count)") }
                return .battery(BatteryState(percent: b[2], millivolts: UInt16(b[3]) | UInt16(b[4]) << 8))
            }
            if register == 0x8B {
                guard b.count == 8 || b.count == 9 else { return unknown(b, "MAC reply must be 8 or 9 bytes, got \(b.count)") }
                let offset = b.count == 9 ? 3 : 2
                return .macAddress(MACAddress(bytes: (offset..<offset + 6).reversed().map { b[$0] },
                                              addressType: b.count == 9 ? b[2] : nil))
            }
        case 0x0B:
            if register == 0x84 {
                guard b.count == 7 else { return unknown(b, "board clock reply must be 7 bytes, got \(b.count)") }
                let tick = UInt32(b[2]) | UInt32(b[3]) << 8 | UInt32(b[4]) << 16 | UInt32(b[5]) << 24
                return .boardClock(BoardClock(tick: tick, resetUID: b[6]))
            }
        case 0x01:
            if register == 0x01 {
                guard b.count == 3 else { return unknown(b, "button notification must be 3 bytes, got \(b.count)") }
                switch b[2] {
                case 0x00: return .button(.released)
                case 0x01: return .button(.pressed)
                default: return unknown(b, "button state \(b[2]) is neither 0 (released) nor 1 (pressed)")
                }
            }
        default: break
        }
        if register == 0x80 {
            do { return .moduleInfo(try ModuleInfo(reply: b)) } catch { return unknown(b, error.description) }
        }
        if register == 0x02, b.count == 3, [0x09, 0x0A, 0x0B, 0x0C, 0x0F].contains(module) {
            return .allocated(ModuleID(rawValue: module), id: b[2])
        }
        return unknown(b, "no decoder for \(ModuleID(rawValue: module)) register 0x\(Hex.byte(register)) on \(chip)")
    }

    @inline(__always)
    private func vector(_ b: UnsafeBufferPointer<UInt8>, _ at: Int) -> RawVector {
        RawVector(x: Int16(bitPattern: UInt16(b[at]) | UInt16(b[at + 1]) << 8),
                  y: Int16(bitPattern: UInt16(b[at + 2]) | UInt16(b[at + 3]) << 8),
                  z: Int16(bitPattern: UInt16(b[at + 4]) | UInt16(b[at + 5]) << 8))
    }

    private func motion(_ b: UnsafeBufferPointer<UInt8>, packed: Bool, scale: Double, gyro: Bool) -> MetaWearEvent {
        let name = gyro ? "gyro" : "accelerometer"
        let samples: MotionSamples
        if packed {
            guard b.count == 20 else { return unknown(b, "packed \(name) notification must be 20 bytes, got \(b.count)") }
            samples = MotionSamples(packed: vector(b, 2), vector(b, 8), vector(b, 14), scale: scale)
        } else {
            guard b.count == 8 else { return unknown(b, "\(name) sample notification must be 8 bytes, got \(b.count)") }
            samples = MotionSamples(single: vector(b, 2), scale: scale)
        }
        return gyro ? .gyro(samples) : .accelerometer(samples)
    }

    private func configuration(_ sensor: MotionSensor, _ b: UnsafeBufferPointer<UInt8>) -> MetaWearEvent {
        guard b.count == 4 else { return unknown(b, "\(sensor) config reply must be 4 bytes, got \(b.count)") }
        return .configuration(sensor, [b[2], b[3]])
    }

    private func unknown(_ b: UnsafeBufferPointer<UInt8>, _ reason: String) -> MetaWearEvent {
        .unknown(UnknownNotification(bytes: Array(b), reason: reason))
    }
}
