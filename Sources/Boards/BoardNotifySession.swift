import BlueZ
import DBus
import MetaWear

/// A board's notifications turned on through BlueZ: a ``GattLink`` (its own D-Bus
/// connection) subscribed to the MetaWear notify characteristic, and the ``NotificationSink``
/// its batches go to. Usually it lives as long as one link; with
/// ``NotificationDelivery/sessionKeptOverDrops`` the transport keeps it through link drops and
/// hands it to the next link, and bluetoothd turns the board's notifications on again by
/// itself when the link comes back.
final class BoardNotifySession: Sendable {
    /// Tells sessions of one transport apart (the link attempt that opened it).
    let id: Int
    let link: GattLink
    let command: DBusObjectPath
    let device: DBusObjectPath
    let sink: NotificationSink

    private init(id: Int, link: GattLink, command: DBusObjectPath, device: DBusObjectPath, sink: NotificationSink) {
        self.id = id
        self.link = link
        self.command = command
        self.device = device
        self.sink = sink
    }

    /// Turns notifications on (handed on one by one until ``GattLink/groupNotifications(_:)``)
    /// on `connection`, a link opened ahead with ``openConnection(client:options:)`` and not
    /// used yet, or on a connection opened now when it is nil or no longer connected.
    /// `onEnd` is called once when the session's notifications end: closed by us, or, for an
    /// acquired socket, by bluetoothd at a drop. `opening` gets the link before notifications
    /// are turned on: whoever stops the board meanwhile closes it (see
    /// ``BlueZBoardTransport/stop(writing:)``).
    static func open(id: Int, device: DBusObjectPath, client: BlueZClient, options: BoardSessionOptions,
                     connection: GattLink? = nil,
                     opening: @Sendable (GattLink) async -> Void = { _ in },
                     onEnd: @escaping @Sendable () -> Void) async throws -> BoardNotifySession {
        guard let command = await client.characteristic(MetaWearGATT.command, under: device),
              let notify = await client.characteristic(MetaWearGATT.notify, under: device)
        else {
            await connection?.close()
            throw LinkOpeningError("MetaWear characteristics missing")
        }
        let link: GattLink
        if let connection, connection.connection.isConnected {
            link = connection
        } else {
            await connection?.close()
            link = try await openConnection(client: client, options: options)
        }
        await opening(link)
        let sink = NotificationSink(limit: GattBoardLink.bufferedBatches)
        do {
            try await link.subscribe(to: notify, delivery: options.notificationDelivery, coalescing: .zero,
                                     onBatch: { sink.deliver($0) }, onEnd: {
                sink.end()
                onEnd()
            })
        } catch {
            await link.close()
            throw LinkOpeningError("cannot enable notifications: \(error)")
        }
        return BoardNotifySession(id: id, link: link, command: command.path, device: device, sink: sink)
    }

    /// A link's own D-Bus connection, open and not subscribed to anything yet: the transport
    /// opens the next link's ahead, while the board is still connected or away.
    static func openConnection(client: BlueZClient, options: BoardSessionOptions) async throws -> GattLink {
        try await GattLink.open(busAddress: client.busAddress, minimumWriteInterval: options.minimumWriteInterval)
    }

    /// Ends the link's stream after what the link received (held by the grouping too), and
    /// keeps the session: what arrives next waits for the next link.
    func detach() async {
        await link.flushGroupedNotifications()
        sink.detach()
    }

    /// Prepares the session for a new link's handshake: every notification handed on by
    /// itself again, replies read at once (the last link may have left grouping on).
    func prepareForNewLink() async {
        await link.groupNotifications(.zero)
        await link.coalesceNotificationReads(.zero)
    }

    /// Turns notifications off and closes the connection; the attached stream finishes after
    /// its last notifications (the subscription's end, on the connection's I/O thread, hands
    /// on what the grouping held and then ends the sink).
    func close() async {
        await link.close()
    }
}
