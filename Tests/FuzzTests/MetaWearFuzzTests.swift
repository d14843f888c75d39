import Foundation
import Testing
@testable import MetaWear

/// MetaWear notifications on 326a9006 (NotificationDecoder) and the connect-time handshake
/// that consumes them (HandshakeSequencer).
@Suite("Fuzz: MetaWear", .timeLimit(.minutes(20)))
struct MetaWearFuzzTests {
    /// Real notifications of each kind (reference metawear-protocol.md tables).
    static let seeds: [[UInt8]] = [
        "13 05 0A 00 F6 FF 41 01", "13 07 09 15 ad 26 08 de 8a 1a 0d 26 65 e4 8d 20 ac 27 73 ec",
        "03 04 16 c4 94 a2 2a d0", "03 1C 01 00 02 00 03 00 04 00 05 00 06 00 07 00 08 00 09 00",
        "11 8C 63 34 10", "0B 84 15 04 00 00 05", "01 01 01", "01 01 00", "03 83 28 0C", "13 83 28 00",
        "0b 80 00 02 08 80 2b 00 00", "11 8b 01 07 7b 52 8f c9 e8", "13 80 01 00", "16 80",
    ].map { text in text.split(separator: " ").compactMap { UInt8($0, radix: 16) } }

    static let decoders = [
        NotificationDecoder(chip: .bmi160),
        NotificationDecoder(chip: .bmi270, gyroRange: .dps125, accelerometerRange: .g16),
    ]

    static func mutated(_ c: inout FuzzCase) -> [UInt8] {
        var bytes = c.pick(seeds)
        for _ in 0..<c.int(1...3) {
            switch c.int(0...4) {
            case 0 where !bytes.isEmpty: bytes[c.int(0...bytes.count - 1)] ^= UInt8(c.int(1...255))
            case 1 where !bytes.isEmpty: bytes.removeLast(c.int(1...bytes.count))
            case 2: bytes += c.bytes(c.int(1...6))
            case 3 where bytes.count > 1: bytes.swapAt(c.int(0...bytes.count - 1), c.int(0...bytes.count - 1))
            default: if bytes.count >= 2 { bytes[1] = c.pick([0x80, 0x84, 0x8C, 0x8B, 0x83, 0x04, 0x05, 0x07, 0x1C, 0x01]) }
            }
        }
        return bytes
    }

    @Test("random and mutated notifications decode to sane samples or to an error naming the bytes")
    func notifications() async {
        let tally = await Fuzz.run("metawear notifications", count: Fuzz.count(60_000)) { c in
            let bytes: [UInt8]
            if c.bool() {
                c.kind = "random bytes"
                bytes = c.bytes(c.int(0...24))
            } else {
                c.kind = "mutated real notifications"
                bytes = Self.mutated(&c)
            }
            c.inputs = Self.decoders.count
            for decoder in Self.decoders {
                switch decoder.decode(bytes) {
                case .gyro(let samples), .accelerometer(let samples):
                    c.expect(bytes.count == 2 + 6 * samples.count, "\(samples.count) samples from \(bytes.count) bytes")
                    for sample in samples {
                        c.expect([sample.x, sample.y, sample.z].allSatisfy { $0.isFinite && abs($0) <= 2001 },
                                 "sample \(sample) out of the sensor's range")
                    }
                case .unknown(let unknown):
                    c.expect(unknown.bytes == bytes, "the rejected bytes were not kept")
                    c.expect(bytes.isEmpty || unknown.description.contains(Hex.string(bytes)), "'\(unknown)' does not show the bytes")
                    // The reason names the field that is wrong: the length, the byte or the register.
                    let names = bytes.count < 2 ? unknown.reason.contains("2-byte header")
                        : unknown.reason.contains("got \(bytes.count)")
                        || unknown.reason.contains("0x\(Hex.byte(bytes[1]))")
                        || (bytes.count > 2 && unknown.reason.contains("state \(bytes[2])"))
                        || unknown.reason.contains(Hex.string(bytes))
                    c.expect(names, "reason '\(unknown.reason)' names neither the length, the register nor the bytes")
                default:
                    break
                }
            }
        }
        #expect(tally.failures == 0)
    }

