import Basics
import Foundation
import GNSS
import MetaWear
import MetaWearBoardModel
import Testing
@testable import Recording

/// Issue 18 defect 6: every real gap carries how many samples are missing and how long it
/// lasted, also when the hole is a link drop (the board's stream is re-attached).
@Suite("Gaps: samples missing and duration")
struct GapTests {
    /// Streams one simulated 100 Hz board for `seconds` over a ``BatchingLinkDriver`` link
    /// with `hole` lost.
    func record(seconds: Double, hole: (Double, Double), reattach: Bool, store: MemoryStore) throws -> Int {
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        let controller = SessionController(store: store, timeBase: base)
        var board = SimulatedBoard(profile: .metaMotionR, seed: 1)
        for p in Commands.startGyro(GyroConfiguration(rate: .hz100, range: .dps2000), mode: .single, chip: .bmi160) { _ = board.write(p.bytes) }
        controller.attach(board: "B", gyroRateHertz: 100)
        try controller.start(trigger: .controlAPI, now: 0)
        let (delivered, now) = try BatchingLinkDriver(hole: hole, reattach: reattach, seed: 7).run(&board, into: controller, seconds: seconds)
        try controller.stop(trigger: .controlAPI, now: now)
        return delivered
    }

    @Test("a link drop's hole (board re-attached) is marked with the samples missing and its duration",
          arguments: [false, true])
    func holeIsMarked(reattach: Bool) throws {
        let store = MemoryStore()
        let delivered = try record(seconds: 8, hole: (3.0, 5.0), reattach: reattach, store: store)
        let points = try store.sealed.flatMap { try PointCodec.decode($0.chunk.bytes) }
        #expect(points.count == delivered)
        let gaps = points.filter { $0.missedBefore > 0 }
        try #require(gaps.count == 1, "one gap expected, got \(gaps.map { ($0.missedBefore, $0.gapMilliseconds) })")
        // 2 s at 100 Hz, give or take the connection events at the hole's edges.
        #expect((190...210).contains(gaps[0].missedBefore), "missed \(gaps[0].missedBefore)")
        #expect(abs(gaps[0].gapMilliseconds - (gaps[0].missedBefore + 1) * 10) <= 15,
                "gap \(gaps[0].gapMilliseconds) ms for \(gaps[0].missedBefore) missing samples")
        let json = RealtimeDataDocument.value(gaps[0]).jsonText
        #expect(json.contains("\"missed_before\":\(gaps[0].missedBefore)") && json.contains("\"gap_ms\":\(gaps[0].gapMilliseconds)"), "\(json)")
        // Board samples emitted = delivered + missing.
        #expect(abs(delivered + gaps[0].missedBefore - 800) <= 3)
    }

    @Test("a stream without holes carries no gap (connection-event jitter of 7.5-30 ms is not a loss)")
    func noHoleNoGap() throws {
        let store = MemoryStore()
        _ = try record(seconds: 8, hole: (100, 100), reattach: false, store: store)
        let points = try store.sealed.flatMap { try PointCodec.decode($0.chunk.bytes) }
        #expect(points.allSatisfy { $0.missedBefore == 0 && $0.gapMilliseconds == 0 })
    }

    @Test("a re-attached stream whose link is faster than the old one's never puts points before the last one")
    func reattachedStreamKeepsTimeOrder() throws {
        let store = MemoryStore()
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        let controller = SessionController(store: store, timeBase: base)
        var board = SimulatedBoard(profile: .metaMotionR, seed: 1)
        for p in Commands.startGyro(GyroConfiguration(rate: .hz100, range: .dps2000), mode: .single, chip: .bmi160) { _ = board.write(p.bytes) }
        let decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps2000, accelerometerRange: .g4)
        controller.attach(board: "B", gyroRateHertz: 100)
        try controller.start(trigger: .controlAPI, now: 0)
        // The old link delivers every sample 30 ms after the board took it, the new one at
        // once; no sample is lost in between. The new stream's first three samples then get
        // times at or before the old stream's last.
        var delivered = 0
        var now: Int64 = 0
        func deliver(_ n: SimulatedBoard.TimedNotification, at receivedAt: Int64) {
            let event = decoder.decode(n.bytes)
            if case .gyro(let s) = event { delivered += s.count }
            controller.ingest(board: "B", event: event, receivedAt: receivedAt)
            controller.tick(now: receivedAt)
        }
        for n in board.advance(to: 3_000_000_000 - 1) { deliver(n, at: Int64(n.nanoseconds) + 30_000_000) }
        now = 3_030_000_000
        controller.detach(board: "B", now: now)
        controller.attach(board: "B", gyroRateHertz: 100)
        for n in board.advance(to: 6_000_000_000) { now = max(now, Int64(n.nanoseconds)); deliver(n, at: now) }
        try controller.stop(trigger: .controlAPI, now: now + 10_000_000)
        let points = try store.sealed.flatMap { try PointCodec.decode($0.chunk.bytes) }
        #expect(points.count == delivered)
        let backwards = zip(points, points.dropFirst()).filter { $1.gyroscope.timestamp <= $0.gyroscope.timestamp }
        #expect(backwards.isEmpty, "\(backwards.count) points at or before the previous one: \(backwards.prefix(3).map { ($0.gyroscope.timestamp, $1.gyroscope.timestamp) })")
        #expect(points.allSatisfy { $0.missedBefore == 0 }, "no sample was lost")
    }

    @Test("the gap duration survives the point codec")
    func codecKeepsDuration() throws {
        let p = RecordedPoint(gyroscope: GyroReading(x: 1, y: 2, z: 3, timestamp: 1000), location: nil, missedBefore: 7, gapMilliseconds: 80)
        #expect(try PointCodec.decode(PointCodec.encode([p])) == [p])
        #expect(PointCodec.encode([p]).count == PointCodec.maxPointSize - 32 - 20)
    }
}
