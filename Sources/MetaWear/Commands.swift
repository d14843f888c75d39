/// Builders for every command the gateway writes. All return `Packet`s; write `packet.bytes`
/// to the command characteristic, one at a time (reference §9.2: never burst).
public enum Commands {
    // MARK: Motion sensors

    /// `[mod, 03, b0, b1]`: write a sensor's config.
    public static func writeConfig(_ sensor: MotionSensor, bytes: [UInt8]) -> Packet {
        Packet(unchecked: sensor.module, MotionSensor.configRegister, payload: bytes)
    }

    /// `[mod, 83]`: read back a sensor's stored config (reply `[mod, 83, b0, b1]`).
    public static func readConfig(_ sensor: MotionSensor) -> Packet {
        Packet(unchecked: sensor.module, MotionSensor.configRegister, isRead: true)
    }

    /// `[mod, 01, 01]` (or `03 01 02`, BMI270 accelerometer low-power).
    public static func powerOn(_ sensor: MotionSensor, mode: UInt8 = 0x01) -> Packet {
        Packet(unchecked: sensor.module, MotionSensor.powerRegister, payload: [mode])
    }

    /// `[mod, 01, 00]`.
    public static func powerOff(_ sensor: MotionSensor) -> Packet {
        Packet(unchecked: sensor.module, MotionSensor.powerRegister, payload: [0x00])
    }

    /// `[mod, 02, 01, 00]`: enable mask 1, disable mask 0.
    public static func enableInterrupt(_ sensor: MotionSensor) -> Packet {
        Packet(unchecked: sensor.module, MotionSensor.interruptRegister, payload: [0x01, 0x00])
    }

    /// `[mod, 02, 00, 01]`.
    public static func disableInterrupt(_ sensor: MotionSensor) -> Packet {
        Packet(unchecked: sensor.module, MotionSensor.interruptRegister, payload: [0x00, 0x01])
    }

    /// `[mod, datareg, 01]` or `[mod, packedreg, 01]`: turn on the register's notifications.
    public static func subscribe(_ sensor: MotionSensor, mode: SampleMode, chip: IMUChip) -> Packet {
        Packet(unchecked: sensor.module, register(sensor, mode, chip), payload: [0x01])
    }

    /// `[mod, datareg, 00]` or `[mod, packedreg, 00]`.
    public static func unsubscribe(_ sensor: MotionSensor, mode: SampleMode, chip: IMUChip) -> Packet {
        Packet(unchecked: sensor.module, register(sensor, mode, chip), payload: [0x00])
    }

    private static func register(_ sensor: MotionSensor, _ mode: SampleMode, _ chip: IMUChip) -> UInt8 {
        mode == .single ? sensor.dataRegister(on: chip) : sensor.packedRegister(on: chip)
    }

    /// Start order used by every SDK: config → subscribe → enable interrupt → power on.
    public static func start(
        _ sensor: MotionSensor, configBytes: [UInt8], mode: SampleMode, chip: IMUChip, powerMode: UInt8 = 0x01
    ) -> [Packet] {
        [
            writeConfig(sensor, bytes: configBytes),
            subscribe(sensor, mode: mode, chip: chip),
            enableInterrupt(sensor),
            powerOn(sensor, mode: powerMode),
        ]
    }

    /// Gyro start sequence (same bytes on both chips except the data register).
    public static func startGyro(_ config: GyroConfiguration, mode: SampleMode, chip: IMUChip) -> [Packet] {
        start(.gyro, configBytes: config.bytes, mode: mode, chip: chip)
    }

    /// Accelerometer start sequence with chip-correct config and power bytes.
    public static func startAccelerometer(
        _ config: AccelerometerConfiguration, mode: SampleMode, chip: IMUChip
    ) -> [Packet] {
        start(.accelerometer, configBytes: config.bytes(for: chip), mode: mode, chip: chip,
              powerMode: config.powerOnByte(for: chip))
    }

    /// Stop order: power off → disable interrupt → unsubscribe.
    public static func stop(_ sensor: MotionSensor, mode: SampleMode, chip: IMUChip) -> [Packet] {
        [powerOff(sensor), disableInterrupt(sensor), unsubscribe(sensor, mode: mode, chip: chip)]
    }

    /// "Stop everything on connect" (reference §9.5): notify-enables and sensor state survive a
    /// disconnect on the board, so clear both sensors' power, interrupt, and both data registers
    /// before configuring. Only modules the board has are touched; on BMI160 the accelerometer's
    /// register 05 is interrupt config, so chip-correct registers matter here too.
    public static func cleanup(chip: IMUChip, modules: ModuleTable) -> [Packet] {
        var packets: [Packet] = []
        for sensor in MotionSensor.allCases where modules.has(sensor.module) {
            packets.append(powerOff(sensor))
            packets.append(disableInterrupt(sensor))
            packets.append(unsubscribe(sensor, mode: .single, chip: chip))
            packets.append(unsubscribe(sensor, mode: .packed, chip: chip))
        }
        return packets
    }

