/// What the user wants streamed from one board.
public struct StreamingConfiguration: Hashable, Sendable {
    /// Notifications per second one BLE link carries in practice (reference §9.1).
    public static let linkBudgetNotificationsPerSecond = 100.0

    /// Gyro settings, nil to leave the gyro off.
    public var gyro: GyroConfiguration?
    /// Gyro sample mode.
    public var gyroMode: SampleMode
    /// Accelerometer settings, nil to leave it off.
    public var accelerometer: AccelerometerConfiguration?
    /// Accelerometer sample mode.
    public var accelerometerMode: SampleMode
    /// Connection parameters to request before streaming (nil: leave the central's choice).
    public var connectionParameters: ConnectionParameters?
    /// Allow configurations above the ~100 notifications/s link budget (samples will be lost).
    public var allowExceedingLinkBudget: Bool
    /// Sensors recorded to the board's flash log and downloaded instead of streamed (rates
    /// beyond the link, issue 21 part 3); they do not count against the link budget.
    public var logged: Set<MotionSensor>

    /// The lowest rate no single link carries sample by sample: at this rate and above a
    /// sensor is recorded to the board's flash and downloaded (when logging is on).
    public static let loggedRateFloor = 400.0

    /// Whether `hertz` is a rate recorded to the flash rather than streamed.
    public static func isBeyondTheLink(hertz: Double) -> Bool { hertz >= loggedRateFloor }

    /// Validates the combination: at least one sensor, and within the link budget unless allowed.
    public init(
        gyro: GyroConfiguration?, gyroMode: SampleMode = .single,
        accelerometer: AccelerometerConfiguration? = nil, accelerometerMode: SampleMode = .single,
        connectionParameters: ConnectionParameters? = .fastest, allowExceedingLinkBudget: Bool = false,
        logged: Set<MotionSensor> = []
    ) throws(ConfigurationError) {
        self.gyro = gyro
        self.gyroMode = gyroMode
        self.accelerometer = accelerometer
        self.accelerometerMode = accelerometerMode
        self.connectionParameters = connectionParameters
        self.allowExceedingLinkBudget = allowExceedingLinkBudget
        self.logged = logged.filter { $0 == .gyro ? gyro != nil : accelerometer != nil }
        guard gyro != nil || accelerometer != nil else { throw .noSensorSelected }
        let rate = notificationsPerSecond
        if !allowExceedingLinkBudget, rate > Self.linkBudgetNotificationsPerSecond {
            throw .exceedsLinkBudget(notificationsPerSecond: rate, limit: Self.linkBudgetNotificationsPerSecond)
        }
    }

    /// Notifications per second this configuration streams (logged sensors send none).
    public var notificationsPerSecond: Double {
        var total = 0.0
        if let gyro, !logged.contains(.gyro) { total += gyro.rate.hertz / Double(gyroMode.samplesPerNotification) }
        if let accelerometer, !logged.contains(.accelerometer) {
            total += accelerometer.rate.hertz / Double(accelerometerMode.samplesPerNotification)
        }
        return total
    }

    /// The rates of the sensors recorded to the flash, hertz.
    public var loggedRates: [MotionSensor: Double] {
        var rates: [MotionSensor: Double] = [:]
        if let gyro, logged.contains(.gyro) { rates[.gyro] = gyro.rate.hertz }
        if let accelerometer, logged.contains(.accelerometer) { rates[.accelerometer] = accelerometer.rate.hertz }
        return rates
    }

    /// The configured sensors with their mode.
    public var sensors: [(MotionSensor, SampleMode)] {
        var out: [(MotionSensor, SampleMode)] = []
        if gyro != nil { out.append((.gyro, gyroMode)) }
        if accelerometer != nil { out.append((.accelerometer, accelerometerMode)) }
        return out
    }