    static let configuration: StreamingConfiguration = {
        do {
            return try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz50, range: .dps2000),
                                              accelerometer: AccelerometerConfiguration(rate: .hz50, range: .g4))
        } catch { fatalError("\(error)") }
    }()

    /// A reply that fits what the sequencer waits for, often slightly wrong.
    static func reply(for step: HandshakeSequencer.Step, _ c: inout FuzzCase) -> [UInt8] {
        var bytes: [UInt8]
        switch step {
        case .moduleInfo(let module):
            bytes = [module.rawValue, 0x80] + (c.chance(10) ? [] : [UInt8(c.int(0...2)), UInt8(c.int(0...4))]) + c.bytes(c.int(0...4))
        case .boardClock: bytes = [0x0B, 0x84] + c.bytes(5)
        case .battery: bytes = [0x11, 0x8C, UInt8(c.int(0...120)), c.byte(), c.byte()]
        case .deviceInformation: bytes = c.bytes(c.int(0...8))
        }
        if c.chance(20) { bytes = Array(bytes.prefix(c.int(0...bytes.count))) }
        if c.chance(10) { bytes += c.bytes(c.int(1...3)) }
        return bytes
    }

    @Test("the handshake ends (finished or a named failure) whatever the board answers")
    func handshake() async {
        let steps = 5 + ModuleID.discoveryOrder.count + 2
        let tally = await Fuzz.run("metawear handshake", count: Fuzz.count(3_000)) { c in
            c.kind = c.pick(["random replies", "plausible replies", "mixed"])
            var sequencer = HandshakeSequencer(configuration: Self.configuration)
            var actions = sequencer.start()
            var events = 0
            while !sequencer.isDone && events < 300 {
                events += 1
                let step = sequencer.awaiting
                switch c.int(0...9) {
                case 0...4:
                    let bytes = (c.kind == "random replies" || step == nil) ? c.bytes(c.int(0...20)) : Self.reply(for: step!, &c)
                    actions += sequencer.receive(notification: bytes)
                case 5, 6:
                    var field = c.pick(DeviceInformationField.allCases)
                    if c.chance(70), case .deviceInformation(let awaited)? = step { field = awaited }
                    let value = c.pick(["", "1.7.3", "5", "0.4", "MbientLab Inc", "\u{0}\u{FFFF}", String(repeating: "9", count: c.int(0...300)),
                                        "  8  ", "é🦀", c.text(c.int(0...12), from: Array("0123456789.abc -"))])
                    actions += sequencer.receive(field, value: value)
                case 7:
                    actions += sequencer.timedOut(c.pick([HandshakeSequencer.Step.boardClock, .battery, .moduleInfo(c.pick(ModuleID.discoveryOrder))]))
                default:
                    if let step { actions += sequencer.timedOut(step) }
                }
            }
            // A silent board from here on: every wait times out, and the sequencer must give up
            // or finish within (steps × attempts) timeouts.
            var timeouts = 0
            while !sequencer.isDone, let step = sequencer.awaiting, timeouts <= steps * 3 + 1 {
                timeouts += 1
                actions += sequencer.timedOut(step)
            }
            c.expect(sequencer.isDone, "not done after \(timeouts) timeouts; waiting for \(String(describing: sequencer.awaiting))")
            switch sequencer.outcome {
            case .failed(let error)?:
                switch error {
                case .noReply(let step, let attempts):
                    c.expect(error.description.contains(step.description) && attempts >= 1, "'\(error)' does not name the step")
                case .chip:
                    c.expect(error.description.contains("IMU"), "'\(error)' does not name the IMU")
                case .configuration:
                    c.expect(error.description.contains("configuration"), "'\(error)' does not name the configuration")
                }
            case .finished(let board, let plan)?:
                c.expect(!plan.startCommands.isEmpty, "finished with no start commands for \(board)")
            default:
                c.expect(false, "ended without an outcome")
            }
            c.expect(actions.filter { if case .finished = $0 { true } else if case .failed = $0 { true } else { false } }.count == 1,
                     "the outcome was announced \(actions.count) times")
        }
        #expect(tally.failures == 0)
    }
}
