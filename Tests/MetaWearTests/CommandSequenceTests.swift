import MetaWear
import Testing

/// Command bytes against the reference's worked examples (§10) and tables (§4, §5, §7, §8).
@Suite struct CommandSequenceTests {
    struct StartCase: Sendable, CustomTestStringConvertible {
        let name: String
        let chip: IMUChip
        let sensor: MotionSensor
        let mode: SampleMode
        let gyro: GyroConfiguration?
        let accel: AccelerometerConfiguration?
        let start: [String]
        let stop: [String]
        var testDescription: String { name }
    }

    static let startCases: [StartCase] = [
        StartCase(name: "§10.1 BMI160 gyro 50 Hz ±500 single", chip: .bmi160, sensor: .gyro, mode: .single,
                  gyro: GyroConfiguration(rate: .hz50, range: .dps500), accel: nil,
                  start: ["13 03 27 02", "13 05 01", "13 02 01 00", "13 01 01"],
                  stop: ["13 01 00", "13 02 00 01", "13 05 00"]),
        StartCase(name: "§10.2 BMI270 gyro 50 Hz ±500 single", chip: .bmi270, sensor: .gyro, mode: .single,
                  gyro: GyroConfiguration(rate: .hz50, range: .dps500), accel: nil,
                  start: ["13 03 27 02", "13 04 01", "13 02 01 00", "13 01 01"],
                  stop: ["13 01 00", "13 02 00 01", "13 04 00"]),
        StartCase(name: "§10.3 BMI160 gyro 200 Hz ±1000 packed", chip: .bmi160, sensor: .gyro, mode: .packed,
                  gyro: GyroConfiguration(rate: .hz200, range: .dps1000), accel: nil,
                  start: ["13 03 29 01", "13 07 01", "13 02 01 00", "13 01 01"],
                  stop: ["13 01 00", "13 02 00 01", "13 07 00"]),
        StartCase(name: "§10.3 BMI270 gyro 200 Hz ±1000 packed", chip: .bmi270, sensor: .gyro, mode: .packed,
                  gyro: GyroConfiguration(rate: .hz200, range: .dps1000), accel: nil,
                  start: ["13 03 29 01", "13 05 01", "13 02 01 00", "13 01 01"],
                  stop: ["13 01 00", "13 02 00 01", "13 05 00"]),
        StartCase(name: "§10.4 BMI160 accel 50 Hz ±4 g", chip: .bmi160, sensor: .accelerometer, mode: .single,
                  gyro: nil, accel: AccelerometerConfiguration(rate: .hz50, range: .g4),
                  start: ["03 03 27 05", "03 04 01", "03 02 01 00", "03 01 01"],
                  stop: ["03 01 00", "03 02 00 01", "03 04 00"]),
        StartCase(name: "§10.4 BMI270 accel 50 Hz ±4 g", chip: .bmi270, sensor: .accelerometer, mode: .single,
                  gyro: nil, accel: AccelerometerConfiguration(rate: .hz50, range: .g4),
                  start: ["03 03 A7 01", "03 04 01", "03 02 01 00", "03 01 01"],
                  stop: ["03 01 00", "03 02 00 01", "03 04 00"]),
        StartCase(name: "BMI160 accel packed 100 Hz ±8 g", chip: .bmi160, sensor: .accelerometer, mode: .packed,
                  gyro: nil, accel: AccelerometerConfiguration(rate: .hz100, range: .g8),
                  start: ["03 03 28 08", "03 1C 01", "03 02 01 00", "03 01 01"],
                  stop: ["03 01 00", "03 02 00 01", "03 1C 00"]),
        StartCase(name: "BMI270 accel packed 100 Hz ±16 g", chip: .bmi270, sensor: .accelerometer, mode: .packed,
                  gyro: nil, accel: AccelerometerConfiguration(rate: .hz100, range: .g16),
                  start: ["03 03 A8 03", "03 05 01", "03 02 01 00", "03 01 01"],
                  stop: ["03 01 00", "03 02 00 01", "03 05 00"]),
        StartCase(name: "BMI270 accel 6.25 Hz low-power start", chip: .bmi270, sensor: .accelerometer, mode: .single,
                  gyro: nil, accel: AccelerometerConfiguration(rate: .hz6_25, range: .g2),
                  start: ["03 03 24 00", "03 04 01", "03 02 01 00", "03 01 02"],
                  stop: ["03 01 00", "03 02 00 01", "03 04 00"]),
        StartCase(name: "BMI160 accel 0.78125 Hz undersampling", chip: .bmi160, sensor: .accelerometer, mode: .single,
                  gyro: nil, accel: AccelerometerConfiguration(rate: .hz0_78125, range: .g2),
                  start: ["03 03 81 03", "03 04 01", "03 02 01 00", "03 01 01"],
                  stop: ["03 01 00", "03 02 00 01", "03 04 00"]),
    ]

