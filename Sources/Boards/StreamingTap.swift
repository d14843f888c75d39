import BlueZ
import MetaWear

/// Turns one board's notification batches into events while it streams, and keeps what the
/// stream watchdog needs: when the last notification came and whether motion samples came.
struct StreamingTap {
    private let board: BluetoothAddress
    private var buttonDetector = ButtonToggleDetector()
    /// When the last notification arrived; nil while not streaming.
    private(set) var lastNotification: ContinuousClock.Instant?
    private var motionSeen = false

    init(board: BluetoothAddress) {
        self.board = board
    }

    /// Streaming starts (a handshake ended).
    mutating func activate() {
        buttonDetector = ButtonToggleDetector()
        lastNotification = .now
        motionSeen = false
    }

    /// The link ended.
    mutating func deactivate() {
        lastNotification = nil
    }

    /// `batch` decoded with `decoder` as one list of events; with `onlyMotion`, everything
    /// but gyro and accelerometer samples is left out (what arrives during a handshake).
    mutating func events(from batch: [GattNotification], decoder: NotificationDecoder, onlyMotion: Bool = false) -> [BoardEvent] {
        var published: [BoardEvent] = []
        published.reserveCapacity(batch.count)
        for notification in batch {
            let kind: BoardEvent.Kind
            switch decoder.decode(notification.bytes) {
            case .battery(let battery):
                if onlyMotion { continue }
                kind = .battery(battery)
            case .button(let button):
                if onlyMotion { continue }
                kind = .button(button, togglesSession: buttonDetector.shouldToggle(on: button))
            case let event:
                switch event {
                case .gyro, .accelerometer: motionSeen = true
                default: if onlyMotion { continue }
                }
                kind = .sample(event)
            }
            if !onlyMotion { lastNotification = notification.receivedAt }
            published.append(BoardEvent(board: board, kind: kind, receivedAt: notification.receivedAt,
                                        wallClock: notification.wallClock))
        }
        return published
    }

    /// For the watchdog: when the last notification arrived, and whether motion samples
    /// arrived since the previous reading.
    mutating func watchdogReading() -> (last: ContinuousClock.Instant?, motionSeen: Bool) {
        let reading = (lastNotification, motionSeen)
        motionSeen = false
        return reading
    }

    /// A stream restart counts as activity, so the watchdog waits a full timeout again.
    mutating func noteRestart() {
        if lastNotification != nil { lastNotification = .now }
    }
}
