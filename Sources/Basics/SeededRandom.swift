/// The project's one seeded random generator (SplitMix64): small, fast and the same sequence
/// on every platform for a given seed, so backoff jitter, the simulator's link timing and every
/// seeded test replay exactly. Its `description` names the seed, for test messages.
public struct SeededRandom: RandomNumberGenerator, Hashable, Sendable, CustomStringConvertible {
    /// The seed it started from.
    public let seed: UInt64
    private var state: UInt64

    /// A generator whose first value is SplitMix64's first for `seed`, or, with `skipping`,
    /// the one after that many values.
    public init(seed: UInt64, skipping count: Int = 0) {
        self.seed = seed
        state = seed &+ 0x9E37_79B9_7F4A_7C15 &* UInt64(truncatingIfNeeded: max(0, count))
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform double in [0, 1) from the top 53 bits of the next value.
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// A uniform double in [low, high).
    public mutating func uniform(_ low: Double, _ high: Double) -> Double { low + (high - low) * unit() }

    /// `seed 0x…`: what a failing seeded test prints to be replayed.
    public var description: String { "seed 0x" + String(seed, radix: 16) }
}
