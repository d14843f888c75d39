import CDBus
import Synchronization

/// One outstanding method call: hands its outcome to the awaiting task exactly once,
/// whichever comes first of reply, timeout, cancellation or disconnection.
final class ReplyWaiter: Sendable {
    private enum State {
        case waiting
        case suspended(UnsafeContinuation<DBusMessage, any Error>)
        case finished
    }

    /// The call's serial, which its reply names.
    let serial: UInt32
    private let state = Mutex<(State, Result<DBusMessage, any Error>?)>((.waiting, nil))

    init(serial: UInt32) { self.serial = serial }

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

    /// I/O thread, during dispatch: the call's reply (a method return or an error) arrived.
    func deliver(_ reply: OpaquePointer, loop: EventLoop) {
        do {
            let message = try MessageReader.read(reply)
            if let error = message.error {
                finish(.failure(error), resumingAfterDispatchOf: loop)
            } else {
                finish(.success(message), resumingAfterDispatchOf: loop)
            }
        } catch {
            finish(.failure(error), resumingAfterDispatchOf: loop)
        }
    }
}
