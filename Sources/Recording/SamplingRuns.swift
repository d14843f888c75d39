import MetaWear

/// The runs of even sampling in one boot's flash log.
///
/// A run breaks where the step between two logged samples' ticks is not one sample period: the
/// sensor was stopped and started again (every stream restart writes the sensor's start, which
/// pauses it and moves its phase) or an entry is missing. Within a run a sample's position
/// gives its time; a run that no streamed sample anchors is placed by its ticks, averaged over
/// the whole run so the tick's 1.46 ms steps mostly cancel. At rates whose period is not at
/// least two ticks the ticks cannot tell a break from jitter: the boot is then one run.
struct SamplingRuns {
    /// Whether the ticks resolve the sample period (breaks are found only then).
    let resolvesPeriod: Bool
    /// First position of each position's run.
    private var starts: [Int]
    /// One past the last position of each position's run.
    private var ends: [Int]
    /// Prefix sums of the ticks: `tickSums[j]` is the sum of the first `j`.
    private var tickSums: [Double]

    /// The runs of `ticks` (nanoseconds since the boot, in log order) sampled every `period`
    /// nanoseconds.
    init(ticks: [Double], period: Double) {
        let tick = BoardTicks.millisecondsPerTick * 1e6
        resolvesPeriod = period > 2 * tick
        // A sample's tick is the tick of the entry that completed it, which may be one later
        // than its other half's; two such steps in a row are jitter, not a restart.
        let tolerance = max(3 * tick, period / 4)
        starts = Array(repeating: 0, count: ticks.count)
        tickSums = [0]
        tickSums.reserveCapacity(ticks.count + 1)
        for k in ticks.indices {
            tickSums.append(tickSums[k] + ticks[k])
            guard k > 0 else { continue }
            let continues = !resolvesPeriod || abs(ticks[k] - ticks[k - 1] - period) <= tolerance
            starts[k] = continues ? starts[k - 1] : k
        }
        ends = Array(repeating: ticks.count, count: ticks.count)
        for k in ticks.indices.reversed().dropFirst() {
            ends[k] = starts[k + 1] == starts[k] ? ends[k + 1] : k + 1
        }
    }

    /// Whether positions `i` and `j` were sampled in one run.
    func sameRun(_ i: Int, _ j: Int) -> Bool { starts[i] == starts[j] }

    /// Position `k`'s tick as its run's even pace puts it (`tickPeriod` ticks, in nanoseconds,
    /// per sample), the run's phase taken from the mean of all its ticks.
    func evenTick(_ k: Int, tickPeriod: Double) -> Double {
        let start = starts[k], end = ends[k]
        let count = Double(end - start)
        let meanTick = (tickSums[end] - tickSums[start]) / count
        return meanTick + (Double(k - start) - (count - 1) / 2) * tickPeriod
    }
}
