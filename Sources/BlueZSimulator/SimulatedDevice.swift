import Basics
import DBus
import MetaWearBoardModel

/// The simulator's state for one board: its brain, its BlueZ object and its link.
/// Owned by (and only touched from) the ``BlueZSimulator`` actor.
final class SimulatedDevice {
    let index: Int
    var model: SimulatedBoard
    /// `AA:BB:CC:DD:EE:FF`, upper case.
    let address: String
    let path: DBusObjectPath

    /// BlueZ hides this board's Device Information and Battery services (a plugin claims them).
    var deviceInformationHidden = false
    /// bluetoothd's battery plugin is off (`--noplugin=battery`): no `Battery1`.
    var batteryPluginOff = false
    /// `org.bluez.Battery1` is on the device object (while connected).
    var batteryInterfaceExported = false
    /// The deviceinfo plugin has set `Device1.Modalias` on the current device object.
    var modaliasKnown = false
    /// The advertisement lists no service UUID.
    var advertisesServiceUUID = true
    var deviceExported = false
    var gattExported = false
    /// Out of radio range: not advertised, not connectable.
    var vanished = false
    var connected = false
    var connecting = false
    var servicesResolved = false
    /// Error for the next Connect (fault injection).
    var refuseNextConnect: String?
    /// Last advertisement seen or link activity (temporary-device timer).
    var lastSeen: ContinuousClock.Instant
    var rssi: Int16 = -60

    /// StartNotify sessions on 326a9006, by sender.
    var notifySessions: Set<String> = []
    /// AcquireNotify channel.
    var notifyPipe: NotifyPipe?
    /// The bus name that acquired ``notifyPipe``.
    var notifyPipeOwner: String?
    /// The caller of an `AcquireNotify` waiting for ServicesResolved: bluetoothd 5.66 holds
    /// the notification as acquired from the call on (src/gatt-client.c
    /// `characteristic_acquire_notify` sets `notify_io` at once).
    var pendingAcquireOwner: String?
    /// The notification still held as acquired for a client bluetoothd freed: its caller left
    /// the bus before the answer (``BlueZSimulator/clientLeft(_:)``). Refused to every client
    /// until the device object goes.
    var abandonedAcquire = false
    /// Callers whose waiting `AcquireNotify` a `StopNotify` released: 5.66 drops the call's
    /// message unanswered (src/gatt-client.c `destroy_sock` -> `sock_io_destroy` unrefs
    /// `notify_io->msg`), so the call ends only at its caller's timeout or when the caller
    /// leaves the bus.
    var releasedAcquireCallers: Set<String> = []
    /// The link drops as the next `WriteValue` reaches bluetoothd (``BlueZSimulator/dropLinkAtNextWrite(_:)``).
    var dropLinkAtNextWrite = false
    /// Bumped on every link change so stale link tasks stop.
    var linkGeneration = 0
    var connectedAt: ContinuousClock.Instant?
    /// Notifications waiting for a connection event.
    var linkQueue: [[UInt8]] = []
    var tokens = 0.0
    var lastEvent: ContinuousClock.Instant?
    var dropFraction = 0.0
    /// Bumped by every stall, so only the newest one's timer ends it.
    var stallGeneration = 0
    /// Until then the link's connection events hand on nothing (``BlueZSimulator/delay(_:seconds:)``).
    var deliveryHeldUntil: ContinuousClock.Instant?
    /// Of the link queue, what the delay held and is still to be handed on.
    var heldBacklog = 0
    var requestWriteInFlight = false
    var stats = BoardStats()
    /// Stream samples that reached a subscriber, by index (the soak's ground truth).
    var delivered = DeliveredSampleLog()
    var releases: [LinkRelease] = []
    var random: SeededRandom

    init(index: Int, profile: BoardProfile, seed: UInt64, signal: SimulatedSignal, adapterPath: DBusObjectPath, now: ContinuousClock.Instant,
         flashCapacity: Int? = nil, readoutNotificationsPerSecond: Int = 200) {
        self.index = index
        model = SimulatedBoard(profile: profile, seed: UInt32(truncatingIfNeeded: index + 1))
        model.signal = signal
        if let flashCapacity { model.flashLog.capacity = flashCapacity }
        model.flashLog.readoutInterval = 1_000_000_000 / UInt64(max(1, readoutNotificationsPerSecond))
        address = profile.macAddress.map { hexString([$0]).uppercased() }.joined(separator: ":")
        let element = "dev_" + address.replacingColons()
        path = (try? adapterPath.appending(element)) ?? adapterPath
        lastSeen = now
        random = SeededRandom(seed: seed &+ UInt64(index) &* 0x1000_0001, skipping: 1)
        rssi = Int16(-50 - Int(random.next() % 20))
    }

