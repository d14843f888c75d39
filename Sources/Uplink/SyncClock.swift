import Foundation

/// Time for the sync service: a monotonic reading in seconds and a way to wait for a
/// later reading. Injected so backoff and rate caps are tested without real waiting.
public protocol SyncClock: Sendable {
    /// Seconds on a monotonic scale (any origin).
    func now() -> Double
    /// Returns when `now() >= deadline`; throws `CancellationError` when the task is cancelled.
    func sleep(until deadline: Double) async throws
}

/// The real monotonic clock.
public struct SystemSyncClock: SyncClock {
    private let origin = ContinuousClock.now

    /// A clock starting near zero.
    public init() {}

    public func now() -> Double {
        let d = ContinuousClock.now - origin
        return Double(d.components.seconds) + Double(d.components.attoseconds) * 1e-18
    }

    public func sleep(until deadline: Double) async throws {
        let wait = deadline - now()
        if wait > 0 { try await Task.sleep(for: .seconds(wait)) } else { try Task.checkCancellation() }
    }
}

/// Uniform numbers in [0, 1) for backoff jitter; injected for deterministic tests.
public protocol JitterSource: Sendable {
    /// The next number in [0, 1).
    func next() -> Double
}

/// The system random generator.
public struct SystemJitter: JitterSource {
    /// A source drawing from the system RNG.
    public init() {}
    public func next() -> Double { Double.random(in: 0..<1) }
}