    /// Checks the configuration against a board and builds its start/stop sequences.
    public func plan(for board: BoardDescription) throws(ConfigurationError) -> StreamingPlan {
        var start: [Packet] = []
        var stop: [Packet] = []
        for (sensor, mode) in sensors {
            guard let info = board.modules[sensor.module], info.isPresent, let revision = info.revision else {
                throw .sensorMissing(sensor)
            }
            if mode == .packed, !sensor.supportsPacked(on: board.chip, revision: revision) {
                throw .packedUnsupported(sensor: sensor, chip: board.chip, revision: revision)
            }
            var sensorStart: [Packet] = []
            if sensor == .gyro, let gyro {
                sensorStart = Commands.startGyro(gyro, mode: mode, chip: board.chip)
            }
            if sensor == .accelerometer, let accelerometer {
                sensorStart = Commands.startAccelerometer(accelerometer, mode: mode, chip: board.chip)
            }
            // A logged sensor samples and its logger writes to flash; nothing is sent on the link.
            if logged.contains(sensor) { sensorStart.removeAll { $0 == Commands.subscribe(sensor, mode: mode, chip: board.chip) } }
            start += sensorStart
            stop += Commands.stop(sensor, mode: mode, chip: board.chip)
        }
        let decoder = NotificationDecoder(
            chip: board.chip, gyroRange: gyro?.range ?? .dps2000, accelerometerRange: accelerometer?.range)
        return StreamingPlan(configuration: self, startCommands: start, stopCommands: stop, decoder: decoder)
    }
}

/// Everything needed to stream from a described board.
public struct StreamingPlan: Hashable, Sendable {
    /// The validated configuration.
    public var configuration: StreamingConfiguration
    /// Write these in order to start streaming.
    public var startCommands: [Packet]
    /// Write these in order to stop (power off → disable interrupt → unsubscribe, per sensor).
    public var stopCommands: [Packet]
    /// Decoder with the chip and ranges of this plan.
    public var decoder: NotificationDecoder
}

/// What the handshake learned about a board.
public struct BoardDescription: Hashable, Sendable, CustomStringConvertible {
    /// Detected model.
    public var model: BoardModel
    /// IMU chip.
    public var chip: IMUChip
    /// DIS strings (nil when the read failed).
    public var firmwareRevision: String?
    public var modelNumber: String?
    public var hardwareRevision: String?
    public var manufacturer: String?
    public var serialNumber: String?
    /// Module-info replies.
    public var modules: ModuleTable
    /// Battery at connect, when the settings revision supports it and the board answered.
    public var battery: BatteryState?
    /// Board clock at connect, when the board has logging and answered.
    public var boardClock: BoardClock?
    /// When the model number was not read: the models module info leaves possible (one when
    /// identified, several when they cannot be told apart). Empty when DIS named the model.
    public var modelCandidates: [BoardModel] = []
    /// What bluetoothd reported about the board (Modalias, Battery1); nil before it was asked.
    public var hostReported: HostReportedIdentity?
    /// Where ``model`` comes from.
    public var modelSource: ModelSource {
        if modelNumber != nil { return .deviceInformation }
        if let number = hostReported?.pnpID?.modelNumber, modelCandidates == [BoardModel.detect(modelNumber: number, modules: modules)],
           model != .unknown {
            return .modalias
        }
        return .moduleInfo
    }

    /// Where a board's model name comes from.
    public enum ModelSource: String, Hashable, Sendable {
        /// The model number string (DIS 2A24), as the SDK reads it.
        case deviceInformation
        /// The product id of an MbientLab PnP ID (`Device1.Modalias`), in the SDK's table.
        case modalias
        /// Module info alone (the model may not be told apart).
        case moduleInfo
    }

    /// All fields (the handshake builds this; tests and caches may too).
    public init(model: BoardModel, chip: IMUChip, firmwareRevision: String?, modelNumber: String?,
                hardwareRevision: String?, manufacturer: String?, serialNumber: String?, modules: ModuleTable,
                battery: BatteryState?, boardClock: BoardClock?) {
        self.model = model
        self.chip = chip
        self.firmwareRevision = firmwareRevision
        self.modelNumber = modelNumber
        self.hardwareRevision = hardwareRevision
        self.manufacturer = manufacturer
        self.serialNumber = serialNumber
        self.modules = modules
        self.battery = battery
        self.boardClock = boardClock
    }

    /// Gyro module revision.
    public var gyroRevision: UInt8? { modules.revision(of: .gyro) }
    /// Accelerometer module revision.
    public var accelerometerRevision: UInt8? { modules.revision(of: .accelerometer) }
    /// Settings module revision.
    public var settingsRevision: UInt8? { modules.revision(of: .settings) }
    /// LED module revision.
    public var ledRevision: UInt8? { modules.revision(of: .led) }

