import GNSS

/// A position fix reduced to what the merge needs, on the session's time base.
public struct LocatedFix: Hashable, Sendable {
    /// Epoch milliseconds the fix refers to.
    public var time: Double
    public var latitude: Double
    public var longitude: Double
    /// Metres (GST 1-sigma, else HDOP × 5 m), nil if the receiver gave neither.
    public var accuracy: Double?
    /// True when the receiver dead-reckoned this position instead of measuring it.
    public var deadReckoned: Bool

    /// A fix.
    public init(time: Double, latitude: Double, longitude: Double, accuracy: Double?, deadReckoned: Bool = false) {
        self.time = time
        self.latitude = latitude
        self.longitude = longitude
        self.accuracy = accuracy
        self.deadReckoned = deadReckoned
    }

    /// The fix's position on `timeBase`, or nil when it has none or it is not a measurement:
    /// dead reckoning only when `acceptingDeadReckoning` (and then marked), manual input and
    /// simulator fixes never.
    public init?(_ fix: GNSSFix, timeBase: TimeBase, acceptingDeadReckoning: Bool = false) {
        guard fix.isMeasurement || (acceptingDeadReckoning && fix.isDeadReckoning),
            let lat = fix.latitude, let lon = fix.longitude
        else { return nil }
        self.init(time: timeBase.fixTime(fix), latitude: lat, longitude: lon,
                  accuracy: fix.horizontalError ?? fix.hdop.map { $0 * LocatedFix.userEquivalentRangeError },
                  deadReckoned: fix.isDeadReckoning)
    }

    /// The position a stored point was located at, as a fix at the time it refers to.
    public init(_ location: PointLocation) {
        self.init(time: location.timestamp, latitude: location.latitude, longitude: location.longitude,
                  accuracy: location.accuracy.map(Double.init), deadReckoned: location.deadReckoned)
    }

    /// Metres per unit of HDOP when the receiver reports no error estimate (a typical
    /// consumer receiver's UERE).
    public static let userEquivalentRangeError = 5.0
}

/// Gives every sample the location for its time.
///
/// Linear interpolation between the fixes that bracket the sample; a sample waits for the
/// later fix at most `maxWait` (one fix interval), then takes the last fix while it is fresh.
/// Without a usable fix the location is nil with a reason. Pure; `now` is injected.
public struct LocationMerger<Payload> {
    /// A sample with its merged location.
    public struct Located {
        public var payload: Payload
        /// Epoch milliseconds of the sample.
        public var time: Double
        public var location: PointLocation?
        public var missing: MissingLocationReason?
    }

    /// How long a held sample waits for the bracketing fix, milliseconds (one fix interval).
    public var maxWait: Double
    /// How old the last fix may be and still be used, milliseconds.
    public var freshness: Double
    /// Fixes further apart than this are not interpolated between, milliseconds.
    public var maxBracket: Double
    /// Most fixes kept: past it the older half goes (128 by default, about two minutes at 1 Hz
    /// for samples located as they stream).
    public let fixLimit: Int

    private var fixes: [LocatedFix] = []
    private var held: [(payload: Payload, time: Double, heldSince: Double)] = []
    private var heldStart = 0

    /// A merger; defaults suit a 1 Hz receiver.
    public init(maxWait: Double = 1000, freshness: Double = 2000, maxBracket: Double = 5000, fixLimit: Int = 128) {
        self.maxWait = maxWait
        self.freshness = freshness
        self.maxBracket = maxBracket
        self.fixLimit = max(2, fixLimit)
    }

    /// Fixes kept.
    public var fixCount: Int { fixes.count }

    /// Forgets the fixes no sample from `time` on needs (those before the last one at or
    /// before it).
    public mutating func dropFixes(before time: Double) {
        let needed = fixes.firstIndex { $0.time > time }.map { max(0, $0 - 1) } ?? max(0, fixes.count - 1)
        if needed > 0 { fixes.removeFirst(needed) }
    }

    /// Adds a fix known from elsewhere at its place in time (``add(fix:now:)`` takes only newer
    /// ones): the position a stored point was located at. Nothing when a fix of that time is
    /// known; no fix is dropped for it.
    public mutating func insert(_ fix: LocatedFix) {
        let index = leadingFixes { $0 < fix.time }
        if index < fixes.count, fixes[index].time == fix.time { return }
        fixes.insert(fix, at: index)
    }

