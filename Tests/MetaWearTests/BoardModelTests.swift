import MetaWearBoardModel
import Testing

/// The simulated board against the reference's literal bytes (§10, §11).
@Suite struct BoardModelTests {
    @Test func answersReadsFromTheReference() {
        var board = SimulatedBoard(profile: .metaMotionR)
        #expect(board.write(hex("13 80")).notifications == [hex("13 80 00 01")])
        #expect(board.write(hex("16 80")).notifications == [hex("16 80")])
        #expect(board.write(hex("10 80")).notifications == [hex("10 80")])
        #expect(board.write(hex("11 8C")).notifications == [hex("11 8C 63 34 10")])
        #expect(board.write(hex("11 CC")).notifications.isEmpty, "silent read gets no reply")
        #expect(board.write(hex("11 8B")).notifications == [hex("11 8b 01 07 7b 52 8f c9 e8")])
        #expect(board.write(hex("13 83")).notifications == [hex("13 83 28 00")])
        #expect(board.write(hex("03 83")).notifications == [hex("03 83 28 03")])
        _ = board.advance(to: 1_530_800_000)
        #expect(board.write(hex("0B 84")).notifications == [hex("0B 84 15 04 00 00 05")])
        #expect(board.write(hex("0A 02 11 0A FF 13 01 01")).notifications == [hex("0A 02 00")])
        #expect(board.write(hex("0A 02 11 0A FF 13 01 01")).notifications == [hex("0A 02 01")])
        var mms = SimulatedBoard(profile: .metaMotionS)
        #expect(mms.write(hex("13 80")).notifications == [hex("13 80 01 00")])
        #expect(mms.write(hex("03 80")).notifications == [hex("03 80 04 00")])
        #expect(mms.write(hex("03 83")).notifications == [hex("03 83 A8 02")])
        #expect(mms.readDeviceInformation(0x2A24) == "8")
        var mmrl = SimulatedBoard(profile: .metaMotionRL)
        #expect(mmrl.write(hex("14 80")).notifications == [hex("14 80")])
    }

    @Test func streamsOnlyWithAllThreeFlagsAndAtTheConfiguredRate() {
        var board = SimulatedBoard(profile: .metaMotionS, seed: 9)
        _ = board.write(hex("13 03 27 02"))  // 50 Hz
        _ = board.write(hex("13 04 01"))
        _ = board.write(hex("13 01 01"))
        #expect(board.advance(to: 1_000_000_000).isEmpty, "no interrupt enable yet")
        _ = board.write(hex("13 02 01 00"))
        let second = board.advance(to: 2_000_000_000)
        #expect(second.count == 50)
        #expect(second.allSatisfy { $0.bytes.count == 8 && $0.bytes[0] == 0x13 && $0.bytes[1] == 0x04 })
        #expect(second.first?.nanoseconds == 1_020_000_000)
        let s0 = SimulatedBoard.signal(.gyro, seed: 9, index: 0)
        #expect(second[0].bytes[2] == UInt8(truncatingIfNeeded: s0.x) && s0.x == 0)
        _ = board.write(hex("13 04 00"))
        _ = board.write(hex("13 05 01"))  // packed register on BMI270
        // The board packs continuously from stream start: 2 samples were pending, +50 → 17 packets.
        let packed = board.advance(to: 3_000_000_000)
        #expect(packed.count == 17 && packed.allSatisfy { $0.bytes.count == 20 && $0.bytes[1] == 0x05 })
        _ = board.write(hex("13 01 00"))
        #expect(board.advance(to: 4_000_000_000).isEmpty)
    }

    @Test func accelerometerRatesIncludingSubHertz() {
        var board = SimulatedBoard(profile: .metaMotionR)
        for line in ["03 03 81 03", "03 04 01", "03 02 01 00", "03 01 01"] { _ = board.write(hex(line)) }
        #expect(board.advance(to: 12_800_000_000).count == 10, "0.78125 Hz → one sample per 1.28 s")
    }

