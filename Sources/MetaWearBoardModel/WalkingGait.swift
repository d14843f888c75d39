import Foundation

/// What a simulated board's samples carry.
public enum SimulatedSignal: String, Hashable, Sendable, CaseIterable {
    /// ``SimulatedBoard/signal(_:seed:index:)``: x is the sample index, y and z a hash of index
    /// and seed, so tests and the soak can check loss, order and value from the bytes alone.
    /// Readings span the full scale (up to ±2,000 °/s).
    case checkable
    /// A person walking with the board on the lower leg (``WalkingGait``): what the demo and a
    /// researcher's plots should look like.
    case walking
}

/// A walking person's lower leg, as a gyro and accelerometer there read it: a step rhythm of
/// 1.6-1.9 steps a second, angular velocity of tens to about 270 °/s (largest about the
/// axis the leg swings around), acceleration around 1 g with the step's bounce, and a little
/// noise. Each board (seed) walks at its own pace and phase. Deterministic: a function of the
/// seed and the sample's time, so a replay is the same walk.
public enum WalkingGait {
    /// Steps a second for a board: 1.6-1.9, spread by the seed.
    public static func stepsPerSecond(seed: UInt32) -> Double {
        1.6 + 0.3 * fraction(seed &* 0x9E37_79B9)
    }

    /// Sample `index` at `rateHertz`, in °/s (gyro) or g (accelerometer), x/y/z.
    public static func sample(_ sensor: SimulatedSensorKind, seed: UInt32, index: UInt64, rateHertz: Double) -> (x: Double, y: Double, z: Double) {
        let t = Double(index) / rateHertz
        let phase = 2 * Double.pi * fraction(seed &* 0x85EB_CA6B)
        // One leg swings once per stride, i.e. every second step.
        let stride = 2 * Double.pi * stepsPerSecond(seed: seed) / 2 * t + phase
        // Uniform noise in -1...1 per axis, from the checkable signal's hash of (seed, index).
        let hash = SimulatedBoard.signal(sensor, seed: seed, index: index)
        let noiseY = Double(hash.y) / 32768, noiseZ = Double(hash.z) / 32768
        let noiseX = Double(Int16(truncatingIfNeeded: Int(hash.y) &* 31 &+ Int(hash.z))) / 32768
        switch sensor {
        case .gyro:
            // Swing: a large forward rotation, a smaller backward one at heel strike.
            let swing = 210 * sin(stride) + 60 * sin(2 * stride + 0.6)
            return (swing + 6 * noiseX,
                    35 * sin(stride + 1.1) + 4 * noiseY,
                    20 * sin(2 * stride + phase) + 4 * noiseZ)
        case .accelerometer:
            return (0.25 * sin(stride + 0.4) + 0.02 * noiseX,
                    0.10 * sin(2 * stride) + 0.02 * noiseY,
                    1.0 + 0.35 * sin(2 * stride + 0.9) + 0.03 * noiseZ)
        }
    }

    /// `value` in a sensor's raw counts for `countsPerUnit`, clamped to the register.
    static func counts(_ value: Double, _ countsPerUnit: Double) -> Int16 {
        let raw = (value * countsPerUnit).rounded()
        return Int16(max(Double(Int16.min), min(Double(Int16.max), raw)))
    }

    /// 0..<1 from 32 bits.
    private static func fraction(_ bits: UInt32) -> Double {
        Double(bits) / 4_294_967_296
    }
}

extension SimulatedBoard {
    /// The walking gait's sample `index` in raw counts for the sensor's configured rate and range.
    func walkingSample(_ sensor: SimulatedSensorKind, _ index: UInt64) -> (x: Int16, y: Int16, z: Int16) {
        let config = state(sensor).config
        let rate = Self.odrTimes32(sensor, config).map { Double($0) / 32 } ?? 100
        let value = WalkingGait.sample(sensor, seed: seed, index: index, rateHertz: rate)
        let scale = countsPerUnit(sensor, rangeByte: config.count > 1 ? config[1] : 0)
        return (WalkingGait.counts(value.x, scale), WalkingGait.counts(value.y, scale), WalkingGait.counts(value.z, scale))
    }

    /// Counts per °/s or per g for a range byte (reference metawear-protocol.md §4.2, §5.2).
    func countsPerUnit(_ sensor: SimulatedSensorKind, rangeByte: UInt8) -> Double {
        switch (sensor, profile.chip) {
        case (.gyro, _):
            return 16.4 * Double(1 << Int(min(rangeByte, 4)))
        case (.accelerometer, .bmi160):
            return [0x03: 16384, 0x05: 8192, 0x08: 4096, 0x0C: 2048][rangeByte] ?? 16384
        case (.accelerometer, .bmi270):
            return 16384 / Double(1 << Int(min(rangeByte, 3)))
        }
    }
}
