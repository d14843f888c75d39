import Basics
import BlueZ
import DBus
import MetaWear

/// A ``BoardLink`` over BlueZ's D-Bus GATT API: a ``GattLink`` (its own D-Bus connection)
/// on the MetaWear command and notify characteristics of one device.
final class GattBoardLink: BoardLink {
    let notifications: AsyncStream<[GattNotification]>
    private let link: GattLink
    private let command: DBusObjectPath
    private let device: DBusObjectPath
    private let client: BlueZClient

    /// Batches a link may hold for its session: during a handshake each notification is a
    /// batch of its own (about 15 s at 267 notifications/s), while streaming a batch is a
    /// whole grouping interval.
    static let bufferedBatches = 4096
    /// The links' notification streams (every link's counts here).
    static let notificationGauge = StreamGauge(name: "link_notifications", capacity: bufferedBatches)

    private init(link: GattLink, command: DBusObjectPath, device: DBusObjectPath, client: BlueZClient,
                 notifications: AsyncStream<[GattNotification]>) {
        self.link = link
        self.command = command
        self.device = device
        self.client = client
        self.notifications = notifications
    }

    /// Opens a link to `device` with notifications on (read at once until
    /// ``groupNotifications(_:readCoalescing:)``). `onEnd` is called once when its
    /// notifications end, closed by us or by bluetoothd (the link dropped).
    static func open(device: DBusObjectPath, client: BlueZClient, options: BoardSessionOptions,
                     onEnd: @escaping @Sendable () -> Void) async throws -> GattBoardLink {
        guard let command = await client.characteristic(MetaWearGATT.command, under: device),
              let notify = await client.characteristic(MetaWearGATT.notify, under: device)
        else { throw LinkOpeningError("MetaWear characteristics missing") }
        let link = try await GattLink.open(busAddress: client.busAddress, minimumWriteInterval: options.minimumWriteInterval)
        let (stream, continuation) = AsyncStream.makeStream(of: [GattNotification].self,
                                                            bufferingPolicy: .bufferingOldest(bufferedBatches))
        do {
            try await link.subscribe(to: notify, delivery: options.notificationDelivery, coalescing: .zero,
                                     onBatch: { notificationGauge.record(continuation.yield($0)) }, onEnd: {
                continuation.finish()
                onEnd()
            })
        } catch {
            await link.close()
            throw LinkOpeningError("cannot enable notifications: \(error)")
        }
        return GattBoardLink(link: link, command: command.path, device: device, client: client, notifications: stream)
    }

    func write(_ packet: Packet) async throws {
        try await link.write(packet.bytes, to: command, withResponse: packet.requiresWriteWithResponse)
    }

    func readDeviceInformation(_ field: DeviceInformationField) async -> DeviceInformationRead {
        guard let characteristic = await client.characteristic(field.uuid, under: device) else { return .notExported }
        guard let bytes = try? await link.read(characteristic.path) else { return .failed }
        return .value(String(decoding: bytes, as: UTF8.self))
    }

    func hostReportedIdentity() async -> HostReportedIdentity {
        let info = await client.device(at: device)
        var identity = HostReportedIdentity(modalias: info?.modalias, batteryPercentage: info?.batteryPercentage)
        if identity.batteryPercentage == nil, let level = await client.characteristic(Self.batteryLevel, under: device),
           let bytes = try? await link.read(level.path), let percent = bytes.first {
            identity.gattBatteryLevel = percent
        }
        return identity
    }

    /// Battery Level (2A19) of the Battery service.
    static let batteryLevel = "00002a19-0000-1000-8000-00805f9b34fb"

    func groupNotifications(_ interval: Duration, readCoalescing: Duration) async {
        await link.groupNotifications(interval)
        if readCoalescing > .zero { await link.coalesceNotificationReads(readCoalescing) }
    }

    /// Reads replies at once again, so a stop's writes are not slowed by grouped reads.
    func prepareForStop() async {
        await link.coalesceNotificationReads(.zero)
    }

    func close() async {
        await link.close()
    }
}

/// Why a link could not be opened.
struct LinkOpeningError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
