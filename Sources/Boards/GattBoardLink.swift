import Basics
import BlueZ
import DBus
import MetaWear

/// A ``BoardLink`` over BlueZ's D-Bus GATT API: command writes and notifications of one
/// device through a ``BoardNotifySession``, one link per connection of the board.
final class GattBoardLink: BoardLink {
    let notifications: AsyncStream<[GattNotification]>
    /// The notify session this link uses (kept by the transport through drops with
    /// ``NotificationDelivery/sessionKeptOverDrops``).
    let session: BoardNotifySession
    private let client: BlueZClient

    /// Batches a link may hold for its session: during a handshake each notification is a
    /// batch of its own (about 15 s at 267 notifications/s), while streaming a batch is a
    /// whole grouping interval.
    static let bufferedBatches = 4096
    /// The links' notification streams (every link's counts here).
    static let notificationGauge = StreamGauge(name: "link_notifications", capacity: bufferedBatches)

    /// A link on `session`: its notifications from now on (and what waited since the last
    /// link) go to this link's stream.
    init(session: BoardNotifySession, client: BlueZClient) {
        self.session = session
        self.client = client
        let (stream, continuation) = AsyncStream.makeStream(of: [GattNotification].self,
                                                            bufferingPolicy: .bufferingOldest(Self.bufferedBatches))
        notifications = stream
        session.sink.attach(continuation)
    }

    func write(_ packet: Packet) async throws {
        try await session.link.write(packet.bytes, to: session.command, withResponse: packet.requiresWriteWithResponse)
    }

    /// Writes `packets` in order; write-without-response ones all at once, without waiting
    /// for bluetoothd's answer to each (``GattLink/writeCommandsInOrder(_:to:)``).
    func writeInOrder(_ packets: [Packet]) async throws {
        if packets.contains(where: \.requiresWriteWithResponse) {
            for packet in packets { try await write(packet) }
        } else {
            try await session.link.writeCommandsInOrder(packets.map(\.bytes), to: session.command)
        }
    }

    /// Sends a stop's `packets` (write-without-response commands) in order once the link's
    /// write slot is free, however long a write before them holds it, without waiting for
    /// bluetoothd's answers (``GattLink/sendCommandsInOrder(_:to:)``, ``BlueZBoardTransport``'s stop).
    func sendStopCommands(_ packets: [Packet]) async throws {
        try await session.link.sendCommandsInOrder(packets.map(\.bytes), to: session.command)
    }

    /// Asks for the link's end (`Device1.Disconnect` of `device`, unanswered) on the link's own
    /// connection, so bluetoothd takes it after the stop's commands (``GattLink/requestDisconnect(_:)``).
    func requestDisconnect(_ device: DBusObjectPath) throws {
        try session.link.requestDisconnect(device)
    }

    func readDeviceInformation(_ field: DeviceInformationField) async -> DeviceInformationRead {
        guard let characteristic = await client.characteristic(field.uuid, under: session.device) else { return .notExported }
        guard let bytes = try? await session.link.read(characteristic.path) else { return .failed }
        return .value(String(decoding: bytes, as: UTF8.self))
    }

    func hostReportedIdentity() async -> HostReportedIdentity {
        let info = await client.device(at: session.device)
        var identity = HostReportedIdentity(modalias: info?.modalias, batteryPercentage: info?.batteryPercentage)
        if identity.batteryPercentage == nil, let level = await client.characteristic(Self.batteryLevel, under: session.device),
           let bytes = try? await session.link.read(level.path), let percent = bytes.first {
            identity.gattBatteryLevel = percent
        }
        return identity
    }

    /// Battery Level (2A19) of the Battery service.
    static let batteryLevel = "00002a19-0000-1000-8000-00805f9b34fb"

    func groupNotifications(_ interval: Duration, readCoalescing: Duration) async {
        await session.link.groupNotifications(interval)
        if readCoalescing > .zero { await session.link.coalesceNotificationReads(readCoalescing) }
    }

    func readPromptly(_ promptly: Bool) async {
        await session.link.readPromptly(promptly)
    }

    var droppedNotifications: Int { session.sink.dropped }

    /// Reads replies at once again, so a stop's writes are not slowed by grouped reads.
    func prepareForStop() async {
        await session.link.coalesceNotificationReads(.zero)
    }

    func close() async {
        await session.close()
    }
}

/// Why a link could not be opened.
struct LinkOpeningError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
