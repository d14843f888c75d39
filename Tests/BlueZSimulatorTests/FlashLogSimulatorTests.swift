import DBus
import MetaWearBoardModel
import Testing
@testable import BlueZSimulator
import TestSupport

/// The board's flash log as a client sees it over the simulated BlueZ (metawear-logging.md
/// §8.1): it logs through a link drop, and a download after reconnecting returns every sample.
@Suite(.serialized, .enabled(if: TestBus.isAvailable))
struct FlashLogSimulatorTests {
    private func write(_ harness: SimulatorHarness, _ path: DBusObjectPath, _ lines: [String]) async throws {
        for line in lines { try await harness.write(path, bytesFromHex(line.replacingSpaces())) }
    }

    @Test func logsThroughALinkDropAndDownloadsEverySampleAfterReconnecting() async throws {
        try await SimulatorHarness.with { harness in
            var path = try await harness.connect(0)
            try await write(harness, path, ["13 03 28 00", "0B 02 13 05 FF 60", "0B 02 13 05 FF 24", "0B 0B 00", "0B 01 01",
                                            "13 02 01 00", "13 01 01"])
            try await Task.sleep(for: .milliseconds(500))
            _ = try await harness.control("DropLink", [.uint32(0)])
            try await harness.eventually("link down") {
                try await harness.property(path, "org.bluez.Device1", "Connected") == .boolean(false)
            }
            try await Task.sleep(for: .seconds(1))  // the board measures on
            path = try await harness.connect(0)
            try await write(harness, path, ["13 01 00", "13 02 00 01", "0B 01 00"])
            let notify = try harness.notifyPath(path)
            let values = try await harness.client.propertiesChanged(sender: "org.bluez", pathNamespace: notify,
                                                                     interface: "org.bluez.GattCharacteristic1")
            _ = try await harness.call(notify, "org.bluez.GattCharacteristic1", "StartNotify")
            try await write(harness, path, ["0B 08 01", "0B 0D 01", "0B 07 01", "0B 85"])
            var length: UInt32?
            var entries: [[UInt8]] = []
            var pages = 0
            for try await change in values {
                guard let value = change.changed["Value"], let bytes = try? value.unwrappingVariants.as([UInt8].self),
                      bytes.count >= 2, bytes[0] == 0x0B else { continue }
                switch bytes[1] {
                case 0x85:
                    let n = UInt32(bytes[2]) | UInt32(bytes[3]) << 8 | UInt32(bytes[4]) << 16 | UInt32(bytes[5]) << 24
                    length = n
                    try await harness.write(path, [0x0B, 0x06] + le(n) + le(n / 20))
                case 0x07:
                    entries.append(contentsOf: stride(from: 2, to: bytes.count, by: 9).map { Array(bytes[$0..<$0 + 9]) })
                case 0x0D:
                    pages += 1
                    try await harness.write(path, [0x0B, 0x0E])
                default: break
                }
                if bytes == [0x0B, 0x08, 0, 0, 0, 0] { break }
            }
            let n = try #require(length)
            #expect(entries.count == Int(n))
            // One page confirm per 512 entries begun: one page when the reconnect is quick, two
            // when a loaded machine kept the link down past 2.56 s of logging.
            #expect(pages == (entries.count + 511) / 512, "\(entries.count) entries in \(pages) pages")
            // 1.5 s or more at 100 Hz, two entries a sample, in sample order from sample 0, with
            // the checkable signal's values: nothing lost while the link was down.
            let samples = entries.count / 2
            #expect(samples >= 140, "\(samples) samples")
            for k in 0..<samples {
                let (xy, z) = (entries[2 * k], entries[2 * k + 1])
                let expected = SimulatedBoard.signal(.gyro, seed: 1, index: UInt64(k))
                #expect(xy[0] == 0xA0 && z[0] == 0xA1, "ids 0/1, reset uid 5")
                #expect(xy[1...4] == z[1...4], "one tick for both entries")
                #expect(int16(xy, 5) == expected.x && int16(xy, 7) == expected.y && int16(z, 5) == expected.z, "sample \(k)")
            }
            // The confirmed page is gone.
            try await write(harness, path, ["0B 85"])
            var remaining: [UInt8]?
            for try await change in values {
                if let value = change.changed["Value"], let bytes = try? value.unwrappingVariants.as([UInt8].self), bytes.first == 0x0B,
                   bytes.count > 1, bytes[1] == 0x85 { remaining = bytes; break }
            }
            #expect(remaining == [0x0B, 0x85, 0, 0, 0, 0])
        }
    }

