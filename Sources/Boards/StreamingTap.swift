import BlueZ
import Foundation
import MetaWear

/// The streaming fast path of one ``BoardSession``: once the handshake is over, notification
/// batches are decoded and published as events on the thread that delivers them, instead of
/// taking one more hop through the session's inbox. At hundreds of notifications a second
/// each hop (a thread wake-up) costs more CPU than decoding.
///
/// The session switches it on after the handshake (before the start commands, so no sample
/// can be queued in the inbox ahead of it) and off before it reports a lost or stopped link,
/// so samples never follow those states. Publishing holds the lock, so switching off waits
/// for a batch being published.
final class StreamingTap: @unchecked Sendable {
    private let lock = NSLock()
    private let board: BluetoothAddress
    private let events: AsyncStream<[BoardEvent]>.Continuation
    private var decoder: NotificationDecoder?
    private var generation = -1
    private var buttonDetector = ButtonToggleDetector()
    private var lastNotification: ContinuousClock.Instant?
    private var motionSeen = false

    init(board: BluetoothAddress, events: AsyncStream<[BoardEvent]>.Continuation) {
        self.board = board
        self.events = events
    }

    /// Starts publishing notifications of link `generation` with `decoder`.
    func activate(decoder: NotificationDecoder, generation: Int) {
        lock.lock()
        defer { lock.unlock() }
        self.decoder = decoder
        self.generation = generation
        buttonDetector = ButtonToggleDetector()
        lastNotification = .now
        motionSeen = false
    }

    /// Stops publishing; returns once no batch is being published.
    func deactivate() {
        lock.lock()
        defer { lock.unlock() }
        decoder = nil
        generation = -1
        lastNotification = nil
    }

    /// Decodes and publishes `batch` when streaming on link `generation`; false otherwise
    /// (the session handles it).
    func publish(_ batch: [GattNotification], generation: Int) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        guard let decoder, generation == self.generation else { return false }
        // One stream element per batch: the consumer wakes once for all of it.
        var published: [BoardEvent] = []
        published.reserveCapacity(batch.count)
        for notification in batch {
            lastNotification = notification.receivedAt
            let kind: BoardEvent.Kind
            switch decoder.decode(notification.bytes) {
            case .battery(let battery):
                kind = .battery(battery)
            case .button(let button):
                kind = .button(button, togglesSession: buttonDetector.shouldToggle(on: button))
            case let event:
                switch event {
                case .gyro, .accelerometer: motionSeen = true
                default: break
                }
                kind = .sample(event)
            }
            published.append(BoardEvent(board: board, kind: kind, receivedAt: notification.receivedAt,
                                        wallClock: notification.wallClock))
        }
        if !published.isEmpty { events.yield(published) }
        return true
    }

    /// For the watchdog: when the last notification arrived, and whether motion samples
    /// arrived since the previous reading.
    func watchdogReading() -> (last: ContinuousClock.Instant?, motionSeen: Bool) {
        lock.lock()
        defer { lock.unlock() }
        let reading = (lastNotification, motionSeen)
        motionSeen = false
        return reading
    }

    /// When the last notification arrived (nil while not streaming), without touching the
    /// watchdog's motion flag.
    var lastNotificationTime: ContinuousClock.Instant? {
        lock.lock()
        defer { lock.unlock() }
        return lastNotification
    }

    /// A stream restart counts as activity, so the watchdog waits a full timeout again.
    func noteRestart() {
        lock.lock()
        defer { lock.unlock() }
        if decoder != nil { lastNotification = .now }
    }
}
