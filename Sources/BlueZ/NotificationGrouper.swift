import DBus
import Foundation

/// Hands `StartNotify` notifications on in groups. Each notification is stamped when its
/// signal is read (so receive times stay as exact as reading at once makes them); what is
/// grouped is only the hand-off to the consumer, which at hundreds of notifications a second
/// costs a thread wake-up each, more than the notification itself.
///
/// Grouping starts off (zero interval: every notification goes on by itself, as a handshake
/// of request and reply needs) and is switched on for the steady stream. Then a notification
/// after a quiet spell goes on at once; it opens a window of `interval` in which further
/// notifications are held and then handed on together, and a window that closes with some
/// opens the next. Everything but switching runs on the connection's I/O thread: the signal
/// handler and the scheduled window ends.
final class NotificationGrouper: @unchecked Sendable {
    typealias Deliver = @Sendable ([GattNotification]) -> Void

    private let connection: DBusConnection
    private let deliver: Deliver
    private let lock = NSLock()
    private var interval: Duration = .zero
    private var held: [GattNotification] = []
    private var windowOpen = false

    init(connection: DBusConnection, deliver: @escaping Deliver) {
        self.connection = connection
        self.deliver = deliver
    }

    /// Groups from now on with `interval` (zero: no grouping; what is held still goes on
    /// when its window closes).
    func setInterval(_ interval: Duration) {
        lock.lock()
        self.interval = max(.zero, interval)
        lock.unlock()
    }

    /// A notification just read.
    func receive(_ notification: GattNotification) {
        lock.lock()
        if interval == .zero, !windowOpen {
            lock.unlock()
            deliver([notification])
            return
        }
        if windowOpen {
            held.append(notification)
            lock.unlock()
            return
        }
        windowOpen = true
        lock.unlock()
        deliver([notification])
        openWindow()
    }

    /// Hands on whatever is held (when the notifications end).
    func flush() {
        lock.lock()
        let batch = held
        held.removeAll()
        lock.unlock()
        if !batch.isEmpty { deliver(batch) }
    }

    private func openWindow() {
        lock.lock()
        let interval = max(self.interval, .milliseconds(1))
        lock.unlock()
        let scheduled = connection.schedule(after: interval) { [self] in closeWindow() }
        if !scheduled {
            // The connection has ended: nothing will close the window, so nothing is held.
            lock.lock()
            windowOpen = false
            lock.unlock()
            flush()
        }
    }

    private func closeWindow() {
        lock.lock()
        let batch = held
        held.removeAll(keepingCapacity: true)
        if batch.isEmpty || interval == .zero { windowOpen = false }
        let reopen = windowOpen
        lock.unlock()
        guard !batch.isEmpty else { return }
        deliver(batch)
        if reopen { openWindow() }
    }
}
