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
public struct TimeBase: Sendable {
    /// Epoch nanoseconds minus monotonic nanoseconds, sampled once.
    public let wallMinusMonotonic: Int64
    /// Whether the system clock is synchronised (from the caller: adjtimex/timedatectl).
    public var systemClockSynchronised: Bool
    private var recentOffsets: [Double] = []

    /// A time base from one reading of both clocks.
    public init(wallNanoseconds: Int64, monotonicNanoseconds: Int64, systemClockSynchronised: Bool) {
        wallMinusMonotonic = wallNanoseconds - monotonicNanoseconds
        self.systemClockSynchronised = systemClockSynchronised
    }

    /// Feeds a fix; its UTC offset is used while the system clock is unsynchronised. A
    /// simulator's or manually entered fix says nothing about the time, so it is not used.
    public mutating func observe(_ fix: GNSSFix) {
        guard fix.status != .simulated, fix.status != .manual else { return }
        guard let offset = fix.systemClockOffset, offset.isFinite else { return }
        recentOffsets.append(offset)
        if recentOffsets.count > 16 { recentOffsets.removeFirst(recentOffsets.count - 16) }
    }

    /// The source new times come from.
    public var source: TimeSource {
        if systemClockSynchronised { return .systemClockSynchronised }
        return recentOffsets.isEmpty ? .unsynchronisedSystemClock : .gnssCorrected
    }

    /// Correction added to the system clock, seconds.
    public var correction: Double {
        guard !systemClockSynchronised, let best = recentOffsets.max() else { return 0 }
        return best
    }

    /// Epoch milliseconds of a monotonic time.
    public func epochMilliseconds(monotonic: Int64) -> Double {
        Double(monotonic + wallMinusMonotonic) / 1e6 + correction * 1000
    }

    /// The monotonic time of epoch milliseconds (the inverse of ``epochMilliseconds(monotonic:)``
    /// with today's correction): where a stored time lies on this process's clock.
    public func monotonic(epochMilliseconds: Double) -> Int64 {
        Int64(((epochMilliseconds - correction * 1000) * 1e6).rounded()) - wallMinusMonotonic
    }

    /// Epoch milliseconds of a system-clock date (with the same correction).
    public func epochMilliseconds(system date: Date) -> Double {
        date.timeIntervalSince1970 * 1000 + correction * 1000
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
