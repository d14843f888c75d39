import MetaWear

/// Times for the samples of a sensor the board logs instead of streaming (rates beyond the
/// link, issue 21 part 3), from their board ticks alone: no stream gives anchors.
///
/// A tick is 1.46 ms, coarser than the period at 800 Hz and above, so consecutive samples can
/// share a tick; the board took them at an even pace. A sample's tick says it was taken in
/// [tick, tick + 1) after its boot's origin (the board clock read at connect), so its tick
/// time is the middle of that; the samples of a run are spaced by the sensor's period, the
/// line pulled slowly toward the tick times to follow the board crystal (within a tick of
/// every sample's own). A sample more than two ticks off the line starts a new run (samples
/// the log does not hold: the sensor restarted, a reset). Pure: samples in, times out.
struct LoggedTimeline {
    /// The sensor's nominal period, nanoseconds.
    let period: Double
    /// Where each boot's tick 0 lies on the monotonic clock, by reset UID.
    var origins: [UInt8: Int64] = [:]
    private var unwrappers: [UInt8: TickUnwrapper] = [:]
    private var lastTime: [UInt8: Double] = [:]
    /// Per boot: the last tick recorded and how many samples had it.
    private var recorded: [UInt8: (tick: UInt64, count: Int)] = [:]
    private var seenAtTick: [UInt8: (tick: UInt64, count: Int)] = [:]

    /// A timeline for a sensor sampling at `rateHertz`.
    init(rateHertz: Double) {
        period = 1e9 / rateHertz
    }

    /// Continues boot `uid`'s line after a sample placed at `time` (monotonic ns) by an earlier
    /// gateway (the stored last point of a session a restart interrupted).
    mutating func resume(uid: UInt8, after time: Int64) {
        lastTime[uid] = Double(time)
    }

    private static let tick = BoardTicks.millisecondsPerTick * 1e6
    /// How much of the distance to a sample's tick time the line takes each sample.
    private static let pull = 1.0 / 64

    /// The monotonic time of the next sample of its boot, in readout order; nil when it was
    /// recorded before (a page read again: its tick is behind the last recorded one, or equal
    /// and within the count recorded at that tick) or no clock read gives its boot's origin.
    mutating func place(_ sample: LoggedSample) -> Int64? {
        let uid = sample.resetUID
        guard let origin = origins[uid] else { return nil }
        let ticks = unwrappers[uid, default: TickUnwrapper()].unwrap(sample.tick)
        // Count this sample among those seen with its tick (a page read again starts over).
        let previous = seenAtTick[uid]
        let count = previous.map { $0.tick == ticks ? $0.count + 1 : 1 } ?? 1
        seenAtTick[uid] = (ticks, count)
        if let last = recorded[uid], ticks < last.tick || (ticks == last.tick && count <= last.count) { return nil }
        recorded[uid] = (ticks, count)
        let tickTime = Double(origin) + BoardTicks.milliseconds(ticks) * 1e6 + Self.tick / 2
        var time = tickTime
        if let last = lastTime[uid] {
            let expected = last + period
            if abs(tickTime - expected) <= 2 * Self.tick { time = expected + (tickTime - expected) * Self.pull }
            time = max(time, last + 1)
        }
        lastTime[uid] = time
        return Int64(time.rounded())
    }
}