    @Test(arguments: startCases)
    func startAndStopSequences(_ c: StartCase) {
        let start: [Packet] = if let gyro = c.gyro {
            Commands.startGyro(gyro, mode: c.mode, chip: c.chip)
        } else {
            Commands.startAccelerometer(c.accel!, mode: c.mode, chip: c.chip)
        }
        #expect(start.map(\.bytes) == hexLines(c.start))
        #expect(Commands.stop(c.sensor, mode: c.mode, chip: c.chip).map(\.bytes) == hexLines(c.stop))
    }

    @Test(arguments: [
        (GyroRate.hz25, GyroRange.dps2000, "26 00"), (.hz50, .dps125, "27 04"), (.hz100, .dps250, "28 03"),
        (.hz200, .dps2000, "29 00"), (.hz400, .dps500, "2A 02"), (.hz800, .dps1000, "2B 01"),
        (.hz1600, .dps2000, "2C 00"), (.hz3200, .dps125, "2D 04"),
    ])
    func gyroConfigBytes(_ rate: GyroRate, _ range: GyroRange, _ expected: String) {
        #expect(GyroConfiguration(rate: rate, range: range).bytes == hex(expected))
    }

    @Test func accelerometerConfigTablesForBothChips() {
        let bmi160 = ["81", "82", "83", "84", "25", "26", "27", "28", "29", "2A", "2B", "2C"]
        let bmi270 = ["21", "22", "23", "24", "A5", "A6", "A7", "A8", "A9", "AA", "AB", "AC"]
        for (i, rate) in AccelerometerRate.allCases.enumerated() {
            #expect(AccelerometerConfiguration(rate: rate, range: .g2).bytes(for: .bmi160)[0] == hex(bmi160[i])[0])
            #expect(AccelerometerConfiguration(rate: rate, range: .g2).bytes(for: .bmi270)[0] == hex(bmi270[i])[0])
        }
        #expect(AccelerometerRange.allCases.map { $0.byte(for: .bmi160) } == hex("03 05 08 0C"))
        #expect(AccelerometerRange.allCases.map { $0.byte(for: .bmi270) } == hex("00 01 02 03"))
        #expect(AccelerometerRange(byte: 0x03, chip: .bmi160) == .g2)
        #expect(AccelerometerRange(byte: 0x03, chip: .bmi270) == .g16)
    }

