import Basics
import Testing
@testable import Recording

/// A board sampling at `rate` (with a clock error in ppm) whose notifications are released
/// in connection events 7.5 to 30 ms apart, plus host delivery jitter; notification `n` leaves
/// the board no earlier than `latency(n)` after its last sample was taken (a step in the link's
/// latency, nothing lost). Returns, per notification, its receive time, sample count and the
/// true times of its samples.
func simulateLink(rate: Double, seconds: Double, perNotification: Int, clockErrorPPM: Double, seed: UInt64,
                  drop: (Int) -> Bool = { _ in false },
                  latency: (Int) -> Int64 = { _ in 0 }) -> [(receivedAt: Int64, count: Int, truth: [Int64], lostBefore: Int)] {
    var rng = SeededRandom(seed: seed)
    let period = 1e9 / rate * (1 + clockErrorPPM * 1e-6)
    let t0 = 5_000_000_000.0 + Double.random(in: 0..<1e7, using: &rng)
    let total = Int(seconds * rate) / perNotification
    var out: [(Int64, Int, [Int64], Int)] = []
    var event = t0
    var n = 0
    var lost = 0
    while n < total {
        event += Double.random(in: 7.5e6...30e6, using: &rng)
        while n < total {
            let truth = (0..<perNotification).map { Int64(t0 + period * Double(n * perNotification + $0)) }
            guard Double(truth.last! + latency(n)) <= event else { break }
            if drop(n) { lost += perNotification; n += 1; continue }
            let jitter = Double.random(in: 0...300_000, using: &rng)
            out.append((Int64(event + jitter), perNotification, truth, lost))
            lost = 0
            n += 1
        }
    }
    return out
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    let s = values.sorted()
    return s[min(s.count - 1, Int(Double(s.count - 1) * p))]
}

@Suite("Sample time rebuild")
struct TimestampTests {
    @Test("100 Hz with 7.5 to 30 ms BLE batching: median error < 1 ms, p99 < 3 ms", arguments: [
        (1, 0.0, UInt64(1)), (1, 150.0, UInt64(2)), (1, -400.0, UInt64(3)), (3, 80.0, UInt64(4)),
    ])
    func accuracy(perNotification: Int, ppm: Double, seed: UInt64) {
        let link = simulateLink(rate: 100, seconds: 120, perNotification: perNotification, clockErrorPPM: ppm, seed: seed)
        var stamper = SampleTimestamper<[Int64]>(configuration: .init(rateHertz: 100))
        var stamped: [SampleTimestamper<[Int64]>.Stamped] = []
        for n in link { stamped += stamper.add(n.truth, count: n.count, receivedAt: n.receivedAt) }
        stamped += stamper.flush()
        #expect(stamped.count == link.count)
        var errors: [Double] = []
        var rawErrors: [Double] = []
        for (s, n) in zip(stamped, link) {
            for k in 0..<n.count {
                errors.append(abs(Double(s.times[k] - n.truth[k])) / 1e6)
                rawErrors.append(abs(Double(n.receivedAt - n.truth[k])) / 1e6)
            }
            #expect(s.missedBefore == 0)
        }
        let median = percentile(errors, 0.5), p99 = percentile(errors, 0.99)
        #expect(median < 1.0, "median \(median) ms")
        #expect(p99 < 3.0, "p99 \(p99) ms")
        // The raw receive times are much worse: the rebuild is what removes the batching.
        #expect(percentile(rawErrors, 0.5) > 3 * median)
    }

    @Test("lost notifications are found, counted and skipped in the time line")
    func gaps() {
        let dropped: Set<Int> = [500, 1500, 1501, 1502, 4000]
        let link = simulateLink(rate: 100, seconds: 60, perNotification: 1, clockErrorPPM: 50, seed: 9,
                                drop: { dropped.contains($0) })
        var stamper = SampleTimestamper<[Int64]>(configuration: .init(rateHertz: 100))
        var stamped: [SampleTimestamper<[Int64]>.Stamped] = []
        for n in link { stamped += stamper.add(n.truth, count: n.count, receivedAt: n.receivedAt) }
        stamped += stamper.flush()
        // Each loss is found with its exact size, at the right notification or (when the
        // notification just before it was itself delayed by about one period, which is
        // indistinguishable) one earlier.
        let found = stamped.enumerated().filter { $0.element.missedBefore > 0 }.map { ($0.offset, $0.element.missedBefore) }
        let expected = link.enumerated().filter { $0.element.lostBefore > 0 }.map { ($0.offset, $0.element.lostBefore) }
        #expect(found.count == expected.count)
        for (f, e) in zip(found, expected) {
            #expect(f.1 == e.1)
            #expect(f.0 == e.0 || f.0 == e.0 - 1, "loss at \(e.0) found at \(f.0)")
        }
        #expect(stamper.missedSamples == 5)
        let errors = zip(stamped, link).map { abs(Double($0.times[0] - $1.truth[0])) / 1e6 }
        #expect(percentile(errors, 0.99) < 3.0)
    }

    @Test("times are strictly increasing even across refits")
    func monotonic() {
        let link = simulateLink(rate: 200, seconds: 30, perNotification: 3, clockErrorPPM: -900, seed: 11)
        var stamper = SampleTimestamper<Int>(configuration: .init(rateHertz: 200))
        var times: [Int64] = []
        for n in link { times += stamper.add(0, count: n.count, receivedAt: n.receivedAt).flatMap(\.times) }
        times += stamper.flush().flatMap(\.times)
        #expect(times.count == link.count * 3)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
    }
}
