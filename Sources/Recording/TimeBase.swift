import Foundation
import GNSS

/// Which clock a session's times come from, best first.
public enum TimeSource: String, Hashable, Sendable, CaseIterable, Comparable {
    /// The system clock was synchronised (NTP/PTP/chrony) and used as is.
    case systemClockSynchronised = "system_clock_synchronised"
    /// The system clock was not synchronised; times were corrected by the GNSS UTC offset.
    case gnssCorrected = "gnss_corrected"
    /// The system clock was not synchronised and no GNSS time was available.
    case unsynchronisedSystemClock = "unsynchronised_system_clock"

    private var rank: Int {
        switch self {
        case .systemClockSynchronised: 0
        case .gnssCorrected: 1
        case .unsynchronisedSystemClock: 2
        }
    }

    /// Ordered best to worst, so `max` of the sources used is the weakest.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
}

/// Maps the monotonic receive clock to Unix epoch time and decides the time source.
///
/// Sample times are rebuilt on a monotonic clock (the wall clock may step); they become epoch
/// times through `wall − monotonic` sampled at start, plus the GNSS correction when the system
/// clock is not synchronised. GNSS cycles are reported tens to hundreds of milliseconds after
/// their epoch, so each fix's `systemClockOffset` underestimates the true offset by that
/// latency: the largest offset of the recent fixes is the closest one.
///
/// That largest offset falls back when it leaves the recent fixes, by as much as the reports'
/// latency varies (700 ms seen in the soak on a loaded machine). Applied at once, a fall moves
/// the times of the samples that follow back over the ones before, which hid a link's gap
/// (the first points after it overlapped the last before it) and left the samples of a flash
/// log's backfill outside the gap they belong to. So the correction follows a fall slowly
/// (``slewPerSecond``), moves up at once (a less delayed report is a better estimate) and
/// steps by more than ``stepThreshold`` at once (a clock that was wrong); and each monotonic
/// time is converted with the correction that applied at that time, so a time converted again
/// later (a logged sample placed after a download) lands where the stream put it.
///
/// The system clock may be stepped while the process runs (`date -s`, fake-hwclock, timesyncd's
/// first NTP step once a network comes). Every time stays on the clock read at start (the
/// reference): the caller reports fresh readings of both clocks (``readWallClock(wallNanoseconds:monotonicNanoseconds:)``),
/// a change of `wall − monotonic` beyond ``stepThreshold`` is a step, and each later fix's offset
/// (measured against the stepped clock) is taken back onto the reference by it. Once the clock is
/// synchronised, the stepped clock is the true one: the correction is the step. Before, a step
/// moved every time after it by the step (the fix's offset), and a clock synchronised by a step
/// left new times labelled synchronised on the old clock, hours off on a board without a
/// battery-backed clock.
public struct TimeBase: Sendable {
    /// Epoch nanoseconds minus monotonic nanoseconds, sampled once: the reference clock.
    public let wallMinusMonotonic: Int64
    /// How far the system clock was stepped since that reading (its last step), nanoseconds.
    public private(set) var wallStep: Int64 = 0
    /// Whether the system clock is synchronised (from the caller: adjtimex/timedatectl).
    public var systemClockSynchronised: Bool
    private var recentOffsets: [Double] = []
    /// The corrections applied (seconds), each from a monotonic time on, oldest first.
    private var applied: [(since: Int64, correction: Double)] = []
    /// When the last fix was observed (the slew counts from there).
    private var lastObservedAt: Int64?

    /// Fastest the correction follows a fall of the best offset: 1 ms per second, ten times a
    /// crystal's worst drift, a hundredth of a 100 Hz period between two samples.
    public static let slewPerSecond = 0.001
    /// A change of the best offset larger than this is a clock that was wrong: applied at once.
    public static let stepThreshold = 2.0
    /// How long the applied corrections are kept for converting earlier times, nanoseconds.
    static let historyNanoseconds: Int64 = 3_600_000_000_000

    /// A time base from one reading of both clocks.
    public init(wallNanoseconds: Int64, monotonicNanoseconds: Int64, systemClockSynchronised: Bool) {
        wallMinusMonotonic = wallNanoseconds - monotonicNanoseconds
        self.systemClockSynchronised = systemClockSynchronised
    }

