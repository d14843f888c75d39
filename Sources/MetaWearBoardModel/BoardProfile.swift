/// A simulated board's identity: DIS strings and the module-info replies it sends.
///
/// The tables are literal bytes copied from the reference (metawear-protocol.md §3.4, from
/// the C++ SDK's own test double), on purpose not derived from the MetaWear module.
public struct BoardProfile: Hashable, Sendable {
    /// Which IMU the simulated board carries.
    public enum Chip: String, Hashable, Sendable {
        case bmi160, bmi270
    }

    /// Profile name for logs.
    public var name: String
    /// IMU chip (drives register numbers and the accelerometer range table).
    public var chip: Chip
    /// DIS 2A24.
    public var modelNumber: String
    /// DIS 2A26.
    public var firmwareRevision: String
    /// DIS 2A27.
    public var hardwareRevision: String
    /// DIS 2A29.
    public var manufacturer: String
    /// DIS 2A25.
    public var serialNumber: String
    /// MAC, most significant byte first.
    public var macAddress: [UInt8]
    /// Full module-info reply per module id (`[mod, 80, …]`).
    public var moduleInfo: [UInt8: [UInt8]]
    /// Log entries the flash holds (metawear-logging.md §9): MetaMotion S 66,781,184 (its
    /// module info, API-MMS "~67M"); MetaMotion RL 1,048,576 (API-MMRL "8MB", 8 bytes an
    /// entry). MetaMotion R: the same 1,048,576 (what a real MetaMotion R's logging module info
    /// reports; MbientLab documents the RL with the MetaMotion R's datasheet).
    public var flashCapacityEntries: Int
    /// Entries per flash page (512 on MetaMotion S; unknown on rev-2 boards, 512 chosen).
    public var flashPageEntries: Int
    /// DIS 2A50 PnP ID, 7 bytes (vendor id source, vendor, product, version; u16 little
    /// endian), or nil when the board's Device Information has none. MbientLab's SDKs read
    /// only the five strings, so no stock board is known to carry one: nil by default; see
    /// ``withMbientLabPnPID()``.
    public var pnpID: [UInt8]?

    /// All fields.
    public init(name: String, chip: Chip, modelNumber: String, firmwareRevision: String, hardwareRevision: String,
                manufacturer: String, serialNumber: String, macAddress: [UInt8], moduleInfo: [UInt8: [UInt8]],
                flashCapacityEntries: Int = 1_048_576, flashPageEntries: Int = 512) {
        self.name = name
        self.chip = chip
        self.modelNumber = modelNumber
        self.firmwareRevision = firmwareRevision
        self.hardwareRevision = hardwareRevision
        self.manufacturer = manufacturer
        self.serialNumber = serialNumber
        self.macAddress = macAddress
        self.moduleInfo = moduleInfo
        self.flashCapacityEntries = flashCapacityEntries
        self.flashPageEntries = flashPageEntries
    }

    /// MetaMotion R: BMI160, model "5", ambient light present.
    public static let metaMotionR = BoardProfile(
        name: "MetaMotion R", chip: .bmi160, modelNumber: "5", firmwareRevision: "1.7.2", hardwareRevision: "0.4",
        manufacturer: "MbientLab Inc", serialNumber: "055B9E", macAddress: [0xE8, 0xC9, 0x8F, 0x52, 0x7B, 0x07],
        moduleInfo: [
            0x01: [0x01, 0x80, 0x00, 0x00],
            0x02: [0x02, 0x80, 0x00, 0x00],
            0x03: [0x03, 0x80, 0x01, 0x01],
            0x04: [0x04, 0x80, 0x01, 0x00, 0x00, 0x03, 0x01, 0x02],
            0x05: [0x05, 0x80, 0x00, 0x01, 0x03, 0x03, 0x03, 0x03, 0x01],
            0x07: [0x07, 0x80, 0x00, 0x00],
            0x08: [0x08, 0x80, 0x00, 0x00],
            0x09: [0x09, 0x80, 0x00, 0x00, 0x1C],
            0x0A: [0x0A, 0x80, 0x00, 0x00, 0x1C],
            0x0B: [0x0B, 0x80, 0x00, 0x02, 0x08, 0x80, 0x2B, 0x00, 0x00],
            0x0C: [0x0C, 0x80, 0x00, 0x00, 0x08],
            0x0D: [0x0D, 0x80, 0x00, 0x01],
            0x0F: [0x0F, 0x80, 0x00, 0x01, 0x08],
            0x11: [0x11, 0x80, 0x00, 0x03],
            0x12: [0x12, 0x80, 0x00, 0x00],
            0x13: [0x13, 0x80, 0x00, 0x01],
            0x14: [0x14, 0x80, 0x00, 0x00],
            0x15: [0x15, 0x80, 0x00, 0x01],
            0x16: [0x16, 0x80],
            0x19: [0x19, 0x80, 0x00, 0x00, 0x03, 0x00, 0x06, 0x00, 0x02, 0x00, 0x01, 0x00],
            0xFE: [0xFE, 0x80, 0x00, 0x02],
        ])

