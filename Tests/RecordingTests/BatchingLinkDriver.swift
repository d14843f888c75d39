import Basics
import MetaWear
import MetaWearBoardModel
import Recording

/// A simulated board's stream into a session controller over a batching link: the board's
/// notifications arrive in connection events 7.5-30 ms apart (seeded), and a `hole` (start,
/// end, seconds) is a stretch they never arrive, with the board detached and re-attached
/// around it when `reattach` (a link drop) or left attached (lost notifications).
struct BatchingLinkDriver {
    var hole: (Double, Double)
    var reattach: Bool
    var seed: UInt64
    /// How much earlier than their arrival notifications are handed over at `t` seconds,
    /// nanoseconds: a new link's timestamper that misjudges its first second (0: none).
    var early: (Double) -> Int64 = { _ in 0 }
    /// Further holes, like `hole`.
    var moreHoles: [(Double, Double)] = []
    /// A stretch (start, end, seconds) the board's gyro is stopped, as a stream restart does.
    var gyroPause: (Double, Double)?
    /// Times (seconds) the board is detached and attached again at once, losing nothing: the
    /// stream restarted while its notifications were only late.
    var restarts: [Double] = []
    /// The accelerometer's rate when it streams beside the gyro (each attach says so).
    var accelerometerRateHertz: Double?

    /// Streams `board` (gyro started) into `controller` (attached, recording) for `seconds`,
    /// ticking it after each connection event, then runs `afterEvent` with the time in
    /// seconds and the board as it is then. `deliver` decides for each decoded notification whether it reaches the
    /// controller (its third argument: inside the hole); by default none in the hole does.
    /// Returns the gyro samples delivered and the time of the last event, nanoseconds.
    func run(_ board: inout SimulatedBoard, into controller: SessionController, seconds: Double,
             deliver: (SimulatedBoard.TimedNotification, MetaWearEvent, Bool) -> Bool = { !$2 },
             afterEvent: (Double, SimulatedBoard) throws -> Void = { _, _ in }) throws -> (delivered: Int, now: Int64) {
        let decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps2000, accelerometerRange: .g4)
        var now: Int64 = 0
        var rng = SeededRandom(seed: seed)
        print("BatchingLinkDriver seed \(seed)")
        var delivered = 0
        var inHole = false
        while Double(now) < seconds * 1e9 {
            let previous = now
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            let t = Double(now) / 1e9
            let holeNow = ([hole] + moreHoles).contains { t >= $0.0 && t < $0.1 }
            if holeNow != inHole {
                inHole = holeNow
                if reattach {
                    if holeNow { controller.detach(board: "B", now: now) } else { controller.attach(board: "B", gyroRateHertz: 100, accelerometerRateHertz: accelerometerRateHertz) }
                }
            }
            for restart in restarts where t >= restart && t - Double(now - previous) / 1e9 < restart {
                controller.detach(board: "B", now: now)
                controller.attach(board: "B", gyroRateHertz: 100, accelerometerRateHertz: accelerometerRateHertz)
            }
            if let pause = gyroPause, t >= pause.0, t - Double(now - previous) / 1e9 < pause.0 {
                for p in Commands.stop(.gyro, mode: .single, chip: .bmi160) { _ = board.write(p.bytes) }
            }
            if let pause = gyroPause, t >= pause.1, t - Double(now - previous) / 1e9 < pause.1 {
                for p in Commands.startGyro(GyroConfiguration(rate: .hz100, range: .dps2000), mode: .single, chip: .bmi160) {
                    _ = board.write(p.bytes)
                }
            }
            for n in board.advance(to: UInt64(now)) {
                let event = decoder.decode(n.bytes)
                guard deliver(n, event, holeNow) else { continue }
                if case .gyro(let s) = event { delivered += s.count }
                controller.ingest(board: "B", event: event, receivedAt: now - early(t))
            }
            controller.tick(now: now)
            try afterEvent(t, board)
        }
        return (delivered, now)
    }
}
