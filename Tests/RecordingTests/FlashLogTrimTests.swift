import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// The recorder trims a board's flash log only between sessions (issue 21). A trim stops the
/// board's logging for its three writes, so what the board takes meanwhile is in no log, only
/// in the stream: the real-BlueZ VM's backfill group lost 2 samples (1579-1580) to a trim sent
/// 1.4 s into a 4 s silence of the board, and a trim sent while the board was heard within
/// the last half second still lost what a silence beginning just before it took
/// (`FlashLogPageSafetyTests.aBoardSilentRightAtATrimLosesNothing`).
@Suite("Flash log trims")
struct FlashLogTrimTests {
    /// Streams 100 Hz gyro from a board model to a recorder that expects backfill, asking for
    /// the log work every 100 ms; the board's notifications stop reaching the recorder from
    /// `silentFrom` seconds on; the session stops at `stopAt`. Returns the trims asked for,
    /// each with its time in seconds.
    func trims(seconds: Double, silentFrom: Double?, stopAt: Double? = nil) throws -> [Double] {
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
            if let stopAt, now >= Int64(stopAt * 1e9), controller.state != .idle {
                try controller.stop(trigger: .controlAPI, now: now)
            }
            controller.tick(now: now)
            for trim in controller.flashLogTrims(now: now) {
                if case .trim = trim { asked.append(Double(now) / 1e9) }
            }
        }
        return asked
    }

    @Test("no trim while a session records, healthy stream or not: its pause would take samples out of the log")
    func noTrimWhileRecording() throws {
        #expect(try trims(seconds: 30, silentFrom: nil).isEmpty)
        // Silent from 14.0 s, as the VM's board was 1.4 s before a trim.
        #expect(try trims(seconds: 20, silentFrom: 14.0).isEmpty)
    }

    @Test("between sessions the log is trimmed: nothing logged then is wanted")
    func betweenSessionsTheLogIsTrimmed() throws {
        let asked = try trims(seconds: 40, silentFrom: nil, stopAt: 20)
        #expect(!asked.isEmpty && asked.allSatisfy { $0 > 20 }, "trims asked at \(asked)")
    }
}
