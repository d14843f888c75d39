import MetaWear
import MetaWearBoardModel
import Testing

@Suite struct HandshakeTests {
    static let profiles: [(BoardProfile, BoardModel, IMUChip)] = [
        (.metaMotionR, .metaMotionR, .bmi160), (.metaMotionRL, .metaMotionRL, .bmi160), (.metaMotionS, .metaMotionS, .bmi270),
    ]

    func gyro50() throws -> StreamingConfiguration {
        try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz50, range: .dps500))
    }

    @Test(arguments: [0, 1, 2])
    func handshakeDescribesEachProfile(_ i: Int) throws {
        let (profile, model, chip) = Self.profiles[i]
        var harness = BoardHarness(board: SimulatedBoard(profile: profile), configuration: try gyro50())
        guard case .finished(let board, let plan) = harness.run() else { Issue.record("handshake did not finish"); return }
        #expect(board.model == model && board.chip == chip)
        #expect(board.firmwareRevision == profile.firmwareRevision && board.modelNumber == profile.modelNumber)
        #expect(board.manufacturer == "MbientLab Inc" && board.serialNumber == profile.serialNumber)
        #expect(board.modules.entries.count == 21)
        #expect(board.battery == BatteryState(percent: 99, millivolts: 4148))
        #expect(board.boardClock?.resetUID == 5)
        #expect(harness.timeouts.isEmpty)
        #expect(harness.pauses == [1500])
        let dataRegister: UInt8 = chip == .bmi160 ? 0x05 : 0x04
        #expect(plan.startCommands.map(\.bytes) == [[0x13, 0x03, 0x27, 0x02], [0x13, dataRegister, 0x01], [0x13, 0x02, 0x01, 0x00], [0x13, 0x01, 0x01]])
        // What the board saw, in order: 21 module probes, clock, battery, cleanup, conn params.
        let log = harness.board.commandLog
        #expect(log.prefix(21).map { $0[0] } == ModuleID.discoveryOrder.map(\.rawValue))
        #expect(log.prefix(21).allSatisfy { $0.count == 2 && $0[1] == 0x80 })
        #expect(log[21] == [0x0B, 0x84] && log[22] == [0x11, 0x8C])
        #expect(log.last == [0x11, 0x09, 0x06, 0x00, 0x06, 0x00, 0x00, 0x00, 0x58, 0x02])
        #expect(harness.board.ignoredCommands.isEmpty, "\(harness.board.ignoredCommands)")
    }

    /// A board still streaming another configuration (left running by an earlier session or
    /// another host) gets ours: the handshake stops every sensor before the plan configures
    /// it, so nothing relies on a running sensor taking a new configuration (it would not).
    @Test(arguments: [0, 1, 2])
    func configuresOnlyStoppedSensors(_ i: Int) throws {
        let profile = Self.profiles[i].0
        let earlier = try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz25, range: .dps2000),
                                                 accelerometer: AccelerometerConfiguration(rate: .hz25, range: .g2))
        var first = BoardHarness(board: SimulatedBoard(profile: profile), configuration: earlier)
        guard case .finished(_, let earlierPlan) = first.run() else { Issue.record("first handshake did not finish"); return }
        var board = first.board
        for packet in earlierPlan.startCommands { _ = board.write(packet.bytes) }
        #expect(board.gyro.isStreaming && board.accelerometer.isStreaming)

        let ours = try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz50, range: .dps500),
                                              accelerometer: AccelerometerConfiguration(rate: .hz50, range: .g4))
        var second = BoardHarness(board: board, configuration: ours)
        guard case .finished(_, let plan) = second.run() else { Issue.record("second handshake did not finish"); return }
        board = second.board
        for packet in plan.startCommands { _ = board.write(packet.bytes) }
        let configured = plan.startCommands.map(\.bytes).filter { $0.count == 4 && $0[1] == 0x03 }
        #expect(configured.count == 2)
        #expect(configured.contains([0x13, 0x03] + board.gyro.config) && configured.contains([0x03, 0x03] + board.accelerometer.config))
        #expect(board.gyro.isStreaming && board.accelerometer.isStreaming)
        #expect(board.ignoredCommands.isEmpty, "\(board.ignoredCommands)")
    }

    @Test func missingOptionalModuleInfoIsRetriedThenSkipped() throws {
        var board = SimulatedBoard(profile: .metaMotionS)
        board.faults.unansweredModuleInfo = [0x19]
        var harness = BoardHarness(board: board, configuration: try gyro50())
        guard case .finished(let description, _) = harness.run() else { Issue.record("should finish"); return }
        #expect(harness.timeouts == Array(repeating: .moduleInfo(.sensorFusion), count: 3))
        #expect(description.modules[.sensorFusion] == nil)
        #expect(harness.board.commandLog.filter { $0 == [0x19, 0x80] }.count == 3)
    }

    @Test func missingRequiredModuleInfoFailsClearly() throws {
        var board = SimulatedBoard(profile: .metaMotionR)
        board.faults.unansweredModuleInfo = [0x13]
        var harness = BoardHarness(board: board, configuration: try gyro50(),
                                   options: .init(attemptsPerRead: 2))
        guard case .failed(let error) = harness.run() else { Issue.record("should fail"); return }
        #expect(error == .noReply(.moduleInfo(.gyro), attempts: 2))
        #expect(error.description == "no reply to module info for gyro (0x13) after 2 attempt(s)")
    }

    @Test func packedOnBoardWithoutPackedSupportFails() throws {
        var profile = BoardProfile.metaMotionR
        profile.moduleInfo[0x13] = [0x13, 0x80, 0x00, 0x00]
        let config = try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz200, range: .dps1000), gyroMode: .packed)
        var harness = BoardHarness(board: SimulatedBoard(profile: profile), configuration: config)
        #expect(harness.run() == .failed(.configuration(.packedUnsupported(sensor: .gyro, chip: .bmi160, revision: 0))))
    }

    @Test func staleTimeoutsAndDuplicatesAreIgnored() throws {
        var sequencer = HandshakeSequencer(configuration: try gyro50())
        #expect(sequencer.start() == [.readDeviceInformation(.firmwareRevision), .awaitReply(.deviceInformation(.firmwareRevision))])
        #expect(sequencer.start().isEmpty)
        #expect(sequencer.timedOut(.battery).isEmpty)
        #expect(sequencer.receive(.modelNumber, value: "5").isEmpty)
        #expect(sequencer.receive(notification: [0x13, 0x05, 1, 2, 3, 4, 5, 6]).isEmpty)
        #expect(sequencer.receive(.firmwareRevision, value: "1.7.2") == [.readDeviceInformation(.modelNumber), .awaitReply(.deviceInformation(.modelNumber))])
    }

    @Test func unreadableDeviceInformationIsRetriedThenLeftEmpty() throws {
        var sequencer = HandshakeSequencer(configuration: try gyro50(), options: .init(attemptsPerRead: 2))
        var actions = sequencer.start()
        var reads = 0
        while case .deviceInformation(let field)? = sequencer.awaiting {
            if actions.contains(.readDeviceInformation(field)) { reads += 1 }
            actions = sequencer.timedOut(.deviceInformation(field))
        }
        #expect(reads == 10, "5 DIS fields × 2 attempts")
        #expect(actions == [.write(ModuleInfo.request(for: .switchModule)), .awaitReply(.moduleInfo(.switchModule))])
    }

    @Test func truncatedModuleInfoReplyIsNotAccepted() throws {
        var sequencer = HandshakeSequencer(configuration: try gyro50(), options: .init(modulesToProbe: [.gyro]))
        _ = sequencer.start()
        for field in DeviceInformationField.allCases { _ = sequencer.receive(field, value: "5") }
        #expect(sequencer.awaiting == .moduleInfo(.gyro))
        #expect(sequencer.receive(notification: [0x13, 0x80, 0x00]).isEmpty)
        #expect(sequencer.awaiting == .moduleInfo(.gyro))
        let done = sequencer.receive(notification: [0x13, 0x80, 0x00, 0x01])
        guard case .finished(let board, _)? = done.last else { Issue.record("\(done)"); return }
        #expect(board.chip == .bmi160 && board.model == .metaMotionRL && board.battery == nil && board.boardClock == nil)
        #expect(done.dropLast().map { if case .write(let p) = $0 { p.bytes } else { [] } } == hexLines(["13 01 00", "13 02 00 01", "13 05 00", "13 07 00"]))
    }

    /// End to end: handshake, start, 60 simulated seconds at 100 Hz, stop. Every sample once,
    /// in order, equal to the model's deterministic signal; the board ends with sensors off.
    struct StreamCase: Sendable, CustomTestStringConvertible {
        let profileIndex: Int
        let gyroMode: SampleMode
        let withAccelerometer: Bool
        var testDescription: String {
            "\(HandshakeTests.profiles[profileIndex].0.name) gyro 100 Hz \(gyroMode)\(withAccelerometer ? " + accel 100 Hz packed" : "")"
        }
    }

    @Test(arguments: [
        StreamCase(profileIndex: 0, gyroMode: .single, withAccelerometer: false),
        StreamCase(profileIndex: 2, gyroMode: .single, withAccelerometer: false),
        StreamCase(profileIndex: 0, gyroMode: .packed, withAccelerometer: true),
        StreamCase(profileIndex: 2, gyroMode: .packed, withAccelerometer: true),
        StreamCase(profileIndex: 1, gyroMode: .packed, withAccelerometer: false),
    ])
    func streamsSixtySecondsExactly(_ c: StreamCase) throws {
        let (profile, _, _) = Self.profiles[c.profileIndex]
        let seed = UInt32(0xC0FFEE + c.profileIndex)
        let config = try StreamingConfiguration(
            gyro: GyroConfiguration(rate: .hz100, range: .dps1000), gyroMode: c.gyroMode,
            accelerometer: c.withAccelerometer ? AccelerometerConfiguration(rate: .hz100, range: .g8) : nil,
            accelerometerMode: .packed)
        var harness = BoardHarness(board: SimulatedBoard(profile: profile, seed: seed), configuration: config)
        guard case .finished(_, let plan) = harness.run() else { Issue.record("handshake failed"); return }
        var board = harness.board
        for command in plan.startCommands { #expect(board.write(command.bytes).notifications.isEmpty) }

        let start = board.nanoseconds
        var gyroIndex: UInt64 = 0
        var accelIndex: UInt64 = 0
        var unknown = 0
        // Deliver in 7.5 ms steps, like one connection interval.
        var t = start
        while t < start + 60_000_000_000 {
            t += 7_500_000
            for notification in board.advance(to: t) {
                switch plan.decoder.decode(notification.bytes) {
                case .gyro(let samples):
                    #expect(samples.isPacked == (c.gyroMode == .packed))
                    for i in samples.indices {
                        check(samples, i, expected: SimulatedBoard.signal(.gyro, seed: seed, index: gyroIndex), scale: 32.8)
                        gyroIndex += 1
                    }
                case .accelerometer(let samples):
                    for i in samples.indices {
                        check(samples, i, expected: SimulatedBoard.signal(.accelerometer, seed: seed, index: accelIndex), scale: 4096)
                        accelIndex += 1
                    }
                default: unknown += 1
                }
            }
        }
        #expect(gyroIndex == 6000, "60 s at 100 Hz")
        #expect(accelIndex == (c.withAccelerometer ? 6000 : 0))
        #expect(unknown == 0)
        for command in plan.stopCommands { _ = board.write(command.bytes) }
        #expect(board.gyro.isIdle)
        #expect(board.accelerometer.isIdle)
        #expect(board.advance(to: t + 1_000_000_000).isEmpty, "no data after stop")
        #expect(board.ignoredCommands.isEmpty, "\(board.ignoredCommands)")
    }

    private func check(_ samples: MotionSamples, _ i: Int, expected: (x: Int16, y: Int16, z: Int16), scale: Double) {
        let raw = samples.raw(i)
        #expect(raw == RawVector(x: expected.x, y: expected.y, z: expected.z))
        let value = samples[i]
        #expect(abs(value.x - Double(expected.x) / scale) < 1e-9)
        #expect(abs(value.y - Double(expected.y) / scale) < 1e-9)
        #expect(abs(value.z - Double(expected.z) / scale) < 1e-9)
    }

    @Test func cleanupOnConnectStopsStaleStreamingFromAPreviousSession() throws {
        // Previous session left the gyro streaming (state survives a link loss, reference §9.5).
        var board = SimulatedBoard(profile: .metaMotionR)
        for line in ["13 03 28 00", "13 05 01", "13 02 01 00", "13 01 01"] { _ = board.write(hex(line)) }
        _ = board.advance(to: 1_000_000_000)
        #expect(board.gyro.isStreaming)
        var harness = BoardHarness(board: board, configuration: try gyro50())
        guard case .finished(let description, _) = harness.run() else { Issue.record("stale data broke the handshake"); return }
        #expect(!harness.strayNotifications.isEmpty, "stale data really arrived during the handshake")
        #expect(description.chip == .bmi160)
        #expect(harness.board.gyro.isIdle && harness.board.accelerometer.isIdle)
    }
}