    /// MetaMotion RL: BMI160, model "5", no barometer or ambient light, accelerometer rev 2.
    public static let metaMotionRL: BoardProfile = {
        var profile = metaMotionR
        profile.name = "MetaMotion RL"
        profile.serialNumber = "0A11CE"
        profile.macAddress = [0xD1, 0x2B, 0x3C, 0x4D, 0x5E, 0x6F]
        profile.moduleInfo[0x03] = [0x03, 0x80, 0x01, 0x02]
        profile.moduleInfo[0x12] = [0x12, 0x80]
        profile.moduleInfo[0x14] = [0x14, 0x80]
        return profile
    }()

    /// MetaMotion S: BMI270, model "8".
    public static let metaMotionS = BoardProfile(
        name: "MetaMotion S", chip: .bmi270, modelNumber: "8", firmwareRevision: "1.7.3", hardwareRevision: "0.1",
        manufacturer: "MbientLab Inc", serialNumber: "0C7D42", macAddress: [0xC2, 0x11, 0x22, 0x33, 0x44, 0x55],
        moduleInfo: [
            0x01: [0x01, 0x80, 0x00, 0x00],
            0x02: [0x02, 0x80, 0x00, 0x01, 0x03, 0x00],
            0x03: [0x03, 0x80, 0x04, 0x00],
            0x04: [0x04, 0x80, 0x01, 0x00, 0x00, 0x03, 0x01, 0x02],
            0x05: [0x05, 0x80, 0x00, 0x02, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x01],
            0x07: [0x07, 0x80, 0x00, 0x00],
            0x08: [0x08, 0x80, 0x00, 0x00],
            0x09: [0x09, 0x80, 0x00, 0x00, 0x1C],
            0x0A: [0x0A, 0x80, 0x00, 0x00, 0x1C],
            0x0B: [0x0B, 0x80, 0x00, 0x03, 0x08, 0x00, 0x00, 0xFB, 0x03, 0x00, 0x02],
            0x0C: [0x0C, 0x80, 0x00, 0x00, 0x08],
            0x0D: [0x0D, 0x80, 0x00, 0x01],
            0x0F: [0x0F, 0x80, 0x00, 0x02, 0x08, 0x00],
            0x11: [0x11, 0x80, 0x00, 0x0A, 0x07, 0x00],
            0x12: [0x12, 0x80, 0x00, 0x00],
            0x13: [0x13, 0x80, 0x01, 0x00],
            0x14: [0x14, 0x80, 0x00, 0x00],
            0x15: [0x15, 0x80, 0x00, 0x02],
            0x16: [0x16, 0x80],
            0x19: [0x19, 0x80, 0x00, 0x03, 0x03, 0x00, 0x06, 0x00, 0x02, 0x00, 0x01, 0x00],
            0xFE: [0xFE, 0x80, 0x00, 0x05, 0x03],
        ],
        flashCapacityEntries: 66_781_184)

    /// This profile with a PnP ID as an MbientLab board would carry one: vendor MbientLab
    /// (Bluetooth SIG company id 0x067E, source 1), the model number as product id, the
    /// firmware's digits as version (1.7.2 -> 0x0172). How stock firmware would fill it is
    /// not known; this is what the simulator offers to exercise `Device1.Modalias`.
    public func withMbientLabPnPID() -> BoardProfile {
        var profile = self
        let product = UInt16(modelNumber) ?? 0xFFFF
        let digits = firmwareRevision.split(separator: ".").prefix(3).map { UInt16($0) ?? 0 }
        let version = digits.reduce(UInt16(0)) { ($0 << 4) | min($1, 0xF) } << (4 * UInt16(3 - digits.count))
        profile.pnpID = [0x01, 0x7E, 0x06, UInt8(product & 0xFF), UInt8(product >> 8), UInt8(version & 0xFF), UInt8(version >> 8)]
        return profile
    }

    /// DIS value for a 16-bit characteristic UUID (0x2A24…0x2A29), nil for others.
    public func deviceInformation(_ shortUUID: UInt16) -> String? {
        switch shortUUID {
        case 0x2A24: modelNumber
        case 0x2A25: serialNumber
        case 0x2A26: firmwareRevision
        case 0x2A27: hardwareRevision
        case 0x2A29: manufacturer
        default: nil
        }
    }

    /// The bytes of a Device Information characteristic: the strings, and the PnP ID
    /// (2A50) when the board has one; nil for a characteristic the board lacks.
    public func deviceInformationValue(_ shortUUID: UInt16) -> [UInt8]? {
        if shortUUID == 0x2A50 { return pnpID }
        return deviceInformation(shortUUID).map { Array($0.utf8) }
    }

    /// Module-info reply for any id: the table entry, or the bare header for absent modules.
    public func moduleInfoReply(_ module: UInt8) -> [UInt8] {
        moduleInfo[module] ?? [module, 0x80]
    }
}
