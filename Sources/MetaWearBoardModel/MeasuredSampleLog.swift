/// A run of consecutive samples one sensor of a simulated board measured, whether or not any
/// of them left the board: the first and last index and when the board took them.
public struct MeasuredRun: Sendable, Hashable {
    /// Board-side index of the first sample of the run.
    public var first: UInt64
    /// Board-side index of the last sample of the run (inclusive).
    public var last: UInt64
    /// Simulated time (ns since the board was created) the first sample was taken.
    public var firstNanoseconds: UInt64
    /// Simulated time the last sample was taken.
    public var lastNanoseconds: UInt64
}

/// Every sample a board measured, kept as runs of consecutive indices: what a gateway that
/// loses nothing (its stream and the board's flash log together) must end up with. A test
/// compares this with what the gateway recorded; the samples that reached the link are a
/// subset (the simulator's delivered runs).
public struct MeasuredSampleLog: Sendable, Hashable {
    /// More runs than this (sensors started and stopped very often) drop the oldest ones.
    public static let runLimit = 100_000
    /// A pause longer than this between two consecutive samples starts a new run (sensors
    /// stopped and started again keep counting without a gap), so a run's times can be
    /// interpolated.
    public static let pauseNanoseconds: UInt64 = 250_000_000

    /// The runs by sensor, oldest first.
    public private(set) var runs: [SimulatedSensorKind: [MeasuredRun]] = [:]

    /// An empty log.
    public init() {}

    /// Sample `index` of `sensor` was taken at `nanoseconds`.
    public mutating func record(_ sensor: SimulatedSensorKind, index: UInt64, at nanoseconds: UInt64) {
        // Mutated in place: a copy of the list per sample would cost a copy of every run.
        if let last = runs[sensor]?.last, index == last.last &+ 1, nanoseconds &- last.lastNanoseconds <= Self.pauseNanoseconds {
            let position = runs[sensor]!.count - 1
            runs[sensor]![position].last = index
            runs[sensor]![position].lastNanoseconds = nanoseconds
            return
        }
        runs[sensor, default: []].append(MeasuredRun(first: index, last: index, firstNanoseconds: nanoseconds, lastNanoseconds: nanoseconds))
        if let count = runs[sensor]?.count, count > Self.runLimit { runs[sensor]!.removeFirst(count - Self.runLimit) }
    }
}
