import Foundation

/// The system clock (wall time), read beside the monotonic clock so a step of it is noticed
/// (``Recording/TimeBase/readWallClock(wallNanoseconds:monotonicNanoseconds:)``); tests step a fake one.
public protocol WallClock: Sendable {
    /// Nanoseconds since the Unix epoch, now.
    func nanosecondsSinceEpoch() -> Int64
}

/// The system's wall clock (`CLOCK_REALTIME` through `Date`).
public struct SystemWallClock: WallClock {
    public init() {}
    public func nanosecondsSinceEpoch() -> Int64 { Int64(Date().timeIntervalSince1970 * 1e9) }
}
