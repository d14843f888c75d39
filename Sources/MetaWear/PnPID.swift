/// A board's PnP ID (Device Information characteristic 2A50): who made it, which product and
/// which version, as numbers.
///
/// Through BlueZ it arrives as `Device1.Modalias`: bluetoothd's deviceinfo plugin reads 2A50
/// whenever the board's Device Information service has it, even when bluetoothd does not
/// export that service as GATT objects, and writes `bluetooth:vVVVVpPPPPdDDDD` (vendor id
/// source 1, Bluetooth SIG) or `usb:v…p…d…` (source 2, USB-IF), hex upper case
/// (BlueZ `src/uuid-helper.c` `bt_modalias`, `profiles/deviceinfo/deviceinfo.c`). A board whose
/// Device Information has no 2A50 gets no Modalias: MbientLab's SDKs read only the five
/// strings (reference §3.1), so whether a stock board carries one is not known.
public struct PnPID: Hashable, Sendable, CustomStringConvertible {
    /// Who assigned ``vendor``.
    public enum VendorSource: String, Hashable, Sendable {
        /// Bluetooth SIG company identifier (PnP vendor id source 1).
        case bluetoothSIG = "bluetooth"
        /// USB Implementers Forum vendor id (source 2).
        case usb
    }

    /// MbientLab Inc's Bluetooth SIG company identifier (1662; BlueZ `lib/bluetooth/bluetooth.c`
    /// `bt_compidtostr`). Not the `0x626D` its advertisements carry (reference §1.2).
    public static let mbientLabCompanyID: UInt16 = 0x067E

    public var source: VendorSource
    public var vendor: UInt16
    public var product: UInt16
    public var version: UInt16

    /// All fields.
    public init(source: VendorSource, vendor: UInt16, product: UInt16, version: UInt16) {
        self.source = source
        self.vendor = vendor
        self.product = product
        self.version = version
    }

    /// Parses a `Device1.Modalias` string; nil for anything else (a modalias of another bus,
    /// a malformed one).
    public init?(modalias: String) {
        let parts = modalias.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let source = VendorSource(rawValue: String(parts[0]).lowercased()) else { return nil }
        let body = Array(parts[1].uppercased())
        // v VVVV p PPPP d DDDD
        guard body.count == 15, body[0] == "V", body[5] == "P", body[10] == "D",
              let vendor = UInt16(String(body[1..<5]), radix: 16),
              let product = UInt16(String(body[6..<10]), radix: 16),
              let version = UInt16(String(body[11..<15]), radix: 16)
        else { return nil }
        self.init(source: source, vendor: vendor, product: product, version: version)
    }

    /// The Modalias text bluetoothd makes of it.
    public var modalias: String {
        "\(source.rawValue):v\(Self.hex(vendor))p\(Self.hex(product))d\(Self.hex(version))"
    }

    /// Made by MbientLab (Bluetooth SIG company id 0x067E).
    public var isMbientLab: Bool { source == .bluetoothSIG && vendor == Self.mbientLabCompanyID }

    /// The model number the SDK's model table is keyed by (DIS 2A24: `"0"` … `"8"`), read as
    /// the product id of an MbientLab PnP ID; nil for another vendor.
    public var modelNumber: String? { isMbientLab ? String(product) : nil }

    public var description: String {
        let vendorName = isMbientLab ? "MbientLab" : "vendor 0x\(Self.hex(vendor))"
        return "\(modalias) (\(vendorName), product \(product), version 0x\(Self.hex(version)))"
    }

    private static func hex(_ value: UInt16) -> String {
        let digits = Array("0123456789ABCDEF")
        return String((0..<4).reversed().map { digits[Int((value >> (UInt16($0) * 4)) & 0xF)] })
    }
}

/// What bluetoothd itself learnt about a board through its plugins, beside what the handshake
/// reads from the board: `Device1.Modalias` (deviceinfo plugin) and `org.bluez.Battery1`
/// (battery plugin), and the GATT battery level when that service is exported.
public struct HostReportedIdentity: Hashable, Sendable {
    /// From `Device1.Modalias`, when bluetoothd set one.
    public var pnpID: PnPID?
    /// `Device1.Modalias` as bluetoothd wrote it, also when it is not a PnP ID we read.
    public var modalias: String?
    /// `org.bluez.Battery1.Percentage`, when bluetoothd's battery plugin exports it.
    public var batteryPercentage: UInt8?
    /// Battery level read from an exported Battery service (180F/2A19).
    public var gattBatteryLevel: UInt8?

    /// Nothing known.
    public init(modalias: String? = nil, batteryPercentage: UInt8? = nil, gattBatteryLevel: UInt8? = nil) {
        self.modalias = modalias
        self.pnpID = modalias.flatMap(PnPID.init(modalias:))
        self.batteryPercentage = batteryPercentage
        self.gattBatteryLevel = gattBatteryLevel
    }

    /// The battery as bluetoothd knows it: Battery1, else the GATT level (percent only).
    public var battery: BatteryState? {
        (batteryPercentage ?? gattBatteryLevel).map { BatteryState(percent: $0, millivolts: nil) }
    }
}
