import Basics
import Testing
@testable import Recording

/// A stream silent for the fit's window less the step's confirmation (20 - 5 s) or longer on
/// one timestamper: a board whose notifications are lost while its link stays and nothing
/// restarts the stream (mwbench's stall). The hole is a loss as an 8 s one is: the window emptied
/// before the step after it was confirmed, and it carried no mark.
@Suite("Long holes in one stream")
struct LongHoleTests {
    @Test("a hole of 8 to 120 s is counted whole, and the stamps after it stay on the board's times",
          arguments: [8.0, 14.0, 15.0, 20.0, 60.0, 120.0])
    func aLongHoleIsCounted(seconds: Double) {
        // 30 s of stream, the hole, 30 s more; the board's clock 50 ppm slow.
        let seed: UInt64 = 31
        let first = 3_000, last = first + Int(seconds * 100)
        let link = simulateLink(rate: 100, seconds: 60 + seconds, perNotification: 1, clockErrorPPM: 50, seed: seed,
                                drop: { (first..<last).contains($0) })
        var stamper = SampleTimestamper<[Int64]>(configuration: .init(rateHertz: 100))
        var stamped: [SampleTimestamper<[Int64]>.Stamped] = []
        for n in link { stamped += stamper.add(n.truth, count: n.count, receivedAt: n.receivedAt) }
        stamped += stamper.flush()
        let marks = stamped.filter { $0.missedBefore > 0 }.map(\.missedBefore)
        #expect(marks == [last - first], "seed \(seed): one mark of \(last - first) samples, got \(marks)")
        let after = zip(stamped, link).filter { $0.1.truth[0] > link[first - 1].truth[0] + Int64(seconds * 1e9) }
        let errors = after.map { abs(Double($0.0.times[0] - $0.1.truth[0])) / 1e6 }
        #expect(!errors.isEmpty && percentile(errors, 0.99) < 3, "seed \(seed): p99 \(errors.isEmpty ? -1 : percentile(errors, 0.99)) ms after the hole")
    }
}
