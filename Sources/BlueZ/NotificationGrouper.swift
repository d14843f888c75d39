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
///
/// While a reader needs every answer at once (``setPrompt(_:)``), a window ends with the read
/// round that opened it instead: what the connection read together is handed on together.
final class NotificationGrouper: @unchecked Sendable {
    typealias Deliver = @Sendable ([GattNotification]) -> Void

    private let connection: DBusConnection
    private let deliver: Deliver
    private let lock = NSLock()
    private var interval: Duration = .zero
    private var prompt = false
    private var held: [GattNotification] = []
    private var windowOpen = false
    /// Counts the windows opened: a scheduled end of an earlier one (ended early) does nothing.
    private var window = 0

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

    /// With `true`, windows end with the connection's read round rather than after the
    /// interval, and a window open now ends with the next round; `false` groups by the
    /// interval again. A flash-log readout's board waits at each page's end for the answer
    /// to its last notification: held for a 250 ms window, each page waited for it, and the
    /// readout went at one page per window.
    func setPrompt(_ prompt: Bool) {
        lock.lock()
        self.prompt = prompt
        let endNow = prompt && windowOpen
        let number = window
        lock.unlock()
        if endNow { _ = connection.schedule(after: .zero) { [self] in closeWindow(number) } }
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
        // Zero: after this read round's signals are dispatched and the next read is taken in.
        let interval = prompt ? .zero : max(self.interval, .milliseconds(1))
        window += 1
        let number = window
        lock.unlock()
        let scheduled = connection.schedule(after: interval) { [self] in closeWindow(number) }
        if !scheduled {
            // The connection has ended: nothing will close the window, so nothing is held.
            lock.lock()
            windowOpen = false
            lock.unlock()
            flush()
        }
    }

    private func closeWindow(_ number: Int) {
        lock.lock()
        guard number == window else {
            lock.unlock()
            return
        }
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