    /// Takes a reading of both clocks at one instant: a `wall − monotonic` that moved by more
    /// than ``stepThreshold`` since the last step is a new step of the system clock (slow NTP
    /// slewing below it is not: it is the synchronisation's business, not a wrong clock).
    /// Returns whether it was a step.
    @discardableResult
    public mutating func readWallClock(wallNanoseconds: Int64, monotonicNanoseconds: Int64) -> Bool {
        let step = wallNanoseconds - monotonicNanoseconds - wallMinusMonotonic
        guard abs(Double(step - wallStep)) > Self.stepThreshold * 1e9 else { return false }
        wallStep = step
        return true
    }

    /// Feeds a fix received at monotonic `now`; its UTC offset is used while the system clock
    /// is unsynchronised. A simulator's or manually entered fix says nothing about the time,
    /// so it is not used.
    public mutating func observe(_ fix: GNSSFix, at now: Int64) {
        guard fix.status != .simulated, fix.status != .manual else { return }
        // Measured against the system clock as it is now: onto the reference by its step.
        guard let measured = fix.systemClockOffset, measured.isFinite else { return }
        let offset = measured + Double(wallStep) / 1e9
        recentOffsets.append(offset)
        if recentOffsets.count > 16 { recentOffsets.removeFirst(recentOffsets.count - 16) }
        let previousObservation = lastObservedAt
        lastObservedAt = now
        guard let best = recentOffsets.max() else { return }
        var next = best
        if let last = applied.last, best < last.correction, last.correction - best <= Self.stepThreshold {
            let elapsed = Double(max(0, now - (previousObservation ?? now))) / 1e9
            next = max(best, last.correction - Self.slewPerSecond * elapsed)
        }
        guard next != applied.last?.correction else { return }
        applied.append((since: max(now, applied.last?.since ?? now), correction: next))
        // Older corrections only convert times older than an hour: keep the one in force then.
        if let keep = applied.lastIndex(where: { $0.since <= now - Self.historyNanoseconds }), keep > 0 {
            applied.removeFirst(keep)
        }
    }

    /// The source new times come from.
    public var source: TimeSource {
        if systemClockSynchronised { return .systemClockSynchronised }
        return recentOffsets.isEmpty ? .unsynchronisedSystemClock : .gnssCorrected
    }

    /// Correction added to the reference clock now, seconds: synchronised, the system clock's step.
    public var correction: Double {
        guard !systemClockSynchronised else { return Double(wallStep) / 1e9 }
        return applied.last?.correction ?? 0
    }

    /// Correction added to the reference clock at monotonic `time`, seconds.
    public func correction(at time: Int64) -> Double {
        guard !systemClockSynchronised else { return Double(wallStep) / 1e9 }
        return applied.last { $0.since <= time }?.correction ?? applied.first?.correction ?? 0
    }

    /// Epoch milliseconds of a monotonic time.
    public func epochMilliseconds(monotonic: Int64) -> Double {
        Double(monotonic + wallMinusMonotonic) / 1e6 + correction(at: monotonic) * 1000
    }

    /// The monotonic time of epoch milliseconds (the inverse of ``epochMilliseconds(monotonic:)``):
    /// where a stored time lies on this process's clock.
    public func monotonic(epochMilliseconds: Double) -> Int64 {
        let uncorrected = { (correction: Double) in
            Int64(((epochMilliseconds - correction * 1000) * 1e6).rounded()) - wallMinusMonotonic
        }
        guard !systemClockSynchronised else { return uncorrected(correction) }
        for entry in applied.reversed() {
            let time = uncorrected(entry.correction)
            if time >= entry.since { return time }
        }
        return uncorrected(applied.first?.correction ?? 0)
    }

    /// Epoch milliseconds of a system-clock date read since the last step (with the correction in force now).
    public func epochMilliseconds(system date: Date) -> Double {
        date.timeIntervalSince1970 * 1000 + (correction - Double(wallStep) / 1e9) * 1000
    }

    /// The fix's time on the session's time base: its GNSS UTC time when it has one and the
    /// session is synchronised or GNSS-corrected, else its corrected arrival.
    public func fixTime(_ fix: GNSSFix) -> Double {
        if let time = fix.time, source != .unsynchronisedSystemClock {
            return time.timeIntervalSince1970 * 1000
        }
        return epochMilliseconds(system: fix.arrival)
    }
}
