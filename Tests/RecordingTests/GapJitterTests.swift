import Basics
import Testing
@testable import Recording

/// How notifications reach mwgated on the real stack (BlueZ in the VM): the board samples at
/// 100 Hz (its clock `ppm` off), each sample is one notification, queued until the next
/// connection event (interval 7.5-50 ms), which carries at most `perEvent` (2-6) of them.
/// Now and then the radio misses events, so the queue waits 1-3 sample periods longer and
/// then drains in bursts catching up. Within an event notifications arrive a few hundred
/// microseconds apart. `holes` are ranges of sample indices that never arrive.
struct RealStackArrivals {
    var seed: UInt64
    var holes: [Range<Int>] = []
    var seconds = 60.0

    struct Arrival {
        var sampleIndex: Int
        var receivedAt: Int64
    }

    /// Arrivals in receive order, and the true period (ns).
    func generate() -> (arrivals: [Arrival], period: Double, description: String) {
        var rng = SeededRandom(seed: seed)
        let ppm = Double.random(in: -80...80, using: &rng)
        let period = 1e7 * (1 + ppm * 1e-6)
        let interval = [7.5e6, 11.25e6, 15e6, 30e6, 45e6, 50e6].randomElement(using: &rng)!
        let perEvent = Int.random(in: max(2, Int((interval / 1e7).rounded(.up)) + 1)...6, using: &rng)
        let lateChance = Double.random(in: 0.01...0.05, using: &rng)
        let t0 = 3e9 + Double.random(in: 0..<1e7, using: &rng)
        let total = Int(seconds * 100)
        var arrivals: [Arrival] = []
        var next = 0
        var event = t0 + Double.random(in: 0..<interval, using: &rng)
        var stalledUntil = 0.0
        while next < total {
            event += interval
            if Double.random(in: 0..<1, using: &rng) < lateChance {
                stalledUntil = event + Double(Int.random(in: 1...3, using: &rng)) * period
            }
            guard event >= stalledUntil else { continue }
            var at = event + Double.random(in: 0...300_000, using: &rng)
            var sent = 0
            while next < total, sent < perEvent, t0 + period * Double(next) <= event {
                if !holes.contains(where: { $0.contains(next) }) {
                    arrivals.append(Arrival(sampleIndex: next, receivedAt: Int64(at)))
                    at += Double.random(in: 50_000...400_000, using: &rng)
                    sent += 1
                }
                next += 1
            }
        }
        let text = "seed \(seed): clock \(Int(ppm)) ppm, interval \(interval / 1e6) ms, \(perEvent) per event, "
            + "\(Int(lateChance * 100)) % events late"
        return (arrivals, period, text)
    }
}

/// Issue 18 defect 6: arrival jitter never makes a gap; real holes carry their exact count
/// and duration.
@Suite("Gaps: real-stack jitter is not a loss")
struct GapJitterTests {
    /// Stamps the arrivals; returns each mark as (sample index after the gap, missed, step ms).
    func marks(_ arrivals: [RealStackArrivals.Arrival]) -> [(index: Int, missed: Int, stepMilliseconds: Double)] {
        var stamper = SampleTimestamper<Int>(configuration: .init(rateHertz: 100))
        var stamped: [SampleTimestamper<Int>.Stamped] = []
        for a in arrivals { stamped += stamper.add(a.sampleIndex, count: 1, receivedAt: a.receivedAt) }
        stamped += stamper.flush()
        var out: [(Int, Int, Double)] = []
        for (i, s) in stamped.enumerated() where s.missedBefore > 0 {
            let step = i == 0 ? 0 : Double(s.times[0] - stamped[i - 1].times[0]) / 1e6
            out.append((s.payload, s.missedBefore, step))
        }
        return out
    }

    @Test("no sample missing: batching, late events and catch-up bursts make no mark", arguments: Array(UInt64(1)...12))
    func jitterMakesNoGap(seed: UInt64) {
        let (arrivals, _, text) = RealStackArrivals(seed: seed).generate()
        print(text)
        let found = marks(arrivals)
        #expect(found.isEmpty, "\(text): false marks \(found)")
    }

    /// Seed 4 (50 ms interval, 6 per event): the queue after the 8.6 s hole stands 11 ms high
    /// through the second half of the look-ahead, so the step's settled height came to 861
    /// periods; the first batch after the hole (on the envelope) could not take 861, and the
    /// hole was marked 4 samples after its end, those 4 stamped 8.6 s early, before it.
    @Test("holes of 1 period, 10 periods, 1 s and 8.6 s: each marked with its exact count and duration",
          arguments: Array(UInt64(1)...12))
    func holesAreMarkedExactly(seed: UInt64) {
        let holes = [1000..<1001, 2000..<2010, 3000..<3100, 4000..<4860]
        let (arrivals, period, text) = RealStackArrivals(seed: seed, holes: holes).generate()
        print(text)
        expectMarks(marks(arrivals), holes: holes, period: period, text: text)
    }

    func expectMarks(_ found: [(index: Int, missed: Int, stepMilliseconds: Double)], holes: [Range<Int>], period: Double,
                     text: String) {
        // Where a hole falls inside a late batch, receive times cannot tell the samples before
        // it from late ones: the mark may come up to that batch earlier (never later).
        #expect(found.count == holes.count, "\(text): marks \(found)")
        for (mark, hole) in zip(found, holes) {
            #expect((hole.upperBound - 30...hole.upperBound).contains(mark.index), "\(text): hole \(hole) marked at \(mark.index)")
        }
        #expect(found.map(\.missed) == holes.map(\.count), "\(text): marks \(found)")
        for (mark, hole) in zip(found, holes) {
            let expected = Double(hole.count + 1) * period / 1e6
            #expect(abs(mark.stepMilliseconds - expected) <= 2, "\(text): \(hole.count) missing took \(mark.stepMilliseconds) ms, expected \(expected)")
        }
    }
}
