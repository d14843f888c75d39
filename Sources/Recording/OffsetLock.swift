import MetaWear

/// Where one boot's ticks lie on the streamed time base (streamed time − tick time, ns), found
/// from the logged samples whose raw counts the stream carries: the densest 3 ms cluster of those
/// offsets among ``window`` logged samples in a row. Pure.
struct OffsetLock {
    let boot: BootLog
    let streamed: [BackfillPlanner.StreamedSample]
    let index: BackfillAnchors.StreamIndex

    /// Logged samples one lock looks at.
    static let window = 64
    /// Offsets that must agree for a lock where the board clock's reading puts the boot.
    static let fewestNearTheClock = 3
    /// Offsets that must agree for a lock the clock's reading does not vouch for: a relock, or a
    /// first lock away from the reading. A lock on a stretch the stream carried has most of
    /// ``window`` agree; a chance cluster of common values rarely has more than three.
    static let fewestElsewhere = 8
    /// Values seen more often in the stream than this are too common to lock on.
    static let commonest = 16

    /// The boot's first lock, from log position `k`: within `tolerance` of the `origin` its clock
    /// reading puts it at (the link's latency when read), else anywhere with more agreeing. The
    /// clock is read once per link, and a long link's stream moves away from it: the crystals
    /// drift (up to 500 ppm with the host's NTP slewing: 1 s in 33 minutes), and every rise in
    /// the link's latency that the timestamper confirms as a loss moves the stream's times later
    /// (the real-BlueZ VM's stream was 1.3 s late after 35 s). Without an origin, anywhere.
    func first(from k: Int, origin: Int64?, tolerance: Double) -> Double? {
        guard let origin else { return cluster(from: k, near: nil, within: .infinity, fewest: Self.fewestNearTheClock) }
        return cluster(from: k, near: Double(origin), within: tolerance, fewest: Self.fewestNearTheClock)
            ?? cluster(from: k, near: nil, within: .infinity, fewest: Self.fewestElsewhere)
    }

    /// A lock again from log position `k`: within `tolerance` of the offset followed so far,
    /// else anywhere. A stream restarted while its samples were only late starts a new
    /// timestamper on arrivals seconds late (real-BlueZ VM, run 2 at dcdd80b: 1.7 s at one
    /// restart, 4.3 s after three).
    func again(from k: Int, near offset: Double, tolerance: Double) -> Double? {
        cluster(from: k, near: offset, within: tolerance, fewest: Self.fewestElsewhere)
            ?? cluster(from: k, near: nil, within: .infinity, fewest: Self.fewestElsewhere)
    }

    /// The densest 3 ms cluster of offsets within `within` of `centre` among the value matches of
    /// the ``window`` logged samples from `start`, if at least `fewest` agree.
    private func cluster(from start: Int, near centre: Double?, within: Double, fewest: Int) -> Double? {
        var offsets: [Double] = []
        for k in start..<min(start + Self.window, boot.samples.count) {
            guard let matches = index[boot.samples[k].raw], matches.count <= Self.commonest else { continue }
            for j in matches {
                let offset = Double(streamed[j].time) - boot.ticks[k]
                if let centre, abs(offset - centre) > within { continue }
                offsets.append(offset)
            }
        }
        guard offsets.count >= fewest else { return nil }
        offsets.sort()
        var best = (count: 0, from: 0)
        var low = 0
        for high in offsets.indices {
            while offsets[high] - offsets[low] > 3_000_000 { low += 1 }
            if high - low + 1 > best.count { best = (high - low + 1, low) }
        }
        guard best.count >= fewest else { return nil }
        return offsets[best.from + best.count / 2]
    }
}