    @Test func cleanupStopsBothSensorsWithChipCorrectRegisters() {
        let modules = ModuleTable([
            ModuleInfo(module: .gyro, implementation: 0, revision: 1),
            ModuleInfo(module: .accelerometer, implementation: 1, revision: 1),
        ])
        #expect(Commands.cleanup(chip: .bmi160, modules: modules).map(\.bytes) == hexLines([
            "13 01 00", "13 02 00 01", "13 05 00", "13 07 00",
            "03 01 00", "03 02 00 01", "03 04 00", "03 1C 00",
        ]))
        #expect(Commands.cleanup(chip: .bmi270, modules: modules).map(\.bytes) == hexLines([
            "13 01 00", "13 02 00 01", "13 04 00", "13 05 00",
            "03 01 00", "03 02 00 01", "03 04 00", "03 05 00",
        ]))
        let gyroOnly = ModuleTable([ModuleInfo(module: .gyro, implementation: 1, revision: 0),
                                    ModuleInfo(absent: .accelerometer)])
        #expect(Commands.cleanup(chip: .bmi270, modules: gyroOnly).count == 4)
    }

    @Test func oneLinersFromSection10_5() {
        #expect(Commands.readBattery.bytes == hex("11 8C"))
        #expect(Commands.readBoardClock.bytes == hex("0B 84"))
        #expect(Commands.reset.bytes == hex("FE 01"))
        #expect(Commands.disconnect.bytes == hex("FE 06"))
        #expect(Commands.readMACAddress.bytes == hex("11 8B"))
        #expect(LEDSignal.identify.commands(ledRevision: 0).map(\.bytes) == hexLines([
            "02 02 01", "02 03 00 02 1F 00 00 00 32 00 00 00 F4 01 00 00 03", "02 01 01",
        ]))
        #expect(Commands.connectionParameters(.fastest).bytes == hex("11 09 06 00 06 00 00 00 58 02"))
        #expect(Commands.connectionParameters(ConnectionParameters(
            minimumIntervalMilliseconds: 750, maximumIntervalMilliseconds: 1000, latency: 128,
            supervisionTimeoutMilliseconds: 16384)).bytes == hex("11 09 58 02 20 03 80 00 66 06"))
        #expect(Commands.connectionParameters(ConnectionParameters(
            minimumIntervalMilliseconds: 7.5, maximumIntervalMilliseconds: 7.5, latency: 0,
            supervisionTimeoutMilliseconds: 6000)).bytes == hex("11 09 06 00 06 00 00 00 58 02"))
        // Truncated like the SDK's (uint16_t)(ms / 1.25), not rounded: 8.125 ms is 6 units, 9.99 ms 7, 6,009 ms 600.
        #expect(Commands.connectionParameters(ConnectionParameters(
            minimumIntervalMilliseconds: 8.125, maximumIntervalMilliseconds: 9.99, latency: 0,
            supervisionTimeoutMilliseconds: 6009)).bytes == hex("11 09 06 00 07 00 00 00 58 02"))
        #expect(ModuleInfo.request(for: .gyro).bytes == hex("13 80"))
        #expect(Commands.readConfig(.gyro).bytes == hex("13 83"))
        #expect(Commands.subscribeButton.bytes == hex("01 01 01"))
    }

    @Test(arguments: [
        (LEDPattern.blink(repeatCount: 10), LEDColor.green, UInt8(0), "02 03 00 02 1f 00 00 00 32 00 00 00 f4 01 00 00 0a"),
        (LEDPattern.solid(repeatCount: 20), .red, 0, "02 03 01 02 1f 1f 00 00 f4 01 00 00 e8 03 00 00 14"),
        (LEDPattern.pulse(repeatCount: 40), .blue, 0, "02 03 02 02 1f 00 d5 02 f4 01 d5 02 d0 07 00 00 28"),
    ])
    func ledPresetVectors(_ pattern: LEDPattern, _ color: LEDColor, _ revision: UInt8, _ expected: String) {
        #expect(pattern.command(color: color, ledRevision: revision).bytes == hex(expected))
    }

    @Test func ledDelayOnlyHonouredFromRevisionOne() {
        var blink = LEDPattern.blink(repeatCount: 10)
        blink.delayMilliseconds = 5000
        #expect(blink.command(color: .green, ledRevision: 1).bytes
                == hex("02 03 00 02 1f 00 00 00 32 00 00 00 f4 01 88 13 0a"))
        #expect(blink.command(color: .green, ledRevision: 0).bytes
                == hex("02 03 00 02 1f 00 00 00 32 00 00 00 f4 01 00 00 0a"))
    }

    @Test func ledSignalsAreCompleteSequences() {
        for signal in LEDSignal.allCases {
            let commands = signal.commands()
            #expect(commands.first?.bytes == hex("02 02 01"), "\(signal) must stop-and-clear first")
            if signal == .off { #expect(commands.count == 1) } else {
                #expect(commands.count == 3)
                #expect(commands[1].bytes.count == 17)
                #expect(commands.last?.bytes == hex("02 01 01"))
            }
        }
        #expect(LEDSignal.recording.commands()[1].bytes.last == 0xFF, "recording repeats until stopped")
        #expect(LEDSignal.error.commands()[1].bytes[2] == LEDColor.red.rawValue)
    }

    @Test func packetFramingRoundTripsAndRejectsBadShapes() throws {
        let packet = try Packet(module: .gyro, register: 0x03, payload: [0x27, 0x02])
        #expect(packet.bytes == hex("13 03 27 02"))
        let read = try Packet(bytes: hex("0B 84 15 04 00 00 05"))
        #expect(read.module == .logging && read.register == 0x04 && read.isRead && !read.isSilent)
        #expect(read.payload == hex("15 04 00 00 05"))
        let silent = try Packet(bytes: hex("11 CC"))
        #expect(silent.isRead && silent.isSilent && silent.register == 0x0C)
        #expect(try Packet(module: .dataProcessor, register: 0x07, index: 3, payload: [1]).bytes == hex("09 07 03 01"))
        #expect(throws: PacketError.tooShort(1)) { try Packet(bytes: [0x13]) }
        #expect(throws: PacketError.tooLong(21)) { try Packet(bytes: [UInt8](repeating: 0, count: 21)) }
        #expect(throws: PacketError.registerOutOfRange(0x83)) { try Packet(module: .gyro, register: 0x83) }
        #expect(throws: PacketError.tooLong(21)) {
            try Packet(module: .gyro, register: 1, payload: [UInt8](repeating: 0, count: 19))
        }
        #expect(Commands.writeConfig(.gyro, bytes: [0, 0]).requiresWriteWithResponse == false)
        #expect(try Packet(module: .macro, register: 2).requiresWriteWithResponse)
    }
}
