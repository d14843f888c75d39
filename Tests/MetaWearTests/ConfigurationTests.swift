import MetaWear
import Testing

@Suite struct ConfigurationTests {
    @Test func invalidGyroValuesNameTheAllowedOnes() throws {
        #expect(throws: ConfigurationError.unsupportedGyroRate(60)) { try GyroConfiguration(rateHertz: 60, rangeDegreesPerSecond: 500) }
        #expect(throws: ConfigurationError.unsupportedGyroRange(300)) { try GyroConfiguration(rateHertz: 50, rangeDegreesPerSecond: 300) }
        #expect(ConfigurationError.unsupportedGyroRate(60).description
                == "gyro rate 60 Hz is not supported; allowed: 25, 50, 100, 200, 400, 800, 1600, 3200 Hz")
        #expect(ConfigurationError.unsupportedGyroRange(300).description
                == "gyro range ±300 °/s is not supported; allowed: ±125, ±250, ±500, ±1000, ±2000 °/s")
        #expect(try GyroConfiguration(rateHertz: 3200, rangeDegreesPerSecond: 125).bytes == [0x2D, 0x04])
    }

    @Test func invalidAccelerometerValuesNameTheAllowedOnes() throws {
        #expect(throws: ConfigurationError.unsupportedAccelerometerRate(60)) { try AccelerometerConfiguration(rateHertz: 60, rangeG: 4) }
        #expect(throws: ConfigurationError.unsupportedAccelerometerRange(6)) { try AccelerometerConfiguration(rateHertz: 50, rangeG: 6) }
        #expect(ConfigurationError.unsupportedAccelerometerRate(3200).description.contains("0.78125, 1.5625, 3.125, 6.25, 12.5, 25, 50, 100, 200, 400, 800, 1600 Hz"))
        #expect(ConfigurationError.unsupportedAccelerometerRange(6).description.hasSuffix("allowed: ±2, ±4, ±8, ±16 g"))
        #expect(try AccelerometerConfiguration(rateHertz: 12.5, rangeG: 16).bytes(for: .bmi160) == [0x25, 0x0C])
    }

    @Test func linkBudgetRejectsSingleSampleAbove100Hz() throws {
        let g200 = GyroConfiguration(rate: .hz200, range: .dps1000)
        #expect(throws: ConfigurationError.exceedsLinkBudget(notificationsPerSecond: 200, limit: 100)) {
            try StreamingConfiguration(gyro: g200)
        }
        let packed = try StreamingConfiguration(gyro: g200, gyroMode: .packed)
        #expect(abs(packed.notificationsPerSecond - 66.67) < 0.01)
        // Gyro and accelerometer both at 100 Hz packed ≈ 67/s: allowed (reference §9.1).
        _ = try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz100, range: .dps500), gyroMode: .packed,
                                       accelerometer: AccelerometerConfiguration(rate: .hz100, range: .g4), accelerometerMode: .packed)
        #expect(throws: ConfigurationError.self) {
            try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz100, range: .dps500),
                                       accelerometer: AccelerometerConfiguration(rate: .hz50, range: .g4))
        }
        _ = try StreamingConfiguration(gyro: g200, allowExceedingLinkBudget: true)
        #expect(throws: ConfigurationError.noSensorSelected) { try StreamingConfiguration(gyro: nil) }
        #expect(ConfigurationError.exceedsLinkBudget(notificationsPerSecond: 200, limit: 100).description.contains("use packed mode"))
    }

    @Test func aLoggedSensorSamplesWithoutSendingOnTheLink() throws {
        let gyro = GyroConfiguration(rate: .hz800, range: .dps2000)
        let logged = try StreamingConfiguration(gyro: gyro, accelerometer: AccelerometerConfiguration(rate: .hz100, range: .g4),
                                                logged: [.gyro])
        #expect(logged.notificationsPerSecond == 100, "only the streamed accelerometer counts against the link")
        #expect(logged.loggedRates == [.gyro: 800])
        let board = BoardDescription(model: .metaMotionR, chip: .bmi160, modules: ModuleTable([
            ModuleInfo(module: .gyro, implementation: 0, revision: 1), ModuleInfo(module: .accelerometer, implementation: 1, revision: 1)]))
        // Config, interrupt, power on: no notify-enable (13 05 01) for the logged gyro.
        #expect(try logged.plan(for: board).startCommands.map(\.bytes).prefix(3) == [hex("13 03 2B 00"), hex("13 02 01 00"), hex("13 01 01")])
        #expect(try logged.plan(for: board).startCommands.map(\.bytes).contains(hex("03 04 01")), "the accelerometer streams")
        #expect(throws: ConfigurationError.exceedsLinkBudget(notificationsPerSecond: 800, limit: 100)) {
            try StreamingConfiguration(gyro: gyro)
        }
    }

    @Test func packedNeedsRevisionOneOnBMI160() throws {
        let config = try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz200, range: .dps1000), gyroMode: .packed)
        var board = BoardDescription(model: .metaMotionR, chip: .bmi160, modules: ModuleTable([
            ModuleInfo(module: .gyro, implementation: 0, revision: 0)]))
        #expect(throws: ConfigurationError.packedUnsupported(sensor: .gyro, chip: .bmi160, revision: 0)) {
            try config.plan(for: board)
        }
        board.modules.record(ModuleInfo(module: .gyro, implementation: 0, revision: 1))
        #expect(try config.plan(for: board).startCommands.map(\.bytes)[1] == hex("13 07 01"))
        let accelOnly = try StreamingConfiguration(gyro: nil, accelerometer: AccelerometerConfiguration(rate: .hz50, range: .g4))
        #expect(throws: ConfigurationError.sensorMissing(.accelerometer)) { try accelOnly.plan(for: board) }
    }
}

extension BoardDescription {
    init(model: BoardModel, chip: IMUChip, modules: ModuleTable) {
        self.init(model: model, chip: chip, firmwareRevision: nil, modelNumber: nil, hardwareRevision: nil,
                  manufacturer: nil, serialNumber: nil, modules: modules, battery: nil, boardClock: nil)
    }
}
