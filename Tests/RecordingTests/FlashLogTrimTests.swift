import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// The recorder keeps a board's flash log short by trimming it while the stream is healthy
/// (issue 21). A trim stops the board's logging for its three writes, so what the board takes
/// meanwhile is in no log: the stream must be carrying it. The real-BlueZ VM's backfill group
/// lost 2 samples (1579-1580) to a trim sent 1.4 s into a 4 s silence of the board.
@Suite("Flash log trims")
struct FlashLogTrimTests {
    /// Streams 100 Hz gyro from a board model to a recorder that expects backfill, asking for
    /// the log work every 100 ms; the board's notifications stop reaching the recorder from
    /// `silentFrom` seconds on. Returns the trims asked for, each with its time in seconds.
    func trims(seconds: Double, silentFrom: Double?) throws -> [Double] {
        let store = MemoryStore()
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        let controller = SessionController(store: store, timeBase: base)
        var board = SimulatedBoard(profile: .metaMotionR, seed: 5)
        for p in LoggingCommands.start(overwriteWhenFull: true)
            + Commands.startGyro(GyroConfiguration(rate: .hz100, range: .dps2000), mode: .single, chip: .bmi160) {
            _ = board.write(p.bytes)
        }
        let decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps2000, accelerometerRange: .g4)
        controller.expectBackfill(board: "B", true)
        controller.attach(board: "B", gyroRateHertz: 100)
        try controller.start(trigger: .controlAPI, now: 0)
        var asked: [Double] = []
        var now: Int64 = 0
        while now < Int64(seconds * 1e9) {
            now += 100_000_000
            for n in board.advance(to: UInt64(now)) {
                if let silentFrom, Double(n.nanoseconds) / 1e9 >= silentFrom { continue }
                controller.ingest(board: "B", event: decoder.decode(n.bytes), receivedAt: Int64(n.nanoseconds))
            }
            controller.tick(now: now)
            for trim in controller.flashLogTrims(now: now) {
                if case .trim = trim { asked.append(Double(now) / 1e9) }
            }
        }
        return asked
    }

    @Test("a healthy stream's log is trimmed")
    func healthyStreamIsTrimmed() throws {
        let asked = try trims(seconds: 30, silentFrom: nil)
        #expect(asked.count >= 3, "trims asked at \(asked)")
    }

    @Test("no trim while the board is silent: the samples taken during it would be in no log")
    func noTrimWhileSilent() throws {
        // Silent from 14.0 s, 1.1 s before the trim due at 15.1 s (marks every 5 s): the
        // recorder's points reach 2 s past the previous mark (the rule that held before), as in
        // the VM, where the trim came 1.4 s into the silence.
        let asked = try trims(seconds: 20, silentFrom: 14.0)
        #expect(!asked.contains { $0 > 14.0 }, "trims asked while the board was silent, at \(asked.filter { $0 > 14.0 }) s")
        #expect(asked.contains { $0 < 14 }, "no trim before the silence either: \(asked)")
    }
}