    // MARK: Settings, logging, debug

    /// `11 8C`: battery (reply `11 8C <percent> <mV u16>`; settings revision ≥ 3).
    public static let readBattery = Packet(unchecked: .settings, 0x0C, isRead: true)
    /// `11 8B`: MAC address (settings revision ≥ 2).
    public static let readMACAddress = Packet(unchecked: .settings, 0x0B, isRead: true)
    /// `0B 84`: board clock (reply `0B 84 <tick u32> <reset uid>`).
    public static let readBoardClock = Packet(unchecked: .logging, 0x04, isRead: true)
    /// `FE 01`: soft reset (the link drops).
    public static let reset = Packet(unchecked: .debug, 0x01)
    /// `FE 06`: ask the board to terminate the link.
    public static let disconnect = Packet(unchecked: .debug, 0x06)

    /// `11 09 …`: request new connection parameters (settings revision ≥ 1).
    public static func connectionParameters(_ parameters: ConnectionParameters) -> Packet {
        Packet(unchecked: .settings, 0x09, payload: parameters.payload)
    }

    // MARK: Switch

    /// `01 01 01`: button notifications on.
    public static let subscribeButton = Packet(unchecked: .switchModule, 0x01, payload: [0x01])
    /// `01 01 00`: button notifications off.
    public static let unsubscribeButton = Packet(unchecked: .switchModule, 0x01, payload: [0x00])
}

/// BLE connection parameters as the Settings module encodes them (reference §7.1).
public struct ConnectionParameters: Hashable, Sendable {
    /// Minimum connection interval in 1.25 ms units.
    public var minimumIntervalUnits: UInt16
    /// Maximum connection interval in 1.25 ms units.
    public var maximumIntervalUnits: UInt16
    /// Slave latency (connection events the board may skip).
    public var latency: UInt16
    /// Supervision timeout in 10 ms units.
    public var supervisionTimeoutUnits: UInt16

    /// Raw units.
    public init(minimumIntervalUnits: UInt16, maximumIntervalUnits: UInt16, latency: UInt16, supervisionTimeoutUnits: UInt16) {
        self.minimumIntervalUnits = minimumIntervalUnits
        self.maximumIntervalUnits = maximumIntervalUnits
        self.latency = latency
        self.supervisionTimeoutUnits = supervisionTimeoutUnits
    }

    /// From milliseconds, converted as MbientLab's SDK does: intervals to 1.25 ms units and
    /// the timeout to 10 ms units, truncated (8.125 ms -> 6 units, 7.5 ms; not 7).
    /// Out-of-range values are clamped to what the fields can hold.
    public init(minimumIntervalMilliseconds: Double, maximumIntervalMilliseconds: Double, latency: UInt16, supervisionTimeoutMilliseconds: Double) {
        func units(_ ms: Double, _ unit: Double) -> UInt16 {
            let value = (ms / unit).rounded(.towardZero)
            guard value.isFinite, value > 0 else { return 0 }
            return value >= Double(UInt16.max) ? UInt16.max : UInt16(value)
        }
        self.init(
            minimumIntervalUnits: units(minimumIntervalMilliseconds, 1.25),
            maximumIntervalUnits: units(maximumIntervalMilliseconds, 1.25),
            latency: latency,
            supervisionTimeoutUnits: units(supervisionTimeoutMilliseconds, 10))
    }

    /// 7.5 ms / 7.5 ms / latency 0 / 6000 ms: what the SDK examples request for streaming.
    /// For a connected board with its sensors off: 30–50 ms intervals, 2 events the board may
    /// skip, 6 s supervision timeout. A fraction of the fastest interval's radio events, yet a
    /// start command still reaches the board within (2 + 1) × 50 = 150 ms.
    public static let idle = ConnectionParameters(
        minimumIntervalUnits: 24, maximumIntervalUnits: 40, latency: 2, supervisionTimeoutUnits: 600)

    public static let fastest = ConnectionParameters(
        minimumIntervalUnits: 6, maximumIntervalUnits: 6, latency: 0, supervisionTimeoutUnits: 600)

    /// Payload of `11 09`.
    public var payload: [UInt8] {
        [minimumIntervalUnits, maximumIntervalUnits, latency, supervisionTimeoutUnits].flatMap {
            [UInt8(truncatingIfNeeded: $0), UInt8(truncatingIfNeeded: $0 >> 8)]
        }
    }
}
