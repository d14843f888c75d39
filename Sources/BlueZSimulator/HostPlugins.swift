import DBus

/// What bluetoothd's own GATT plugins add to a connected board's device object once its
/// services are resolved (BlueZ `profiles/deviceinfo/deviceinfo.c`, `profiles/battery/battery.c`,
/// `src/battery.c`), whether or not the Device Information and Battery services are also
/// exported as GATT objects:
/// - deviceinfo reads the PnP ID (2A50) and sets `Device1.Modalias` (`bluetooth:v…p…d…`);
///   a board without 2A50 never gets one. The value stays with the device object.
/// - battery reads the level (2A19), enables its notifications and only then registers
///   `org.bluez.Battery1` on the device with `Percentage` (`y`, 0-100); it is removed when the
///   link goes (`batt_disconnect`). `Source` is experimental in 5.66 (`-E` only): left out.
extension BlueZSimulator {
    static let batteryInterface = "org.bluez.Battery1"

    func runHostPlugins(_ device: SimulatedDevice) async {
        if let modalias = device.modalias, !device.modaliasKnown {
            device.modaliasKnown = true
            update(device.path, Self.deviceInterface, ["Modalias": .string(modalias)])
        }
        guard !device.batteryPluginOff, !device.batteryInterfaceExported, let bluez else { return }
        let percentage = device.model.batteryPercent
        // bluetoothd registers no Battery1 for a level above 100 (`property_percentage_exists`).
        guard percentage <= 100 else { return }
        device.batteryInterfaceExported = true
        let interface = storedInterface(Self.batteryInterface, path: device.path, values: [("Percentage", .byte(percentage))])
        do {
            try await bluez.export(DBusExportedObject(interface), at: device.path)
        } catch {
            log("mwsim: cannot export Battery1 on \(device.path): \(error)")
        }
    }

    /// The link is gone: the battery plugin unregisters `Battery1`.
    func removeBatteryInterface(_ device: SimulatedDevice) {
        guard device.batteryInterfaceExported else { return }
        device.batteryInterfaceExported = false
        properties[device.path]?[Self.batteryInterface] = nil
        try? bluez?.unexport(device.path, interfaces: [Self.batteryInterface])
    }
}
