import Basics
import Buffer
import Foundation
import GNSS
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// Bad NMEA and bad notifications that get as far as recording: decoded by the real
/// decoders, merged by the real session controller and written to a real SQLite buffer.
/// Data accepted before the bad input must stay, and the database must stay sound.
@Suite("Fuzz: recording and buffer", .timeLimit(.minutes(20)))
struct RecordingFuzzTests {
    static let board = "C4:5A:2B:00:00:01"

    @Test("fuzzed NMEA and notifications mid-session leave earlier data and the database intact")
    func badInputMidSession() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwgate-fuzz-rec-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let rounds = Fuzz.replay == nil ? 2 : 1
        var total = FuzzTally(parser: "recording + buffer")
        for round in 0..<rounds {
            let store = try BufferStore(path: directory.appendingPathComponent("buffer-\(round).sqlite").path,
                                        configuration: .init(userID: "00000000-0000-4000-8000-000000000001",
                                                             budget: DiskBudget(maxBytes: 1 << 40, minFreeBytes: 0)))
            let seeds = Fuzz.seeds("recording round \(round)", count: Fuzz.count(1_500))
            try Self.round(store: store, seeds: seeds, into: &total)
        }
        total.report()
        #expect(total.failures == 0)
    }

    /// One session: 20 s of good data, then one bad input (NMEA bytes or a notification)
    /// every 10 ms of session time between good samples, then a check.
    static func round(store: BufferStore, seeds: [UInt64], into tally: inout FuzzTally) throws {
        let wall0 = Date(timeIntervalSince1970: 1_790_000_000)
        let controller = SessionController(store: store, timeBase: TimeBase(
            wallNanoseconds: Int64(wall0.timeIntervalSince1970 * 1e9), monotonicNanoseconds: 0, systemClockSynchronised: true))
        let gyro = GyroConfiguration(rate: .hz100, range: .dps2000)
        var simulated = SimulatedBoard(profile: .metaMotionR, seed: 7)
        for packet in Commands.startGyro(gyro, mode: .single, chip: .bmi160) { _ = simulated.write(packet.bytes) }
        let decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps2000)
        controller.attach(board: board, gyroRateHertz: 100)
        let sessionID = try controller.start(trigger: .controlAPI, now: 0)

        var now: Int64 = 0
        var nextFix: Int64 = 0
        var fixIndex = 0
        func goodData(until end: Int64) {
            while now < end {
                now += 10_000_000
                while nextFix <= now {
                    let when = wall0.addingTimeInterval(Double(nextFix) / 1e9)
                    controller.ingest(fix: GNSSFix(time: when, timeOfDay: NMEATimeOfDay(microseconds: 0), mode: .threeD,
                                                   latitude: 48.1 + Double(fixIndex) * 1e-5, longitude: 11.5, hdop: 0.9,
                                                   systemClockOffset: 0, arrival: when), now: nextFix)
                    fixIndex += 1
                    nextFix += 1_000_000_000
                }
                for note in simulated.advance(to: UInt64(now)) {
                    controller.ingest(board: board, event: decoder.decode(note.bytes), receivedAt: now)
                }
                controller.tick(now: now)
            }
        }
        goodData(until: 20_000_000_000)
        let before = try store.dataset(sessionID: sessionID).points
        #expect(!before.isEmpty, "no points accepted before the bad input")

        var nmea = NMEADecoder()
        var cases: [FuzzCase] = []
        for seed in seeds {
            var c = FuzzCase(parser: "recording + buffer", seed: seed)
            switch c.int(0...3) {
            case 0:
                c.kind = "random bytes as NMEA"
                nmea.feed(c.bytes(c.int(1...200)), arrival: wall0.addingTimeInterval(Double(now) / 1e9)) { controller.ingest(fix: $0, now: now) }
            case 1:
                c.kind = "re-sealed nonsense RMC/GGA"
                let fields = (0..<c.int(1...14)).map { _ in c.text(c.int(0...10), from: Array("0123456789.-NSEWAV")) }
                var checksum: UInt8 = 0
                let body = c.pick(["GPRMC", "GNGGA", "GPGLL", "GNGNS", "GPZDA"]) + "," + fields.joined(separator: ",")
                for byte in body.utf8 { checksum ^= byte }
                nmea.feed(Array(("$" + body + "*" + String(format: "%02X", checksum) + "\r\n").utf8),
                          arrival: wall0.addingTimeInterval(Double(now) / 1e9)) { controller.ingest(fix: $0, now: now) }
            case 2:
                c.kind = "random notification"
                controller.ingest(board: board, event: decoder.decode(c.bytes(c.int(0...20))), receivedAt: now)
            default:
                c.kind = "gyro header, random payload"
                controller.ingest(board: c.chance(80) ? board : "AA:AA:AA:AA:AA:AA",
                                  event: decoder.decode([0x13, 0x05] + c.bytes(c.pick([6, 6, 6, 0, 5, 7, 18]))), receivedAt: now)
            }
            cases.append(c)
            goodData(until: now + 10_000_000)
        }
        goodData(until: now + 5_000_000_000)
        let error = controller.lastStoreError
        #expect(error == nil, "the buffer refused a write: \(error ?? "")")
        #expect(try store.integrityCheck() == "ok")
        // Every sample accepted before the bad input is still there, unchanged. (Locations of
        // the samples still waiting for their bracketing fix at that moment are refined when
        // it comes, by design: checkpoints store held samples "located as well as possible now".)
        func samples(_ points: [SessionDataset.BoardPoint]) -> Set<String> {
            Set(points.map { "\($0.board) \($0.point.gyroscope)" })
        }
        let accepted = samples(before)
        let during = samples(try store.dataset(sessionID: sessionID).points)
        #expect(accepted.isSubset(of: during),
                "\(accepted.subtracting(during).count) of \(accepted.count) samples accepted before the bad input are gone; the round's first case seeds: \(seeds.prefix(3).map(Fuzz.hex))")
        _ = try controller.stop(trigger: .controlAPI, now: now)
        #expect(accepted.isSubset(of: samples(try store.dataset(sessionID: sessionID).points)),
                "samples accepted before the bad input are gone after the session stopped")
        #expect(try store.integrityCheck() == "ok")
        for c in cases { tally.add(c) }
    }
}
