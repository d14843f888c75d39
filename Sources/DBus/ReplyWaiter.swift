import CDBus
import Foundation
import Synchronization

/// One outstanding method call: bridges libdbus's pending-call notification (I/O thread) to
/// the awaiting task, exactly once, whichever comes first of reply, timeout error,
/// cancellation or disconnection.
final class ReplyWaiter: @unchecked Sendable {
    private enum State {
        case waiting
        case suspended(UnsafeContinuation<DBusMessage, any Error>)
        case finished
    }

    private let state = Mutex<(State, Result<DBusMessage, any Error>?)>((.waiting, nil))
    /// The libdbus pending call, taken exactly once by whoever finishes it.
    private let pendingLock = NSLock()
    private var pending: OpaquePointer?
    /// The connection that tracks this waiter until it completes (I/O thread).
    weak var core: ConnectionCore?

    func install(_ continuation: UnsafeContinuation<DBusMessage, any Error>) {
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

    /// Delivers the outcome; later outcomes are ignored. With `loop` (only on its I/O
    /// thread) the caller resumes after the loop's dispatch round.
    func finish(_ result: Result<DBusMessage, any Error>, resumingAfterDispatchOf loop: EventLoop? = nil) {
        let continuation: UnsafeContinuation<DBusMessage, any Error>? = state.withLock { value in
            guard value.1 == nil else { return nil }
            value.1 = result
            if case .suspended(let continuation) = value.0 {
                value.0 = .finished
                return continuation
            }
            return nil
        }
        guard let continuation else { return }
        if let loop {
            loop.resumeAfterDispatch(continuation, with: result)
        } else {
            continuation.resume(with: result)
        }
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
    /// when the reply beat the notification's installation). On `loop`'s I/O thread the
    /// caller resumes after the dispatch round (see ``EventLoop/resumeAfterDispatch(_:with:)``).
    func complete(on loop: EventLoop? = nil) {
        guard let pending = takePending() else { return }
        let reply = dbus_pending_call_steal_reply(pending)
        dbus_pending_call_unref(pending)
        let batching = loop.flatMap { $0.onIOThread ? $0 : nil }
        guard let reply else {
            finish(.failure(DBusError.disconnected("the call was cancelled before a reply came")), resumingAfterDispatchOf: batching)
            return
        }
        defer { dbus_message_unref(reply) }
        do {
            let message = try MessageReader.read(reply)
            if let error = message.error {
                finish(.failure(error), resumingAfterDispatchOf: batching)
            } else {
                finish(.success(message), resumingAfterDispatchOf: batching)
            }
        } catch {
            finish(.failure(error), resumingAfterDispatchOf: batching)
        }
    }

    /// I/O thread: abandons the pending call (task cancelled or connection closing).
    func cancelPending() {
        guard let pending = takePending() else { return }
        dbus_pending_call_cancel(pending)
        dbus_pending_call_unref(pending)
    }
}
