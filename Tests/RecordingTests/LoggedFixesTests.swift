import Foundation
import GNSS
import MetaWear
import Recording
import Testing

/// A logged board's points are located from fixes kept for as long as its download lags
/// (issue 21 part 3): at 3,200 Hz a board's log is read out long after the samples were taken,
/// and the fixes of that time must still be there.
@Suite("Fixes kept for logged downloads")
struct LoggedFixesTests {
    /// Records a logged 800 Hz board for `lag` seconds of fixes at 1 Hz before the first page
    /// arrives: a page of 100 samples taken 10 s into the session. The points, in order.
    func lateFirstPage(lag: Int, fixLimit: Int = SessionController.Configuration().loggedFixLimit) throws -> [RecordedPoint] {
        let store = MemoryStore()
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        var configuration = SessionController.Configuration()
        configuration.recordsLogged = true
        configuration.loggedFixLimit = fixLimit
        let controller = SessionController(store: store, timeBase: base, configuration: configuration)
        controller.attach(board: "B", gyroRateHertz: 800)
        try controller.start(trigger: .controlAPI, now: 0)
        for second in 0...lag {
            let when = Date(timeIntervalSince1970: 1_800_000_000 + Double(second))
            controller.ingest(fix: GNSSFix(time: when, timeOfDay: NMEATimeOfDay(microseconds: 0), mode: .threeD,
                                           latitude: 47 + Double(second) * 1e-5, longitude: 8, hdop: 0.9,
                                           systemClockOffset: 0, arrival: when), now: Int64(second) * 1_000_000_000)
            controller.tick(now: Int64(second) * 1_000_000_000)
        }
        // Tick 0 of boot 1 at monotonic 0: sample k taken 10 s + k × 1.25 ms into the session.
        let samples = (0..<100).map { k in
            LoggedSample(resetUID: 1, tick: UInt32((10_000 + Double(k) * 1.25) / BoardTicks.millisecondsPerTick),
                         raw: RawVector(x: Int16(k), y: 0, z: 0))
        }
        let now = Int64(lag) * 1_000_000_000
        let outcome = controller.recordLogged(board: "B", gyro: samples, gyroScale: 16.4, bootOrigins: [1: 0], now: now)
        #expect(outcome.recorded == 100 && outcome.durable)
        try controller.stop(trigger: .controlAPI, now: now)
        return try store.sealed.filter { $0.chunk.board == "B" }.flatMap { try PointCodec.decode($0.chunk.bytes) }
    }

    @Test func aDownloadFiveMinutesBehindStillLocatesItsPoints() throws {
        let points = try lateFirstPage(lag: 300)
        #expect(points.count == 100)
        let unlocated = points.filter { $0.location == nil }
        #expect(unlocated.isEmpty, "\(unlocated.count) of \(points.count) without a location: \(unlocated.first?.missingLocation.map { "\($0)" } ?? "-")")
        // Between the fixes of seconds 10 and 11, interpolated by time.
        let first = try #require(points.first?.location)
        #expect(abs(first.latitude - (47 + 10 * 1e-5)) < 1e-7, "\(first.latitude)")
    }

    @Test func theFixesKeptAreBounded() throws {
        // With room for 100 fixes, a page 300 s late finds none of its time: the bound holds
        // (the points go without a location rather than memory growing with the lag).
        let points = try lateFirstPage(lag: 300, fixLimit: 100)
        #expect(points.count == 100 && points.allSatisfy { $0.location == nil })
    }
}
