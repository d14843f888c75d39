/// Converts `ContinuousClock` instants (what board events and the tick loop carry) to the
/// Recording module's Int64 nanosecond monotonic clock, counted from a fixed origin.
public struct MonotonicTimeline: Sendable {
    /// The instant that is nanosecond 0.
    public let origin: ContinuousClock.Instant

    /// A timeline starting now.
    public init(origin: ContinuousClock.Instant = .now) {
        self.origin = origin
    }

    /// Nanoseconds of `instant` on this timeline (negative before the origin).
    public func nanoseconds(_ instant: ContinuousClock.Instant) -> Int64 {
        let (seconds, attoseconds) = (instant - origin).components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }

    /// Nanoseconds of the current instant.
    public var now: Int64 { nanoseconds(.now) }
}
