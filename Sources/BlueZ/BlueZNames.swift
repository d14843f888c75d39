import DBus

/// Bus and interface names of BlueZ (reference bluez-dbus.md §1).
public enum BlueZNames {
    /// BlueZ's well-known name on the system bus.
    public static let service = "org.bluez"
    public static let adapter = "org.bluez.Adapter1"
    public static let device = "org.bluez.Device1"
    public static let gattService = "org.bluez.GattService1"
    public static let gattCharacteristic = "org.bluez.GattCharacteristic1"
    /// bluetoothd's battery plugin puts this on a device whose Battery service (180F) it reads.
    public static let battery = "org.bluez.Battery1"
    /// The subtree every adapter and device lives under.
    public static let root: DBusObjectPath = "/org/bluez"
}

/// A Bluetooth device address such as `C4:7C:8D:6A:11:22`, normalised to upper case.
public struct BluetoothAddress: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// `AA:BB:CC:DD:EE:FF`, upper case.
    public let rawValue: String

    /// Parses six colon-separated hex bytes (any case); nil when malformed.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 6, parts.allSatisfy({ $0.count == 2 && UInt8($0, radix: 16) != nil }) else { return nil }
        rawValue = parts.map { $0.uppercased() }.joined(separator: ":")
    }

    public var description: String { rawValue }

    public static func < (lhs: BluetoothAddress, rhs: BluetoothAddress) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The object path BlueZ gives this device under `adapter` (`…/dev_AA_BB_…`).
    public func devicePath(on adapter: DBusObjectPath) -> DBusObjectPath? {
        try? adapter.appending("dev_" + rawValue.replacingOccurrences(of: ":", with: "_"))
    }
}

/// A problem with input to the BlueZ client (never a BlueZ reply; those are ``DBusError``s).
public struct BlueZClientError: Error, Sendable, Hashable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
