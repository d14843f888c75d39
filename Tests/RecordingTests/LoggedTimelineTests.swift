import MetaWear
import Testing
@testable import Recording

/// Times for a sensor the board logs instead of streaming, from its ticks alone (issue 21
/// part 3): at 800 Hz a tick (1.46 ms) is coarser than the period (1.25 ms).
@Suite struct LoggedTimelineTests {
    static let tick = BoardTicks.millisecondsPerTick * 1e6

    /// `count` samples of an 800 Hz sensor from `first` (index), taken at their true times
    /// after a boot whose tick 0 lies at `origin`; the board's crystal `drift` parts off.
    static func samples(_ range: Range<Int>, origin: Int64, drift: Double = 0) -> (samples: [LoggedSample], truth: [Int64]) {
        var samples: [LoggedSample] = []
        var truth: [Int64] = []
        for k in range {
            let sinceBoot = 7_000_000_000.0 + Double(k) * 1_250_000 * (1 + drift)
            samples.append(LoggedSample(resetUID: 2, tick: UInt32(sinceBoot / tick), raw: RawVector(x: Int16(truncatingIfNeeded: k), y: 0, z: 0)))
            truth.append(origin + Int64(sinceBoot))
        }
        return (samples, truth)
    }

    @Test func eightHundredHertzTimesStayWithinATickOfTheTruth() {
        for drift in [0.0, 50e-6, -50e-6] {
            var timeline = LoggedTimeline(rateHertz: 800)
            timeline.origins[2] = 1_000_000_000
            let (samples, truth) = Self.samples(0..<8000, origin: 1_000_000_000, drift: drift)
            let placed = samples.compactMap { timeline.place($0) }
            #expect(placed.count == samples.count)
            let errors = zip(placed, truth).map { abs(Double($0 - $1)) }.sorted()
            #expect(errors.last! < Self.tick, "drift \(drift): max error \(errors.last! / 1e6) ms")
            #expect(errors[errors.count / 2] < 0.5e6, "drift \(drift): median error \(errors[errors.count / 2] / 1e6) ms")
            #expect(zip(placed, placed.dropFirst()).allSatisfy { $0 < $1 }, "in order")
        }
    }

    @Test func aPageReadAgainIsNotRecordedTwiceEvenWhereSamplesShareATick() throws {
        var timeline = LoggedTimeline(rateHertz: 800)
        timeline.origins[2] = 0
        let (samples, _) = Self.samples(0..<600, origin: 0)
        // The first readout ends between two samples that share a tick.
        let split = try #require((290..<310).first { samples[$0].tick == samples[$0 + 1].tick })
        let first = samples[0...split].compactMap { timeline.place($0) }
        // The board sends the unconfirmed page again from its start after a link loss.
        let again = samples[256..<600].map { timeline.place($0) }
        #expect(first.count == split + 1)
        #expect(again.prefix(split + 1 - 256).allSatisfy { $0 == nil }, "256...\(split) were recorded")
        #expect(again.dropFirst(split + 1 - 256).allSatisfy { $0 != nil }, "\(split + 1)..<600 are new, the first at the same tick")
    }

    @Test func aBootWithoutAClockReadIsNotPlaced() {
        var timeline = LoggedTimeline(rateHertz: 800)
        #expect(timeline.place(LoggedSample(resetUID: 5, tick: 100, raw: RawVector(x: 0, y: 0, z: 0))) == nil)
    }
}
