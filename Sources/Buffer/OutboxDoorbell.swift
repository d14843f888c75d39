import Synchronization

/// Rung by the buffer whenever it queues something for upload (a seal, a submitted survey,
/// requeued dead letters, recovered sessions), so an idle uploader waits for it instead of
/// looking at the outbox on a timer: an idle gateway then has no uploader wake-ups at all.
///
/// A ring is remembered until the next `wait`, so one that comes while the uploader is busy
/// is not lost. Meant for a single waiter (the uploader).
public final class OutboxDoorbell: Sendable {
    private struct State {
        var rung = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    /// A doorbell not rung yet.
    public init() {}

    /// Wakes the waiter, or the next `wait` if none is waiting.
    public func ring() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.rung = true
                return nil
            }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    /// Returns once the doorbell has rung since the last `wait` returned, or when the task is
    /// cancelled (check `Task.isCancelled` to tell which).
    public func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                // Under the lock, so a cancellation either is seen here or finds the waiter.
                let now = state.withLock { state -> Bool in
                    if state.rung || Task.isCancelled {
                        state.rung = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