    /// `flashCapacity` makes a full log testable: without overwrite the board keeps the first
    /// entries and refuses the rest.
    @Test func aSmallFlashFillsUp() async throws {
        try await SimulatorHarness.with(configure: { $0.flashCapacity = 50 }) { harness in
            let path = try await harness.connect(0)
            try await write(harness, path, ["0B 02 13 05 FF 60", "0B 02 13 05 FF 24", "0B 0B 00", "0B 01 01", "13 02 01 00", "13 01 01"])
            try await Task.sleep(for: .milliseconds(500))
            let log = try await harness.simulator.flashLog(0)
            #expect(log.storedCount == 50 && log.refusedWhenFull > 0)
        }
    }

    /// A board that resets by itself keeps what it logged, starts a new boot (reset UID 5 → 6)
    /// and drops the link; GetStats shows both.
    @Test func aBoardResetKeepsTheLog() async throws {
        try await SimulatorHarness.with { harness in
            let path = try await harness.connect(0)
            try await write(harness, path, ["0B 02 13 05 FF 60", "0B 02 13 05 FF 24", "0B 01 01", "13 02 01 00", "13 01 01"])
            try await Task.sleep(for: .milliseconds(300))
            _ = try await harness.control("ResetBoard", [.uint32(0)])
            try await harness.eventually("link down") {
                try await harness.property(path, "org.bluez.Device1", "Connected") == .boolean(false)
            }
            let stored = try #require(try await harness.stats(0)["FlashEntriesStored"]?.uint64Value)
            #expect(stored >= 40, "\(stored) entries")
            try await Task.sleep(for: .milliseconds(200))
            let stats = try await harness.stats(0)
            #expect(stats["FlashEntriesStored"]?.uint64Value == stored, "sensors stop at a reset; nothing logged or lost")
            #expect(stats["ResetUID"]?.uint64Value == 6)
            let log = try await harness.simulator.flashLog(0)
            #expect(log.entries.allSatisfy { $0.resetUID == 5 } && !log.isLogging)
            #expect(harness.logLines.all.contains { $0.contains("fault board-reset board 0") })
        }
    }

    /// The bench reads a log out faster than the model's pace to measure the central: the rate
    /// changes on the running board, and a rate outside 1…10000 is refused with one that names it.
    @Test func readoutRateChangesOnTheRunningBoard() async throws {
        try await SimulatorHarness.with(boards: 2) { harness in
            #expect(try await harness.simulator.flashLog(0).readoutInterval == 5_000_000, "the model's 200 notifications/s")
            _ = try await harness.control("SetReadoutRate", [.uint32(0), .uint32(8_000)])
            #expect(try await harness.simulator.flashLog(0).readoutInterval == 125_000)
            #expect(try await harness.simulator.flashLog(1).readoutInterval == 5_000_000, "only the board named")
            for refused: UInt32 in [0, 10_001] {
                let error = await #expect(throws: DBusError.self) {
                    _ = try await harness.control("SetReadoutRate", [.uint32(0), .uint32(refused)])
                }
                #expect(error?.message.contains("readout rate \(refused) must be within 1…10000") == true, "\(String(describing: error))")
            }
            #expect(try await harness.simulator.flashLog(0).readoutInterval == 125_000, "a refused rate changes nothing")
        }
    }

    private func le(_ value: UInt32) -> [UInt8] { (0..<4).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) } }
    private func int16(_ bytes: [UInt8], _ at: Int) -> Int16 { Int16(bitPattern: UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8) }
}

extension String {
    fileprivate func replacingSpaces() -> String { String(filter { $0 != " " }) }
}
