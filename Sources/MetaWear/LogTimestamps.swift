/// Board ticks as time (metawear-logging.md §7).
public enum BoardTicks {
    /// 48/32768 s = 1.46484375 ms per tick (CPP:logging.cpp:39).
    public static let millisecondsPerTick = 48.0 / 32768.0 * 1000.0

    /// Exact milliseconds of an (unwrapped) tick count.
    public static func milliseconds(_ ticks: UInt64) -> Double { Double(ticks) * millisecondsPerTick }

    /// The SDK's whole milliseconds: `round(tick × 1.46484375)`, half away from zero (§7.1).
    public static func sdkMilliseconds(_ tick: UInt32) -> Int64 {
        Int64((Double(tick) * millisecondsPerTick).rounded(.toNearestOrAwayFromZero))
    }
}

/// Extends one boot's 32-bit ticks, in the order the board wrote them, past 2^32 (≈ 72.8 days;
/// the SDK does not, P11). A tick more than 2^31 below the last one is taken as a wrap.
public struct TickUnwrapper: Hashable, Sendable {
    private var last: UInt64?

    /// Starts before any tick.
    public init() {}

    /// The tick counted from the boot, without wrapping.
    public mutating func unwrap(_ tick: UInt32) -> UInt64 {
        guard let last else { self.last = UInt64(tick); return UInt64(tick) }
        var candidate = (last & ~0xFFFF_FFFF) | UInt64(tick)
        if candidate + 0x8000_0000 < last { candidate += 0x1_0000_0000 }
        else if candidate > last + 0x8000_0000, candidate >= 0x1_0000_0000 { candidate -= 0x1_0000_0000 }
        self.last = max(last, candidate)
        return candidate
    }
}

/// Each boot's reference epoch: the host time at which its tick counter was zero, from the
/// board clock read at connect (`0B 84`, §7.2), as the SDK keeps it.
public struct LogTimeReference: Hashable, Sendable {
    /// Epoch milliseconds of tick 0, by reset UID.
    public private(set) var epochByUID: [UInt8: Double] = [:]
    /// The UID of the newest reading.
    public private(set) var latestUID: UInt8?

    /// No references yet.
    public init() {}

    /// A clock reading `clock` taken at host time `hostMilliseconds` (epoch ms); a later
    /// reading of the same boot replaces the earlier one, as in the SDK.
    public mutating func observe(_ clock: BoardClock, hostMilliseconds: Double) {
        epochByUID[clock.resetUID & 0x07] = hostMilliseconds - BoardTicks.milliseconds(UInt64(clock.tick))
        latestUID = clock.resetUID & 0x07
    }

    /// Host time of a tick of boot `uid`. A boot never read at connect (several resets while
    /// no host was there) borrows the nearest earlier boot's reference, like the SDK, and says
    /// so with `guessed`: such times are off by the earlier boots' uptime (P10).
    public func time(uid: UInt8, ticks: UInt64) -> (milliseconds: Double, guessed: Bool)? {
        let uid = uid & 0x07
        if let epoch = epochByUID[uid] { return (epoch + BoardTicks.milliseconds(ticks), false) }
        for back in 1..<8 {
            if let epoch = epochByUID[(uid &+ 8 &- UInt8(back)) & 0x07] {
                return (epoch + BoardTicks.milliseconds(ticks), true)
            }
        }
        return nil
    }
}

/// What happened to the board between two clock readings.
public enum BoardClockChange: Hashable, Sendable, CustomStringConvertible {
    /// Same boot, ticks advanced as the host's clock did.
    case continuous
    /// Same boot; the tick counter wrapped past 2^32 in between.
    case rolledOver
    /// The board reset at least `boots` times (the UID is 3 bits: 8 resets look like none, so
    /// a same-UID tick that went backwards counts as 8).
    case reset(boots: Int)

    public var description: String {
        switch self {
        case .continuous: "continuous"
        case .rolledOver: "tick counter rolled over"
        case .reset(let boots): "board reset (at least \(boots) time\(boots == 1 ? "" : "s"))"
        }
    }

    /// Compares a reading with the previous one, both stamped with host epoch milliseconds.
    /// The board's tick runs at most `tolerance` (default 1 %, with 2 s for link latency)
    /// away from the host's clock.
    public static func between(
        _ previous: BoardClock, at previousHost: Double, and current: BoardClock, at currentHost: Double,
        tolerance: Double = 0.01
    ) -> BoardClockChange {
        let uidStep = Int((current.resetUID &+ 8 &- previous.resetUID) & 0x07)
        if uidStep != 0 { return .reset(boots: uidStep) }
        let elapsedTicks = (currentHost - previousHost) / BoardTicks.millisecondsPerTick
        let slack = abs(elapsedTicks) * tolerance + 2000 / BoardTicks.millisecondsPerTick
        let advanced = Double(current.tick) - Double(previous.tick)
        if abs(advanced - elapsedTicks) <= slack { return .continuous }
        if abs(advanced + 4_294_967_296 - elapsedTicks) <= slack { return .rolledOver }
        return .reset(boots: 8)
    }
}

/// Drops entries a readout delivers again after a link loss (§7.4), without the SDK's
/// side effects: per boot and logger it remembers the newest tick delivered and how many
/// entries carried it, so samples that share a tick (rates above 680 Hz) are neither dropped
/// nor doubled, and streamed data never touches it (P8).
public struct ReadoutDeduplicator: Hashable, Sendable {
    private struct Key: Hashable, Sendable {
        var uid: UInt8
        var logger: UInt8
    }

    private struct Mark: Hashable, Sendable {
        var tick: UInt32
        var count: Int
        /// Entries with `tick` seen again since the last link loss.
        var replayed = 0
        var replaying = false
    }

    private var marks: [Key: Mark] = [:]
    /// Entries dropped as already delivered.
    public private(set) var duplicatesDropped = 0

    /// Nothing delivered yet.
    public init() {}

    /// The link dropped: the next readout may start again at entries already delivered.
    public mutating func linkLost() {
        for key in marks.keys { marks[key]?.replaying = true; marks[key]?.replayed = 0 }
    }

    /// The readout ended and its pages were confirmed (deleted on the board): nothing can come
    /// again, and a later boot may reuse this one's UID.
    public mutating func readoutCompleted() { marks = [:] }

    /// Whether `entry` is new (true) or was delivered before (false).
    public mutating func admit(_ entry: LogEntry) -> Bool {
        let key = Key(uid: entry.resetUID, logger: entry.loggerID)
        guard var mark = marks[key] else {
            marks[key] = Mark(tick: entry.tick, count: 1)
            return true
        }
        let distance = Int32(bitPattern: entry.tick &- mark.tick)
        if distance < 0 { duplicatesDropped += 1; return false }
        if distance > 0 {
            marks[key] = Mark(tick: entry.tick, count: 1)
            return true
        }
        if mark.replaying, mark.replayed < mark.count {
            mark.replayed += 1
            marks[key] = mark
            duplicatesDropped += 1
            return false
        }
        mark.count += 1
        mark.replaying = false
        marks[key] = mark
        return true
    }
}