    @Test func ignoresMalformedCommandsAndLogsEverything() {
        var board = SimulatedBoard(profile: .metaMotionR)
        let writes = ["13", "13 03 27", "13 03 0F 02", "13 03 27 09", "13 01 02", "13 02 01", "03 03 27 04",
                      "03 1C 05", "02 03 00 02 1f", "16 01 01", "42 01", "13 08 01"]
        for line in writes { #expect(board.write(hex(line)).notifications.isEmpty) }
        #expect(board.commandLog == hexLines(writes))
        #expect(board.ignoredCommands.count == writes.count)
        #expect(board.gyro.config == hex("28 00") && board.gyro.isIdle)
    }

    /// No Bosch gyro or accelerometer takes a configuration while running, on either chip
    /// (the SDK's documentation); once stopped, it does.
    @Test(arguments: [BoardProfile.metaMotionR, .metaMotionS])
    func runningSensorsIgnoreConfiguration(_ profile: BoardProfile) {
        var board = SimulatedBoard(profile: profile)
        let accelerometerConfig = profile.chip == .bmi160 ? "03 03 27 05" : "03 03 A7 01"
        for line in ["13 01 01", "03 01 01"] { _ = board.write(hex(line)) }
        let before = (board.gyro.config, board.accelerometer.config)
        for line in ["13 03 27 02", accelerometerConfig] { _ = board.write(hex(line)) }
        #expect(board.gyro.config == before.0 && board.accelerometer.config == before.1)
        #expect(board.ignoredCommands.map(\.reason) == [
            "\(profile.chip.rawValue) gyro ignores config while running",
            "\(profile.chip.rawValue) accelerometer ignores config while running",
        ])
        for line in ["13 01 00", "03 01 00", "13 03 27 02", accelerometerConfig] { _ = board.write(hex(line)) }
        #expect(board.gyro.config == hex("27 02") && board.accelerometer.config == Array(hex(accelerometerConfig).dropFirst(2)))
        #expect(board.ignoredCommands.count == 2)
    }

    @Test func buttonLEDAndLinkCommands() {
        var board = SimulatedBoard(profile: .metaMotionR)
        #expect(board.pressButton().isEmpty)
        _ = board.write(hex("01 01 01"))
        #expect(board.pressButton() == [hex("01 01 01")] && board.releaseButton() == [hex("01 01 00")])
        for line in ["02 02 01", "02 03 00 02 1F 00 00 00 32 00 00 00 F4 01 00 00 03", "02 01 01"] { _ = board.write(hex(line)) }
        #expect(board.ledPatterns[0x00]?.count == 14 && board.ledPlayState == 1)
        _ = board.write(hex("11 09 06 00 06 00 00 00 58 02"))
        #expect(board.requestedConnectionParameters == hex("06 00 06 00 00 00 58 02"))
        #expect(board.write(hex("FE 06")).linkEffect == .disconnect)
        #expect(board.buttonNotify, "state survives a plain disconnect")
        #expect(board.write(hex("FE 01")).linkEffect == .reset)
        #expect(!board.buttonNotify && board.ledPatterns.isEmpty && board.resetUID == 6)
        #expect(board.write(hex("FE 03 01 01 00 01")).notifications == [hex("01 01 01")])
        #expect(board.ignoredCommands.isEmpty)
    }

    @Test func faultInjectionDropsAndStalls() {
        var board = SimulatedBoard(profile: .metaMotionR)
        board.faults.dropEveryNthNotification = 10
        for line in ["13 03 28 00", "13 05 01", "13 02 01 00", "13 01 01"] { _ = board.write(hex(line)) }
        #expect(board.advance(to: 1_000_000_000).count == 90)
        board.faults.streamStalled = true
        #expect(board.advance(to: 2_000_000_000).isEmpty)
        #expect(board.droppedNotifications == 110)
        #expect(board.gyro.nextSampleIndex == 200)
    }
}
