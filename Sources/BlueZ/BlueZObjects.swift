import DBus

/// An `Adapter1` as currently mirrored.
public struct AdapterInfo: Hashable, Sendable {
    public var path: DBusObjectPath
    public var address: String?
    public var powered: Bool
    public var discovering: Bool
}

/// A `Device1` as currently mirrored.
public struct DeviceInfo: Hashable, Sendable {
    public var path: DBusObjectPath
    public var address: BluetoothAddress
    public var adapter: DBusObjectPath?
    public var name: String?
    public var rssi: Int16?
    public var connected: Bool
    public var servicesResolved: Bool
    /// Advertised, later resolved, service UUIDs (lower case).
    public var uuids: [String]
    /// `Modalias` (`bluetooth:v…p…d…`): set by bluetoothd's deviceinfo plugin from the
    /// device's PnP ID (Device Information 2A50), also when that service is not exported.
    public var modalias: String? = nil
    /// `org.bluez.Battery1.Percentage`: the battery plugin's reading while connected.
    public var batteryPercentage: UInt8? = nil
}

/// A `GattCharacteristic1` as currently mirrored.
public struct GattCharacteristicInfo: Hashable, Sendable {
    public var path: DBusObjectPath
    /// 128-bit UUID, lower case.
    public var uuid: String
    public var flags: [String]
    /// Whether BlueZ offers `AcquireNotify` here (the `NotifyAcquired` property is present).
    public var offersAcquireNotify: Bool
    /// ATT MTU when BlueZ reports it (5.62+).
    public var mtu: UInt16?
}

/// One advertisement seen while discovering.
public struct Advertisement: Hashable, Sendable {
    public var address: BluetoothAddress
    public var name: String?
    public var rssi: Int16?
    public var devicePath: DBusObjectPath
    public var uuids: [String]
}

/// What a board session needs to know about its device, derived from the mirror.
public struct DeviceFacts: Hashable, Sendable {
    /// `org.bluez` has an owner.
    public var blueZAvailable: Bool
    /// The adapter in use (preferred, else the first powered one).
    public var adapter: DBusObjectPath?
    public var adapterPowered: Bool
    /// The `Device1` path under that adapter, when the object exists.
    public var device: DBusObjectPath?
    public var connected: Bool
    public var servicesResolved: Bool
}

extension [String: DBusValue] {
    func string(_ key: String) -> String? { try? self[key]?.as(String.self) }
    func bool(_ key: String) -> Bool? { try? self[key]?.as(Bool.self) }
    func strings(_ key: String) -> [String]? { try? self[key]?.as([String].self) }
    func path(_ key: String) -> DBusObjectPath? { try? self[key]?.as(DBusObjectPath.self) }
}

extension DBusObjectManagerClient.Interfaces {
    func adapterInfo(at path: DBusObjectPath) -> AdapterInfo? {
        guard let properties = self[BlueZNames.adapter] else { return nil }
        return AdapterInfo(path: path, address: properties.string("Address"),
                           powered: properties.bool("Powered") ?? false,
                           discovering: properties.bool("Discovering") ?? false)
    }

    func deviceInfo(at path: DBusObjectPath) -> DeviceInfo? {
        guard let properties = self[BlueZNames.device],
              let text = properties.string("Address"), let address = BluetoothAddress(text) else { return nil }
        return DeviceInfo(path: path, address: address, adapter: properties.path("Adapter"),
                          name: properties.string("Name"), rssi: try? properties["RSSI"]?.as(Int16.self),
                          connected: properties.bool("Connected") ?? false,
                          servicesResolved: properties.bool("ServicesResolved") ?? false,
                          uuids: (properties.strings("UUIDs") ?? []).map { $0.lowercased() },
                          modalias: properties.string("Modalias"),
                          batteryPercentage: try? self[BlueZNames.battery]?["Percentage"]?.as(UInt8.self))
    }

    func characteristicInfo(at path: DBusObjectPath) -> GattCharacteristicInfo? {
        guard let properties = self[BlueZNames.gattCharacteristic], let uuid = properties.string("UUID") else { return nil }
        return GattCharacteristicInfo(path: path, uuid: uuid.lowercased(), flags: properties.strings("Flags") ?? [],
                                      offersAcquireNotify: properties["NotifyAcquired"] != nil,
                                      mtu: try? properties["MTU"]?.as(UInt16.self))
    }
}
