import CDBus
import Foundation
import Synchronization

/// One outstanding method call: bridges libdbus's pending-call notification (I/O thread) to
/// the awaiting task, exactly once, whichever comes first of reply, timeout error,
/// cancellation or disconnection.
final class ReplyWaiter: @unchecked Sendable {
    private enum State {
        case waiting
        case suspended(CheckedContinuation<DBusMessage, any Error>)
        case finished
    }

    private let state = Mutex<(State, Result<DBusMessage, any Error>?)>((.waiting, nil))
    /// The libdbus pending call, taken exactly once by whoever finishes it.
    private let pendingLock = NSLock()
    private var pending: OpaquePointer?
    /// The connection that tracks this waiter until it completes (I/O thread).
    weak var core: ConnectionCore?

    func install(_ continuation: CheckedContinuation<DBusMessage, any Error>) {
        let early: Result<DBusMessage, any Error>? = state.withLock { value in
            if let result = value.1 {
                value.0 = .finished
                return result
            }
            value.0 = .suspended(continuation)
            return nil
        }
        if let early { continuation.resume(with: early) }
    }

    var isFinished: Bool { state.withLock { $0.1 != nil } }

    /// Delivers the outcome; later outcomes are ignored.
    func finish(_ result: Result<DBusMessage, any Error>) {
        let continuation: CheckedContinuation<DBusMessage, any Error>? = state.withLock { value in
            guard value.1 == nil else { return nil }
            value.1 = result
            if case .suspended(let continuation) = value.0 {
                value.0 = .finished
                return continuation
            }
            return nil
        }
        continuation?.resume(with: result)
    }

    func setPending(_ call: OpaquePointer) {
        pendingLock.lock()
        pending = call
        pendingLock.unlock()
    }

    private func takePending() -> OpaquePointer? {
        pendingLock.lock()
        defer { pendingLock.unlock() }
        let call = pending
        pending = nil
        return call
    }

    /// Takes the reply from the completed pending call (I/O thread, or the sending thread
    /// when the reply beat the notification's installation).
    func complete() {
        guard let pending = takePending() else { return }
        let reply = dbus_pending_call_steal_reply(pending)
        dbus_pending_call_unref(pending)
        guard let reply else {
            finish(.failure(DBusError.disconnected("the call was cancelled before a reply came")))
            return
        }
        defer { dbus_message_unref(reply) }
        do {
            let message = try MessageReader.read(reply)
            if let error = message.error {
                finish(.failure(error))
            } else {
                finish(.success(message))
            }
        } catch {
            finish(.failure(error))
        }
    }

    /// I/O thread: abandons the pending call (task cancelled or connection closing).
    func cancelPending() {
        guard let pending = takePending() else { return }
        dbus_pending_call_cancel(pending)
        dbus_pending_call_unref(pending)
    }
}