    /// How many fixes, from the first, have a time for which `isEarlier` holds: the index a
    /// binary search of the time-ordered fixes ends at (`isEarlier` holds for a prefix of them).
    private func leadingFixes(_ isEarlier: (Double) -> Bool) -> Int {
        var lo = 0, hi = fixes.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if isEarlier(fixes[mid].time) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// Number of samples waiting for a fix.
    public var heldCount: Int { held.count - heldStart }

    /// Moves each held sample back by `back(payload, time)` ms: their stream was stamped late
    /// (``SampleTimestamper/takeBack(lateBy:at:)``), each by as much as that says.
    public mutating func moveHeld(back: (Payload, Double) -> Double) {
        for i in heldStart..<held.count { held[i].time -= back(held[i].payload, held[i].time) }
    }

    /// Moves every time it keeps (the waiting samples, when each began to wait, the fixes) by
    /// `offset` ms and lets `relabel` change each waiting sample: all were taken on a clock now
    /// known to be `offset` off (the system clock before the first GNSS fix).
    public mutating func shiftAll(by offset: Double, relabel: (inout Payload) -> Void = { _ in }) {
        for i in heldStart..<held.count {
            held[i].time += offset
            held[i].heldSince += offset
            relabel(&held[i].payload)
        }
        for i in fixes.indices { fixes[i].time += offset }
    }

    /// Adds a fix (in time order; an older one is ignored) and returns the samples it settles.
    public mutating func add(fix: LocatedFix, now: Double) -> [Located] {
        if let last = fixes.last, fix.time <= last.time { return release(now: now) }
        fixes.append(fix)
        if fixes.count > fixLimit { fixes.removeFirst(fixes.count - fixLimit / 2) }
        return release(now: now)
    }

    /// Adds a sample and returns the samples now settled (in order).
    public mutating func add(_ payload: Payload, time: Double, now: Double) -> [Located] {
        held.append((payload, time, now))
        return release(now: now)
    }

    /// Releases samples whose bracketing fix has come or whose wait is over.
    public mutating func release(now: Double) -> [Located] {
        var out: [Located] = []
        while heldStart < held.count {
            let h = held[heldStart]
            let bracketed = (fixes.last?.time ?? -.infinity) >= h.time
            guard bracketed || now - h.heldSince >= maxWait else { break }
            out.append(locate(h.payload, h.time))
            heldStart += 1
        }
        if heldStart > 512, heldStart * 2 > held.count {
            held.removeFirst(heldStart)
            heldStart = 0
        }
        return out
    }

    /// Releases everything held (session stop).
    public mutating func flush() -> [Located] {
        var out: [Located] = []
        for i in heldStart..<held.count { out.append(locate(held[i].payload, held[i].time)) }
        held.removeAll()
        heldStart = 0
        return out
    }

    /// The held samples located as well as possible now, without releasing them (for
    /// checkpoints, so a crash does not lose what waits for a fix).
    public func peek() -> [Located] {
        (heldStart..<held.count).map { locate(held[$0].payload, held[$0].time) }
    }

    /// The location for `time` from the fixes seen so far.
    public func locate(_ payload: Payload, _ time: Double) -> Located {
        guard !fixes.isEmpty else { return Located(payload: payload, time: time, location: nil, missing: .noFix) }
        // Index of the first fix later than `time`.
        let lo = leadingFixes { $0 <= time }
        let before = lo > 0 ? fixes[lo - 1] : nil
        let after = lo < fixes.count ? fixes[lo] : nil
        if let b = before, let a = after, a.time - b.time <= maxBracket {
            let f = (time - b.time) / (a.time - b.time)
            let accuracy: Double? = if let x = b.accuracy, let y = a.accuracy { max(x, y) } else { b.accuracy ?? a.accuracy }
            let location = PointLocation(
                latitude: b.latitude + (a.latitude - b.latitude) * f,
                longitude: b.longitude + (a.longitude - b.longitude) * f,
                timestamp: time, accuracy: accuracy.map(Float.init), age: min(time - b.time, a.time - time),
                // Dead-reckoned when a dead-reckoned fix has any weight in the position.
                deadReckoned: (b.deadReckoned && f < 1) || (a.deadReckoned && f > 0))
            return Located(payload: payload, time: time, location: location, missing: nil)
        }
        let nearest: LocatedFix? = switch (before, after) {
        case let (b?, a?): (time - b.time <= a.time - time) ? b : a
        case let (b?, nil): b
        case let (nil, a?): a
        default: nil
        }
        if let n = nearest, abs(time - n.time) <= freshness {
            let location = PointLocation(latitude: n.latitude, longitude: n.longitude, timestamp: n.time,
                                         accuracy: n.accuracy.map(Float.init), age: abs(time - n.time),
                                         deadReckoned: n.deadReckoned)
            return Located(payload: payload, time: time, location: location, missing: nil)
        }
        return Located(payload: payload, time: time, location: nil, missing: .staleFix)
    }
}
