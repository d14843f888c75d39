import MetaWearBoardModel
import Testing

/// The simulated boards' walking gait, read from the streamed bytes as the gateway would:
/// a step rhythm of 1-2 steps a second, tens to a few hundred °/s, each board its own.
@Suite struct WalkingGaitTests {
    /// Ten seconds of gyro x in °/s from a board streaming at 100 Hz with the range byte given.
    static func gyroX(seed: UInt32, rangeByte: UInt8 = 0x00, profile: BoardProfile = .metaMotionS) -> [Double] {
        var board = SimulatedBoard(profile: profile, seed: seed)
        board.signal = .walking
        let scale = [16.4, 32.8, 65.6, 131.2, 262.4][Int(rangeByte)]
        for line in ["13 03 28 0\(rangeByte)", "13 04 01", "13 02 01 00", "13 01 01"] { _ = board.write(hex(line)) }
        return board.advance(to: 10_000_000_000).map { notification in
            Double(Int16(bitPattern: UInt16(notification.bytes[2]) | UInt16(notification.bytes[3]) << 8)) / scale
        }
    }

    /// Strides counted as upward zero crossings of the swing axis (one a stride, two steps).
    static func stepsPerSecond(_ x: [Double], rateHertz: Double = 100) -> Double {
        let crossings = zip(x, x.dropFirst()).filter { $0 < 0 && $1 >= 0 }.count
        return 2 * Double(crossings) / (Double(x.count) / rateHertz)
    }

    @Test(arguments: [UInt32(1), 2, 3, 4])
    func aBoardWalksAtOneToTwoStepsASecondWithTensToHundredsOfDegrees(seed: UInt32) {
        let x = Self.gyroX(seed: seed)
        #expect(x.count == 1000)
        let peak = x.map(abs).max() ?? 0
        #expect((150...400).contains(peak), "swing peak \(peak) °/s")
        let mean = x.map(abs).reduce(0, +) / Double(x.count)
        #expect((30...250).contains(mean), "mean |x| \(mean) °/s")
        let steps = Self.stepsPerSecond(x)
        #expect((1.0...2.2).contains(steps), "\(steps) steps/s (seed \(seed))")
    }

    @Test func theSameWalkReadsTheSameAtAnotherRangeAndBoardsDiffer() {
        let wide = Self.gyroX(seed: 1, rangeByte: 0x00)
        let narrow = Self.gyroX(seed: 1, rangeByte: 0x02)
        #expect(zip(wide, narrow).allSatisfy { abs($0 - $1) < 0.2 }, "±2000 and ±500 °/s give the same °/s")
        let other = Self.gyroX(seed: 2)
        #expect(zip(wide, other).filter { abs($0 - $1) > 20 }.count > 200, "boards walk in their own phase and pace")
        #expect(Self.gyroX(seed: 1) == wide, "deterministic")
    }

    @Test func theCheckableSignalStaysTheDefault() {
        var board = SimulatedBoard(profile: .metaMotionS, seed: 3)
        #expect(board.signal == .checkable)
        for line in ["13 03 28 00", "13 04 01", "13 02 01 00", "13 01 01"] { _ = board.write(hex(line)) }
        let first = board.advance(to: 1_000_000_000)
        let s = SimulatedBoard.signal(.gyro, seed: 3, index: 5)
        #expect(Array(first[5].bytes[2...3]) == [UInt8(truncatingIfNeeded: s.x), UInt8(truncatingIfNeeded: UInt16(bitPattern: s.x) >> 8)])
    }
}
