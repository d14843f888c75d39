import Foundation
import Recording
import Testing

/// The gateway fills a stalled board's gap from its flash log, end to end through dbus-daemon
/// and the simulated BlueZ (issue 21): the board withholds its stream for 8 s while it goes
/// on logging; after the stream comes back the gateway downloads the log in the background
/// and the session holds the board's samples once each, in time order, the gap filled.
@Suite("Backfill end to end")
struct BackfillEndToEndTests {
    /// Sample index of a point: the checkable signal's x is the index (mod 2^16); ±2000 °/s.
    static func index(_ p: RecordedPoint) -> Int { Int(UInt16(bitPattern: Int16((Double(p.gyroscope.x) * 16.4).rounded()))) }

    @Test func anEightSecondStallIsFilledFromTheFlashLog() async throws {
        try await GatewayHarness.with(mode: .manual, gnss: false, backfill: true) { h in
            try await h.eventually("both boards connected and logging") { s in
                s.boards.count == 2 && s.boards.allSatisfy { $0.isConnected }
            }
            let pipeline = h.gateway.pipeline
            let sessionID = try await pipeline.startSession()
            let board = h.addresses[0].rawValue
            try await h.eventually("samples before the stall") { s in s.boards.allSatisfy { $0.gyroSamplesInSession >= 100 } }
            try await h.simulator.stall(0, seconds: 8)
            try await Task.sleep(for: .seconds(8))
            let filled = try await h.eventually("the gap filled from the flash log", timeout: .seconds(90)) { s in
                (s.boards.first { $0.address == board }?.gyroSamplesBackfilled ?? 0) > 0
            }
            try await Task.sleep(for: .seconds(2))
            try await pipeline.stopSession()
            let status = await pipeline.status
            let dataset = try h.gateway.store.dataset(sessionID: sessionID)
            let points = dataset.points.filter { $0.board == board }.map(\.point)
            let backfilled = points.filter(\.backfilled)
            let indices = points.map(Self.index)
            let missed = points.reduce(0) { $0 + $1.missedBefore }
            let shown = filled.boards.first { $0.address == board }
            var holes: [String] = []
            for (a, b) in zip(points, points.dropFirst()) where Self.index(b) != Self.index(a) + 1 {
                holes.append("\(Self.index(a))\(a.backfilled ? "b" : "")->\(Self.index(b))\(b.backfilled ? "b" : "") missed \(b.missedBefore)")
            }
            print("holes: \(holes)")
            print("gap marks: \(points.filter { $0.missedBefore > 0 }.map { "\(Self.index($0))\($0.backfilled ? "b" : "") missed \($0.missedBefore) gap \($0.gapMilliseconds) ms" })")
            var seen: [Int: RecordedPoint] = [:]
            for p in points {
                if let twin = seen[Self.index(p)] {
                    print("twice: \(Self.index(p)) at \(twin.gyroscope.timestamp)\(twin.backfilled ? "b" : "") and \(p.gyroscope.timestamp)\(p.backfilled ? "b" : "")")
                }
                seen[Self.index(p)] = p
            }
            print("backfill end to end: \(points.count) points, \(backfilled.count) backfilled, \(missed) missed, "
                  + "flash log \(shown?.flashLog ?? "-")")
            #expect(status.problems.filter { $0.area == "buffer" }.isEmpty, "\(status.problems)")
            #expect(Set(indices).count == indices.count, "no sample twice")
            #expect(zip(points, points.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp }, "time order")
            // Every sample the board took is in the session once: no index is missing between
            // its first and last point. The 8 s stall is not quite 400 samples: each of the
            // watchdog's stream restarts during it (3 here) writes the gyro's start again,
            // which pauses the sensor for a few periods (40-60 ms unloaded), so the board took
            // fewer (the gap marks below count those pauses, which hold no sample, by time).
            // Before the placement followed the sensor's restarts, snapping the samples after
            // a restart to the grid of before it dropped up to every third one as a collision.
            #expect(holes.isEmpty, "every sample the board took is in the session: \(holes)")
            #expect(backfilled.count + missed >= 390, "backfilled \(backfilled.count) + paused \(missed) cover the 8 s")
            #expect(missed <= 60, "still missing \(missed)")
            let span = (indices.max() ?? 0) - (indices.min() ?? 0) + 1
            #expect(points.count + missed >= span - 2, "points \(points.count) + missed \(missed) cover the \(span) samples")
        }
    }
}
