import Foundation

/// Runs an async operation at most once, however many callers ask for it, and lets every
/// caller wait for its end (shutdown paths are reached from a graceful-shutdown handler, a
/// cancellation handler and the normal end of `run()` alike).
final class OnceTask: @unchecked Sendable {
    private let lock = NSLock()
    private var task: Task<Void, Never>?
    private let operation: @Sendable () async -> Void

    init(_ operation: @escaping @Sendable () async -> Void) {
        self.operation = operation
    }

    /// Starts the operation unless it already started.
    @discardableResult
    func begin() -> Task<Void, Never> {
        lock.lock()
        defer { lock.unlock() }
        if let task { return task }
        let started = Task { await operation() }
        task = started
        return started
    }

    /// Starts the operation if needed and waits for it (an unstructured task: it completes
    /// even when the caller is cancelled).
    func finish() async {
        await begin().value
    }
}
