import BlueZ
import MetaWear

/// What a ``BoardSession`` needs from the radio: a board found, connected and reconnected,
/// handed over as one ``BoardLink`` per connection. The D-Bus GATT implementation is
/// ``BlueZBoardTransport``; tests drive the session with an in-memory one, without a bus.
public protocol BoardTransport: Sendable {
    /// Connection progress and links, in order (bounded); finishes after ``stop(writing:)``.
    var events: AsyncStream<BoardTransportEvent> { get }
    /// Finds and connects the board and keeps it connected until ``stop(writing:)`` or
    /// cancellation.
    func run() async
    /// The session gave up on the current link (handshake failed, stream silent, write
    /// failed): drop it and connect again.
    func linkFailed(_ reason: String) async
    /// Ends everything within a bounded time: writes `commands` on whatever path to the
    /// board is open, closes the link (its notifications drained), disconnects, finishes
    /// ``events`` and ends ``run()``. `linkEnding` is called once, as soon as the link's end is
    /// in the board's and bluetoothd's hands (the commands written or given up, `Disconnect`
    /// asked), before the rest of the stop (the link's close, scanning off): what a shutdown
    /// waits for before it lets the gateway's other services stop (issue 18 §2.7).
    func stop(writing commands: [Packet], linkEnding: @escaping @Sendable () -> Void) async
}

extension BoardTransport {
    /// ``stop(writing:linkEnding:)`` when nobody waits for the link's end to be asked.
    public func stop(writing commands: [Packet]) async {
        await stop(writing: commands, linkEnding: {})
    }
}

/// One step of a ``BoardTransport``'s connection.
public enum BoardTransportEvent: Sendable {
    /// Looking for the board or connecting; `failures` counts failed attempts since the
    /// last good link (0 while the first attempt or a reconnect after a loss runs).
    case connecting(failures: Int, lastFailure: String?)
    /// A link is up with notifications on: the handshake may start.
    case linkReady(any BoardLink)
    /// The link is gone. Its notification stream finishes once what it received is handed on.
    case linkLost(reason: String)
}

/// One BLE connection to a board: command writes, notifications, DIS reads.
public protocol BoardLink: Sendable {
    /// Notification batches in arrival order (bounded). Finishes when the link is closed,
    /// after everything the board delivered before has been handed on.
    var notifications: AsyncStream<[GattNotification]> { get }
    /// Writes `packet` to the command characteristic (with response when it requires one);
    /// writes leave in call order.
    func write(_ packet: Packet) async throws
    /// Writes `packets` in order as one batch, without waiting for each write's answer before
    /// sending the next: a sequence the board must get back to back (logging stopped and
    /// started again around a trim leaves unlogged whatever the board samples in between).
    func writeInOrder(_ packets: [Packet]) async throws
    /// Reads a Device Information string.
    func readDeviceInformation(_ field: DeviceInformationField) async -> DeviceInformationRead
    /// What bluetoothd learnt about the board through its own plugins (Modalias, Battery1),
    /// and the GATT battery level when bluetoothd exports that service but no Battery1.
    func hostReportedIdentity() async -> HostReportedIdentity
    /// Groups notifications for the steady stream (see
    /// ``BoardSessionOptions/notificationCoalescing``); called once a handshake is over.
    func groupNotifications(_ interval: Duration, readCoalescing: Duration) async
    /// While a flash-log readout runs (`true`), notifications are read as they arrive, not
    /// after a rest: a readout comes far faster than a stream, and bluetoothd drops what an
    /// `AcquireNotify` socket cannot take (278 small datagrams on a default kernel). `false`
    /// rests as ``groupNotifications(_:readCoalescing:)`` said again.
    func readPromptly(_ promptly: Bool) async
    /// Notifications this link received and could not hand on because ``notifications`` was
    /// full (its consumer fell that far behind): each one is lost, which a running flash-log
    /// readout must hear of (it asks again).
    var droppedNotifications: Int { get }
    /// Turns notifications off and ends the link; ``notifications`` finishes after its last
    /// notifications. Idempotent.
    func close() async
}

/// The outcome of a Device Information read.
public enum DeviceInformationRead: Hashable, Sendable {
    /// The string.
    case value(String)
    /// The characteristic is exported but the read failed.
    case failed
    /// No such characteristic (BlueZ hides Device Information on some systems).
    case notExported
}
