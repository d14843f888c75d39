/// The GATT table a MetaWear board shows once services are resolved (metawear-protocol.md
/// §1.1), with BlueZ-style handles: a service path carries its start handle, a characteristic
/// path its declaration handle (bluez-dbus.md §1.4, §1.5).
enum GATTLayout {
    static let metaWearService = "326a9000-85cb-9195-d9dd-464cfbbae75a"
    static let commandCharacteristic = "326a9001-85cb-9195-d9dd-464cfbbae75a"
    static let notifyCharacteristic = "326a9006-85cb-9195-d9dd-464cfbbae75a"
    static let deviceInformationService = uuid16(0x180A)
    static let batteryService = uuid16(0x180F)
    static let batteryLevel = uuid16(0x2A19)
    static let clientConfiguration = uuid16(0x2902)
    /// Company id of MbientLab in advertising manufacturer data ("mb").
    static let mbientLabCompanyID: UInt16 = 0x626D

    /// Characteristic kinds the simulator knows how to serve.
    enum Role: Hashable, Sendable {
        case command, notify, deviceInformation(UInt16), batteryLevel
    }

    struct Characteristic: Sendable {
        let handle: UInt16
        let uuid: String
        let flags: [String]
        let role: Role
        /// Handle of the CCCD, for characteristics that notify.
        let descriptorHandle: UInt16?
    }

    struct Service: Sendable {
        let handle: UInt16
        let uuid: String
        let characteristics: [Characteristic]
    }

    /// The board's services; a board with a PnP ID has it as a sixth Device Information
    /// characteristic (2A50), which moves the Battery service's handles on.
    static func services(withPnPID: Bool) -> [Service] {
        var information = [dis(0x0013, 0x2A29), dis(0x0015, 0x2A24), dis(0x0017, 0x2A25), dis(0x0019, 0x2A27), dis(0x001B, 0x2A26)]
        if withPnPID { information.append(dis(0x001D, pnpIDCharacteristic)) }
        let battery: UInt16 = withPnPID ? 0x001F : 0x001D
        return [
            Service(handle: 0x000C, uuid: metaWearService, characteristics: [
                Characteristic(handle: 0x000D, uuid: commandCharacteristic, flags: ["write-without-response", "write"],
                               role: .command, descriptorHandle: nil),
                Characteristic(handle: 0x000F, uuid: notifyCharacteristic, flags: ["notify"], role: .notify,
                               descriptorHandle: 0x0011),
            ]),
            Service(handle: 0x0012, uuid: deviceInformationService, characteristics: information),
            Service(handle: battery, uuid: batteryService, characteristics: [
                Characteristic(handle: battery + 1, uuid: batteryLevel, flags: ["read", "notify"], role: .batteryLevel,
                               descriptorHandle: battery + 3),
            ]),
        ]
    }

    /// PnP ID (Device Information): what bluetoothd's deviceinfo plugin turns into Modalias.
    static let pnpIDCharacteristic: UInt16 = 0x2A50

    /// UUIDs a resolved device lists in `Device1.UUIDs` (GAP and GATT services included, as
    /// BlueZ does).
    static let resolvedUUIDs: [String] = [uuid16(0x1800), uuid16(0x1801), deviceInformationService, batteryService,
                                          metaWearService].sorted()

    private static func dis(_ handle: UInt16, _ short: UInt16) -> Characteristic {
        Characteristic(handle: handle, uuid: uuid16(short), flags: ["read"], role: .deviceInformation(short),
                       descriptorHandle: nil)
    }

    /// The 128-bit form of a 16-bit SIG UUID, lower case, as BlueZ prints it.
    static func uuid16(_ value: UInt16) -> String {
        "0000" + hex4(value) + "-0000-1000-8000-00805f9b34fb"
    }

    static func hex4(_ value: UInt16) -> String {
        let digits = Array("0123456789abcdef")
        return String((0..<4).reversed().map { digits[Int((value >> (UInt16($0) * 4)) & 0xF)] })
    }
}

/// Lower-case hex of bytes, space-free (for logs).
func hexString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    var text = ""
    text.reserveCapacity(bytes.count * 2)
    for byte in bytes {
        text.append(digits[Int(byte >> 4)])
        text.append(digits[Int(byte & 0x0F)])
    }
    return text
}
