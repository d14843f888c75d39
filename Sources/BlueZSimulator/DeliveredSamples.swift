#if canImport(Glibc)
import Glibc
#endif
import MetaWearBoardModel

/// A run of consecutive stream samples of one sensor that reached a subscriber (StartNotify
/// or AcquireNotify), with the wall-clock times the first and the last of them were handed
/// over. The soak compares these, sample by sample, with what reached the upstream.
/// ``BlueZSimulator/measuredRuns(_:sensor:)`` gives the samples a board took in the same form,
/// timed when they were taken.
public struct DeliveredRun: Sendable, Hashable {
    /// Board-side index of the first sample of the run.
    public var first: UInt64
    /// Board-side index of the last sample of the run (inclusive).
    public var last: UInt64
    /// When the first sample was handed to a subscriber, µs since the Unix epoch
    /// (CLOCK_REALTIME, so another process on the same machine can line it up with its own events).
    public var firstMicroseconds: UInt64
    /// When the last sample was handed to a subscriber, µs since the Unix epoch.
    public var lastMicroseconds: UInt64
}

/// Every stream sample a board handed to a subscriber, kept as runs of consecutive indices:
/// a gap between runs is a stall, a link that was down, or a notification nobody listened to.
struct DeliveredSampleLog {
    /// More runs than this (a pathological fault storm) drop the oldest ones.
    static let runLimit = 100_000
    /// A pause longer than this between two consecutive samples starts a new run, so a run's
    /// times can be interpolated: a board whose sensors were stopped (by a handshake) and
    /// started again continues its counter without a gap, and one run over the pause made
    /// the soak place samples seconds before they were handed over.
    static let pauseMicroseconds: UInt64 = 250_000
    private(set) var runs: [SimulatedSensorKind: [DeliveredRun]] = [:]

    /// Records the samples of one stream notification that reached a subscriber. `newest` is
    /// the index of the newest sample the board has produced, to extend the 16-bit index the
    /// notification carries (x of every simulated sample) to the board's full counter.
    mutating func record(_ bytes: [UInt8], at now: UInt64 = nowMicroseconds(),
                         newestIndex newest: (SimulatedSensorKind) -> UInt64?) {
        guard bytes.count >= 8 else { return }
        let sensor: SimulatedSensorKind
        switch bytes[0] {
        case 0x13: sensor = .gyro
        case 0x03: sensor = .accelerometer
        default: return
        }
        guard bytes[1] >= 0x04, bytes[1] != 0x80, let newest = newest(sensor) else { return }
        let samples = (bytes.count - 2) / 6
        for sample in 0..<samples {
            let offset = 2 + sample * 6
            let low = UInt64(bytes[offset]) | UInt64(bytes[offset + 1]) << 8
            let candidate = (newest & ~0xFFFF) | low
            let index = candidate <= newest ? candidate : candidate &- 0x1_0000
            append(sensor, index, now)
        }
    }

    private mutating func append(_ sensor: SimulatedSensorKind, _ index: UInt64, _ now: UInt64) {
        var list = runs[sensor, default: []]
        if var last = list.last, index == last.last &+ 1, now &- last.lastMicroseconds <= Self.pauseMicroseconds {
            last.last = index
            last.lastMicroseconds = now
            list[list.count - 1] = last
        } else {
            list.append(DeliveredRun(first: index, last: index, firstMicroseconds: now, lastMicroseconds: now))
            if list.count > Self.runLimit { list.removeFirst(list.count - Self.runLimit) }
        }
        runs[sensor] = list
    }

    static func nowMicroseconds() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return UInt64(max(0, time.tv_sec)) * 1_000_000 + UInt64(max(0, time.tv_nsec)) / 1_000
    }
}