    func servicePath(_ service: GATTLayout.Service) -> DBusObjectPath {
        (try? path.appending("service" + GATTLayout.hex4(service.handle))) ?? path
    }

    func characteristicPath(_ service: GATTLayout.Service, _ characteristic: GATTLayout.Characteristic) -> DBusObjectPath {
        (try? servicePath(service).appending("char" + GATTLayout.hex4(characteristic.handle))) ?? path
    }

    func descriptorPath(_ service: GATTLayout.Service, _ characteristic: GATTLayout.Characteristic, _ handle: UInt16) -> DBusObjectPath {
        (try? characteristicPath(service, characteristic).appending("desc" + GATTLayout.hex4(handle))) ?? path
    }

    /// Path of the MetaWear notify characteristic 326a9006.
    var notifyCharacteristicPath: DBusObjectPath {
        let service = services[0]
        return characteristicPath(service, service.characteristics[1])
    }

    /// The board's GATT table.
    var services: [GATTLayout.Service] { GATTLayout.services(withPnPID: model.profile.pnpID != nil) }

    /// The services BlueZ exports for this board.
    var exportedServices: [GATTLayout.Service] {
        guard deviceInformationHidden else { return services }
        return services.filter { $0.uuid != GATTLayout.deviceInformationService && $0.uuid != GATTLayout.batteryService }
    }

    /// `Device1.Modalias` once bluetoothd's deviceinfo plugin has read the PnP ID (it stays
    /// with the device object from then on, as bluetoothd stores it); nil for a board without.
    var modalias: String? {
        guard let pnp = model.profile.pnpID, pnp.count == 7, pnp[0] == 1 || pnp[0] == 2 else { return nil }
        func hex(_ low: UInt8, _ high: UInt8) -> String { hexString([high, low]).uppercased() }
        return (pnp[0] == 1 ? "bluetooth" : "usb") + ":v\(hex(pnp[1], pnp[2]))p\(hex(pnp[3], pnp[4]))d\(hex(pnp[5], pnp[6]))"
    }

    /// `Device1.UUIDs` before services are resolved: what the advertisement carries.
    var advertisedUUIDs: [String] { advertisesServiceUUID ? [GATTLayout.metaWearService] : [] }

    /// All GATT object paths, deepest first (for removal).
    var gattPaths: [DBusObjectPath] {
        var paths: [DBusObjectPath] = []
        for service in services {
            for characteristic in service.characteristics {
                if let descriptor = characteristic.descriptorHandle { paths.append(descriptorPath(service, characteristic, descriptor)) }
                paths.append(characteristicPath(service, characteristic))
            }
            paths.append(servicePath(service))
        }
        return paths
    }

    /// Counts the samples in one stream notification and remembers the last index.
    func account(_ bytes: [UInt8]) {
        stats.notificationsEmitted += 1
        guard bytes.count >= 8 else { return }
        let sensor: SimulatedSensorKind
        switch bytes[0] {
        case 0x13: sensor = .gyro
        case 0x03: sensor = .accelerometer
        default: return
        }
        guard bytes[1] >= 0x04, bytes[1] != 0x80 else { return }
        let samples = (bytes.count - 2) / 6
        stats.samplesEmitted[sensor, default: 0] += samples
        // x of the newest sample is its index mod 2^16; the board's counter gives the rest.
        let offset = 2 + (samples - 1) * 6
        let low = UInt64(bytes[offset]) | UInt64(bytes[offset + 1]) << 8
        let next = model.state(sensor).nextSampleIndex
        guard next > 0 else { return }
        let newest = next - 1
        let candidate = (newest & ~0xFFFF) | low
        stats.lastSampleIndex[sensor] = candidate <= newest ? candidate : candidate &- 0x1_0000
    }
}

extension String {
    fileprivate func replacingColons() -> String { String(map { $0 == ":" ? "_" : $0 }) }
}
