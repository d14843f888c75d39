import Foundation

/// Runs `body`, which blocks (waits for a child process, sleeps between kills), on a thread of
/// its own and suspends the calling task until it returns.
///
/// Swift Testing runs tests in parallel on the cooperative pool, which has one thread per core.
/// A test that blocks such a thread for a minute leaves, on a 2-core machine, one thread for
/// every other test: with two such tests at once the whole run stalls (no CPU used, no
/// progress) and other tests' wall-clock deadlines expire. Long blocking tests must not hold
/// a pool thread.
public func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            do { continuation.resume(returning: try body()) } catch { continuation.resume(throwing: error) }
        }
        thread.name = "test-blocking-work"
        thread.start()
    }
}