    /// Why the model or firmware is not fully known, nil when DIS named both.
    public var missingIdentity: String? {
        var missing: [String] = []
        if modelNumber == nil {
            let modalias = hostReported?.modalias
            let named = switch modelSource {
            case .modalias: "model named from Modalias \(modalias ?? "")"
            case .deviceInformation, .moduleInfo:
                (modelCandidates.count == 1 ? "model identified from module info" : "model cannot be told apart from module info")
                    + "; " + (modalias.map { "Modalias \($0) does not name a MetaWear model" }
                        ?? "no Modalias (the board's Device Information has no PnP ID 2A50, or bluetoothd's deviceinfo plugin is off)")
            }
            missing.append("no model number (DIS 2A24): \(named)")
        }
        if firmwareRevision == nil { missing.append("no firmware revision (DIS 2A26): firmware unknown") }
        guard !missing.isEmpty else { return nil }
        let cause = modelNumber == nil && firmwareRevision == nil
            ? "the Device Information service (180A) is not exported by BlueZ (its deviceinfo plugin claims it: "
                + "bluetoothd 5.80+ with [GATT] ExportClaimedServices = no, or a bluetoothd that hides claimed services)"
            : "Device Information reads failed"
        return cause + "; " + missing.joined(separator: "; ")
    }

    /// This description with what bluetoothd reported: a model number from an MbientLab
    /// Modalias names the model (by the SDK's table, with module presence) when Device
    /// Information did not, if that model carries the board's chip; bluetoothd's battery
    /// percentage stands in when the settings module gave none. The firmware stays unknown:
    /// a PnP version is not a firmware revision.
    public func adopting(_ host: HostReportedIdentity) -> BoardDescription {
        var adopted = self
        adopted.hostReported = host
        if battery == nil { adopted.battery = host.battery }
        if modelNumber == nil, let number = host.pnpID?.modelNumber {
            let named = BoardModel.detect(modelNumber: number, modules: modules)
            if named != .unknown, named.mayCarry(chip) {
                adopted.model = named
                adopted.modelCandidates = [named]
            }
        }
        return adopted
    }

    /// The model's name, or the models it may be when module info cannot tell them apart.
    public var modelName: String {
        guard model == .unknown, modelCandidates.count > 1 else { return model.rawValue }
        return "one of " + modelCandidates.map(\.rawValue).joined(separator: ", ")
    }

    public var description: String {
        let firmware = firmwareRevision.map { ", firmware \($0)" } ?? ""
        return "\(modelName) (\(chip))\(firmware), gyro rev \(gyroRevision.map(String.init) ?? "-"), accelerometer rev \(accelerometerRevision.map(String.init) ?? "-")"
    }
}

/// Device Information Service strings read at connect, in the SDK's order.
public enum DeviceInformationField: String, Hashable, Sendable, CaseIterable {
    case firmwareRevision, modelNumber, hardwareRevision, manufacturer, serialNumber

    /// 16-bit characteristic UUID.
    public var shortUUID: UInt16 {
        switch self {
        case .firmwareRevision: 0x2A26
        case .modelNumber: 0x2A24
        case .hardwareRevision: 0x2A27
        case .manufacturer: 0x2A29
        case .serialNumber: 0x2A25
        }
    }

    /// Full 128-bit UUID string as BlueZ reports it.
    public var uuid: String {
        "0000" + Hex.byte(UInt8(shortUUID >> 8)).lowercased() + Hex.byte(UInt8(shortUUID & 0xFF)).lowercased()
            + "-0000-1000-8000-00805f9b34fb"
    }
}

/// GATT UUIDs of the MetaWear service (reference §1.1).
public enum MetaWearGATT {
    /// Primary service.
    public static let service = "326a9000-85cb-9195-d9dd-464cfbbae75a"
    /// Command characteristic (write).
    public static let command = "326a9001-85cb-9195-d9dd-464cfbbae75a"
    /// Notify characteristic.
    public static let notify = "326a9006-85cb-9195-d9dd-464cfbbae75a"
    /// Device Information Service.
    public static let deviceInformationService = "0000180a-0000-1000-8000-00805f9b34fb"
    /// DFU service: present instead of the MetaWear service in bootloader (MetaBoot) mode.
    public static let dfuService = "00001530-1212-efde-1523-785feabcd123"
}
