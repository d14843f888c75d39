import MetaWear
import Testing

@Suite struct DecoderTests {
    func samples(_ event: MetaWearEvent) -> [MotionSample] {
        switch event {
        case .gyro(let s), .accelerometer(let s): Array(s)
        default: []
        }
    }

    func close(_ a: [MotionSample], _ b: [(Double, Double, Double)], tolerance: Double = 0.0005) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy {
            abs($0.x - $1.0) <= tolerance && abs($0.y - $1.1) <= tolerance && abs($0.z - $1.2) <= tolerance
        }
    }

    struct DataCase: Sendable, CustomTestStringConvertible {
        let name: String
        let chip: IMUChip
        let gyroRange: GyroRange
        let accelRange: AccelerometerRange
        let bytes: String
        let gyro: Bool
        let expected: [(Double, Double, Double)]
        var testDescription: String { name }
    }

    static let dataCases: [DataCase] = [
        DataCase(name: "§10.1 BMI160 gyro ±500 small", chip: .bmi160, gyroRange: .dps500, accelRange: .g2,
                 bytes: "13 05 0A 00 F6 FF 41 01", gyro: true, expected: [(0.152, -0.152, 4.893)]),
        DataCase(name: "§4.4 BMI160 gyro ±500 extremes", chip: .bmi160, gyroRange: .dps500, accelRange: .g2,
                 bytes: "13 05 3e 43 ff 7f 00 80", gyro: true, expected: [(262.409, 499.497, -499.512)]),
        DataCase(name: "BMI270 gyro ±500 on register 04", chip: .bmi270, gyroRange: .dps500, accelRange: .g2,
                 bytes: "13 04 3e 43 ff 7f 00 80", gyro: true, expected: [(262.409, 499.497, -499.512)]),
        DataCase(name: "§10.3 BMI160 packed gyro ±1000", chip: .bmi160, gyroRange: .dps1000, accelRange: .g2,
                 bytes: "13 07 09 15 ad 26 08 de 8a 1a 0d 26 65 e4 8d 20 ac 27 73 ec", gyro: true,
                 expected: [(164.177, 301.860, -265.122), (207.134, 296.982, -215.457), (254.055, 309.634, -152.591)]),
        DataCase(name: "BMI270 packed gyro ±1000 on register 05", chip: .bmi270, gyroRange: .dps1000, accelRange: .g2,
                 bytes: "13 05 09 15 ad 26 08 de 8a 1a 0d 26 65 e4 8d 20 ac 27 73 ec", gyro: true,
                 expected: [(164.177, 301.860, -265.122), (207.134, 296.982, -215.457), (254.055, 309.634, -152.591)]),
        DataCase(name: "§5.3 BMI160 accel ±4 g", chip: .bmi160, gyroRange: .dps2000, accelRange: .g4,
                 bytes: "03 04 16 c4 94 a2 2a d0", gyro: false, expected: [(-1.872, -2.919, -1.495)]),
        DataCase(name: "BMI270 accel ±4 g", chip: .bmi270, gyroRange: .dps2000, accelRange: .g4,
                 bytes: "03 04 16 c4 94 a2 2a d0", gyro: false, expected: [(-1.872, -2.919, -1.495)]),
        DataCase(name: "§5.3 BMI160 packed accel ±8 g", chip: .bmi160, gyroRange: .dps2000, accelRange: .g8,
                 bytes: "03 1c 62 b7 53 0d e9 fd 16 d0 4d 0e 57 02 8a ff a1 05 0a 01", gyro: false,
                 expected: [(-4.539, 0.833, -0.131), (-2.995, 0.894, 0.146), (-0.029, 0.352, 0.065)]),
        DataCase(name: "BMI270 packed accel ±8 g on register 05", chip: .bmi270, gyroRange: .dps2000, accelRange: .g8,
                 bytes: "03 05 62 b7 53 0d e9 fd 16 d0 4d 0e 57 02 8a ff a1 05 0a 01", gyro: false,
                 expected: [(-4.539, 0.833, -0.131), (-2.995, 0.894, 0.146), (-0.029, 0.352, 0.065)]),
        DataCase(name: "gyro ±2000 full scale", chip: .bmi160, gyroRange: .dps2000, accelRange: .g2,
                 bytes: "13 05 ff 7f 00 80 01 00", gyro: true, expected: [(32767 / 16.4, -32768 / 16.4, 1 / 16.4)]),
        DataCase(name: "accel ±2 g one g", chip: .bmi160, gyroRange: .dps2000, accelRange: .g2,
                 bytes: "03 04 00 40 00 c0 00 00", gyro: false, expected: [(1, -1, 0)]),
    ]

    @Test(arguments: dataCases)
    func decodesDataVectors(_ c: DataCase) {
        let decoder = NotificationDecoder(chip: c.chip, gyroRange: c.gyroRange, accelerometerRange: c.accelRange)
        let event = decoder.decode(hex(c.bytes))
        switch event {
        case .gyro(let s): #expect(c.gyro); #expect(s.isPacked == (c.expected.count == 3))
        case .accelerometer(let s): #expect(!c.gyro); #expect(s.isPacked == (c.expected.count == 3))
        default: Issue.record("expected motion samples, got \(event)")
        }
        #expect(close(samples(event), c.expected), "\(samples(event))")
    }

    /// Without a configured range, the SDK's defaults: ±2 g on BMI160, ±8 g on BMI270, so the
    /// same counts are 4× larger on a BMI270 (4096 counts = 1 g).
    @Test func accelerometerRangeDefaultsFollowTheChip() {
        let counts = hex("03 04 00 10 00 F0 00 40")  // 4096, -4096, 16384
        #expect(samples(NotificationDecoder(chip: .bmi270).decode(counts)) == [MotionSample(x: 1, y: -1, z: 4)])
        #expect(samples(NotificationDecoder(chip: .bmi160).decode(counts)) == [MotionSample(x: 0.25, y: -0.25, z: 1)])
        #expect(NotificationDecoder(chip: .bmi270).accelerometerRange == .g8)
        #expect(NotificationDecoder(chip: .bmi270, accelerometerRange: .g2).accelerometerRange == .g2)
    }

    @Test func registerMeaningDependsOnChip() {
        // 13 05 is single-sample on BMI160 but packed on BMI270: an 8-byte 13 05 on BMI270 is not data.
        let bmi270 = NotificationDecoder(chip: .bmi270)
        guard case .unknown(let unknown) = bmi270.decode(hex("13 05 0A 00 F6 FF 41 01")) else {
            Issue.record("8-byte 13 05 must not decode as packed on BMI270"); return
        }
        #expect(unknown.reason == "packed gyro notification must be 20 bytes, got 8")
        // Accelerometer 03 05 on BMI160 is interrupt config, not packed data.
        guard case .unknown = NotificationDecoder(chip: .bmi160).decode(hex("03 05 62 b7 53 0d e9 fd 16 d0 4d 0e 57 02 8a ff a1 05 0a 01")) else {
            Issue.record("03 05 is not data on BMI160"); return
        }
    }

    @Test func decodesRepliesAndButton() {
        let d = NotificationDecoder(chip: .bmi160)
        #expect(d.decode(hex("11 8C 63 34 10")) == .battery(BatteryState(percent: 99, millivolts: 4148)))
        #expect(d.decode(hex("0B 84 15 04 00 00 05")) == .boardClock(BoardClock(tick: 1045, resetUID: 5)))
        #expect(abs(BoardClock(tick: 1045, resetUID: 5).milliseconds - 1530.76) < 0.01)
        #expect(d.decode(hex("01 01 01")) == .button(.pressed))
        #expect(d.decode(hex("01 01 00")) == .button(.released))
        #expect(d.decode(hex("13 83 27 02")) == .configuration(.gyro, [0x27, 0x02]))
        #expect(d.decode(hex("03 83 A7 01")) == .configuration(.accelerometer, [0xA7, 0x01]))
        #expect(d.decode(hex("0A 02 07")) == .allocated(.event, id: 7))
        guard case .macAddress(let mac) = d.decode(hex("11 8b 01 07 7b 52 8f c9 e8")) else { Issue.record("MAC"); return }
        #expect(mac.description == "E8:C9:8F:52:7B:07" && mac.addressType == 1)
        guard case .macAddress(let mac6) = d.decode(hex("11 8b 07 7b 52 8f c9 e8")) else { Issue.record("MAC6"); return }
        #expect(mac6.description == "E8:C9:8F:52:7B:07" && mac6.addressType == nil)
        guard case .unknown(let bad) = d.decode(hex("01 01 07")) else { Issue.record("bad button"); return }
        #expect(bad.bytes == hex("01 01 07"))
    }

    @Test func buttonToggleFiresOncePerPress() {
        var toggle = ButtonToggleDetector()
        let events: [ButtonEvent] = [.pressed, .released, .pressed, .pressed, .released, .released, .pressed]
        #expect(events.map { toggle.shouldToggle(on: $0) } == [true, false, true, false, false, false, true])
    }

    @Test func moduleInfoReplies() throws {
        let present = try ModuleInfo(reply: hex("0b 80 00 02 08 80 2b 00 00"))
        #expect(present.module == .logging && present.implementation == 0 && present.revision == 2)
        #expect(present.extra == hex("08 80 2b 00 00") && present.isPresent)
        let absent = try ModuleInfo(reply: hex("16 80"))
        #expect(!absent.isPresent && absent.revision == nil && absent.module == .humidity)
        #expect(throws: ModuleInfoError.truncated(hex("13 80 01"))) { try ModuleInfo(reply: hex("13 80 01")) }
        #expect(throws: ModuleInfoError.notAModuleInfoReply(hex("13 05"))) { try ModuleInfo(reply: hex("13 05")) }
        let d = NotificationDecoder(chip: .bmi270)
        #expect(d.decode(hex("13 80 01 00")) == .moduleInfo(ModuleInfo(module: .gyro, implementation: 1, revision: 0)))
        #expect(d.decode(hex("11 80 00 0a 07 00")) == .moduleInfo(ModuleInfo(module: .settings, implementation: 0, revision: 10, extra: [7, 0])))
        #expect(ModuleID.discoveryOrder.map(\.rawValue) == hex("01 02 03 04 05 07 08 09 0A 0B 0C 0D 0F 11 12 13 14 15 16 19 FE"))
    }

    @Test func unknownPacketsKeepTheirBytes() {
        let d = NotificationDecoder(chip: .bmi160)
        for text in ["13", "", "13 05 01", "13 07 00 00", "42 42 42", "11 8C 63", "0B 84 15", "03 04 00 00 00 00 00 00 00"] {
            let bytes = text.isEmpty ? [] : hex(text)
            guard case .unknown(let unknown) = d.decode(bytes) else { Issue.record("[\(text)] should be unknown"); continue }
            #expect(unknown.bytes == bytes)
            #expect(!unknown.reason.isEmpty)
        }
    }
}
