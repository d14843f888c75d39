import MetaWearBoardModel
import Testing

/// The board model's flash logger against metawear-logging.md's literal bytes: the §8.1 (BMI160,
/// logging rev 2) and §8.2 (BMI270, rev 3) sequences as the SDK writes them, the §5.3 readout
/// vectors, pages, capacity, resets and link loss (§11).
@Suite struct FlashLogModelTests {
    /// Writes each line and returns every immediate notification.
    private func send(_ board: inout SimulatedBoard, _ lines: [String]) -> [[UInt8]] {
        lines.flatMap { board.write(hex($0)).notifications }
    }

    /// The bytes of the readout notifications due by `time`, in order.
    private func drain(_ board: inout SimulatedBoard, to time: UInt64) -> [[UInt8]] {
        board.advance(to: time).map(\.bytes).filter { $0[0] == 0x0B }
    }

    private func le(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
    }

    /// What the logger should hold for gyro sample `index` taken at `time`: `x y` under id 0,
    /// `z 00 00` under id 1 (§4.2).
    private func expectedEntries(_ board: SimulatedBoard, index: UInt64, time: UInt64, uid: UInt8) -> [UInt8] {
        let s = SimulatedBoard.signal(.gyro, seed: board.seed, index: index)
        let word = { (v: Int16) in [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: UInt16(bitPattern: v) >> 8)] }
        let tick = le(board.tick(at: time))
        return [0x00 | uid << 5] + tick + word(s.x) + word(s.y) + [0x01 | uid << 5] + tick + word(s.z) + [0, 0]
    }

    @Test func bmi160SequenceFromTheReference() {
        var board = SimulatedBoard(profile: .metaMotionR, seed: 3)
        #expect(send(&board, ["0B 80"]) == [hex("0b 80 00 02 08 80 2b 00 00")])
        _ = board.advance(to: 1_530_800_000)
        #expect(send(&board, ["0B 84"]) == [hex("0B 84 15 04 00 00 05")])
        // §8.1 (a): config, two triggers answered in order, stream, log, sensor on.
        #expect(send(&board, ["13 03 28 00", "0B 02 13 05 FF 60", "0B 02 13 05 FF 24"]) == [hex("0B 02 00"), hex("0B 02 01")])
        #expect(send(&board, ["13 05 01", "0B 0B 00", "0B 01 01", "13 02 01 00", "13 01 01"]).isEmpty)
        let start = board.nanoseconds
        let streamed = board.advance(to: start + 1_000_000_000)
        #expect(streamed.count == 100 && streamed.allSatisfy { $0.bytes.count == 8 && $0.bytes[0...1] == [0x13, 0x05] })
        #expect(board.flashLog.storedCount == 200, "two entries per sample")
        // §4.5 slot enumeration: used slots echo their trigger, free ones answer the bare 0B 82.
        #expect(send(&board, (0..<8).map { "0B 82 0\($0)" })
            == [hex("0b 82 13 05 ff 60"), hex("0b 82 13 05 ff 24")] + Array(repeating: hex("0B 82"), count: 6))
        // (d) stop: no more entries, streaming or not.
        #expect(send(&board, ["13 01 00", "13 02 00 01", "13 05 00", "0B 01 00"]).isEmpty)
        _ = board.advance(to: start + 2_000_000_000)
        #expect(board.flashLog.storedCount == 200)
        // (b) download with n_notifies = 20: 200 entries, progress every 10.
        #expect(send(&board, ["0B 08 01", "0B 0D 01", "0B 07 01", "0B 85"]) == [hex("0B 85 C8 00 00 00")])
        #expect(send(&board, ["0B 06 C8 00 00 00 0A 00 00 00"]).isEmpty)
        let readout = drain(&board, to: start + 10_000_000_000)
        let entries = readout.filter { $0[1] == 0x07 }
        #expect(entries.count == 100 && entries.allSatisfy { $0.count == 20 }, "two entries per notification")
        for (k, packet) in entries.enumerated() {
            let time = start + UInt64(k + 1) * 10_000_000
            #expect(Array(packet[2...]) == expectedEntries(board, index: UInt64(k), time: time, uid: 5), "sample \(k)")
        }
        let progress = readout.filter { $0[1] == 0x08 }
        #expect(progress == stride(from: 190, through: 0, by: -10).map { [0x0B, 0x08] + le(UInt32($0)) })
        #expect(Array(readout.suffix(2)) == [hex("0B 0D"), hex("0B 08 00 00 00 00")], "end: page completed, then 0 left")
        // The host confirms the page: the entries are gone.
        #expect(send(&board, ["0B 0E", "0B 85"]) == [hex("0B 85 00 00 00 00")])
        // (c) clear and remove the loggers.
        #expect(send(&board, ["0B 0D 01", "0B 09 FF FF FF FF"]) == [hex("0B 0D")])
        #expect(send(&board, ["0B 03 00", "0B 03 01", "0B 82 00", "0B 82 01"]) == [hex("0B 82"), hex("0B 82")])
        #expect(board.ignoredCommands.isEmpty, "\(board.ignoredCommands)")
    }

    @Test func bmi270SequenceNeedsTheFlush() {
        var board = SimulatedBoard(profile: .metaMotionS, seed: 4)
        #expect(send(&board, ["0B 80"]) == [hex("0b 80 00 03 08 00 00 fb 03 00 02")])
        #expect(board.flashLog.capacity == 66_781_184)
        #expect(send(&board, ["13 03 28 00", "0B 02 13 04 FF 60", "0B 02 13 04 FF 24"]) == [hex("0B 02 00"), hex("0B 02 01")])
        #expect(send(&board, ["13 04 01", "0B 0B 00", "0B 01 01", "13 02 01 00", "13 01 01"]).isEmpty)
        let start = board.nanoseconds
        #expect(board.advance(to: start + 1_000_000_000).filter { $0.bytes[0...1] == [0x13, 0x04] }.count == 100)
        #expect(send(&board, ["0B 10 01"]).isEmpty)
        #expect(board.ignoredCommands.map(\.reason) == ["page flush is ignored while logging"])
        #expect(send(&board, ["13 01 00", "13 02 00 01", "13 04 00", "0B 01 00"]).isEmpty)
        // P13: the open page is still in RAM, so the length reads 0 until the flush.
        #expect(send(&board, ["0B 08 01", "0B 07 01", "0B 85"]) == [hex("0B 85 00 00 00 00")])
        #expect(send(&board, ["0B 10 01", "0B 85"]) == [hex("0B 85 C8 00 00 00")])
        #expect(send(&board, ["0B 06 C8 00 00 00 0A 00 00 00"]).isEmpty)
        let readout = drain(&board, to: start + 10_000_000_000)
        let entries = readout.filter { $0[1] == 0x07 }
        #expect(entries.count == 100)
        #expect(Array(entries[0][2...]) == expectedEntries(board, index: 0, time: start + 10_000_000, uid: 5))
        #expect(Array(readout.suffix(2)) == [hex("0B 0D"), hex("0B 08 00 00 00 00")], "rev 3 handshakes without 0B 0D 01")
        #expect(send(&board, ["0B 0E", "0B 09 FF FF FF FF", "0B 85"]) == [hex("0B 0D"), hex("0B 85 00 00 00 00")])
    }

    /// A trigger on BMI270's packed register (`13 05`) is allocated but never writes (§4.3).
    @Test func packedTriggersNeverWrite() {
        var board = SimulatedBoard(profile: .metaMotionS)
        #expect(send(&board, ["0B 02 13 05 FF 60", "0B 01 01", "13 05 01", "13 02 01 00", "13 01 01"]) == [hex("0B 02 00")])
        _ = board.advance(to: 1_000_000_000)
        #expect(board.flashLog.storedCount == 0)
    }

    /// The §5.3 and §8.1 vectors, byte for byte, from samples fed with the reference's values.
    @Test func readoutVectorsFromTheReference() {
        var board = SimulatedBoard(profile: .metaMotionR)
        _ = send(&board, ["0B 02 13 05 FF 60", "0B 02 13 05 FF 24", "0B 01 01", "0B 07 01"])
        // (100, -200, 300) at tick 0x4000, uid 5.
        board.flashLog.record(module: 0x13, register: 0x05, payload: hex("64 00 38 FF 2C 01"), tick: 0x4000, resetUID: 5)
        var accel = SimulatedBoard(profile: .metaMotionR)
        _ = send(&accel, ["0B 02 03 04 FF 60", "0B 02 03 04 FF 24", "0B 01 01", "0B 07 01"])
        accel.flashLog.record(module: 0x03, register: 0x04, payload: hex("F5 00 3D 01 DD 0F"), tick: 0x42E6, resetUID: 5)
        _ = send(&board, ["0B 06 02 00 00 00 00 00 00 00"])
        _ = send(&accel, ["0B 06 02 00 00 00 00 00 00 00"])
        #expect(drain(&board, to: 1_000_000_000).first == hex("0b 07 a0 00 40 00 00 64 00 38 ff a1 00 40 00 00 2c 01 00 00"))
        #expect(drain(&accel, to: 1_000_000_000).first == hex("0b 07 a0 e6 42 00 00 f5 00 3d 01 a1 e6 42 00 00 dd 0f 00 00"))
        // A single-axis gyro Y logger (attr 22) stores y alone, zero-padded.
        var single = SimulatedBoard(profile: .metaMotionR)
        #expect(send(&single, ["0B 02 13 05 FF 22", "0B 01 01", "0B 07 01"]) == [hex("0B 02 00")])
        single.flashLog.record(module: 0x13, register: 0x05, payload: hex("01 00 F9 FF 03 00"), tick: 0x04DF22, resetUID: 2)
        single.flashLog.record(module: 0x13, register: 0x05, payload: hex("01 00 FE FF 03 00"), tick: 0x04DF3D, resetUID: 2)
        _ = send(&single, ["0B 06 02 00 00 00 00 00 00 00"])
        #expect(drain(&single, to: 1_000_000_000).first == hex("0b 07 40 22 df 04 00 f9 ff 00 00 40 3d df 04 00 fe ff 00 00"))
    }

    /// Pages of 5 entries: a page ending after an odd entry is sent alone, followed by `0B 0D`,
    /// and the readout waits for `0B 0E`, which deletes just that page. Paced in simulated time.
    @Test func pagesPauseUntilConfirmed() {
        var board = SimulatedBoard(profile: .metaMotionR)
        board.flashLog.pageEntries = 5
        _ = send(&board, ["0B 02 13 05 FF 60", "0B 02 13 05 FF 24", "0B 01 01", "13 02 01 00", "13 01 01"])
        _ = board.advance(to: 100_000_000)  // 10 samples, 20 entries
        _ = send(&board, ["13 01 00", "0B 01 00", "0B 08 01", "0B 0D 01", "0B 07 01"])
        #expect(send(&board, ["0B 06 14 00 00 00 00 00 00 00"]).isEmpty)
        let t0 = board.nanoseconds
        let first = board.advance(to: t0 + 1_000_000_000).filter { $0.bytes[0] == 0x0B }
        #expect(first.map(\.bytes.count) == [20, 20, 11, 6, 2], "pair, pair, the page's last entry, progress, 0B 0D")
        #expect(first.map(\.nanoseconds) == [1, 2, 3, 3, 3].map { t0 + $0 * board.flashLog.readoutInterval })
        #expect(first[3].bytes == hex("0B 08 0F 00 00 00"))
        #expect(board.advance(to: t0 + 2_000_000_000).isEmpty, "waits for the page confirm")
        #expect(board.flashLog.storedCount == 20)
        _ = send(&board, ["0B 0E"])
        #expect(board.flashLog.storedCount == 15, "the confirmed page is deleted")
        // The next page starts with the z entry of sample 2: the sample is split across pages.
        let second = board.advance(to: t0 + 3_000_000_000).filter { $0.bytes[0] == 0x0B }
        #expect(second.first?.bytes[2] == UInt8(0xA1), "logger 1, uid 5")
        #expect(second.map(\.bytes.count) == [20, 20, 11, 6, 2])
    }

    @Test func fullFlashStopsOrOverwrites() {
        for overwrite in [false, true] {
            var board = SimulatedBoard(profile: .metaMotionR)
            board.flashLog.capacity = 10
            _ = send(&board, ["0B 02 13 05 FF 60", "0B 02 13 05 FF 24", overwrite ? "0B 0B 01" : "0B 0B 00", "0B 01 01",
                              "13 02 01 00", "13 01 01"])
            _ = board.advance(to: 200_000_000)  // 20 samples, 40 entries
            let log = board.flashLog
            #expect(log.storedCount == 10)
            #expect(send(&board, ["0B 85"]) == [hex("0B 85 0A 00 00 00")])
            if overwrite {
                #expect(log.overwritten == 30 && log.refusedWhenFull == 0)
                #expect(log.entries.first?.tick == board.tick(at: 160_000_000), "the newest 5 samples remain")
            } else {
                #expect(log.refusedWhenFull == 30 && log.overwritten == 0)
                #expect(log.entries.last?.tick == board.tick(at: 50_000_000), "the first 5 samples remain")
            }
        }
    }

    /// A soft reset restarts the tick at 0 and bumps the reset UID; triggers and entries stay,
    /// logging stops until started again.
    @Test func resetKeepsEntriesAndRestartsTheClock() {
        var board = SimulatedBoard(profile: .metaMotionR)
        _ = send(&board, ["0B 02 13 05 FF 60", "0B 02 13 05 FF 24", "0B 01 01", "13 02 01 00", "13 01 01"])
        _ = board.advance(to: 5_000_000_000)
        #expect(board.flashLog.storedCount == 1000)
        #expect(board.write(hex("FE 01")).linkEffect == .reset)
        #expect(send(&board, ["0B 84"]) == [hex("0B 84 00 00 00 00 06")])
        #expect(!board.flashLog.isLogging && board.flashLog.storedCount == 1000)
        #expect(send(&board, ["0B 82 00", "0B 82 01"]) == [hex("0b 82 13 05 ff 60"), hex("0b 82 13 05 ff 24")])
        _ = send(&board, ["0B 01 01", "13 02 01 00", "13 01 01"])
        _ = board.advance(to: 6_000_000_000)
        let after = board.flashLog.entries.suffix(200)
        #expect(after.allSatisfy { $0.resetUID == 6 } && after.first?.tick == 6, "tick restarts: 10 ms = 6.8 ticks")
        #expect(board.flashLog.entries.prefix(1000).allSatisfy { $0.resetUID == 5 })
    }

    /// A link loss mid-readout ends it; the entries stay, the board keeps logging, and the next
    /// readout starts again at the oldest unconfirmed entry.
    @Test func linkLossMidReadoutResendsFromTheOldestUnconfirmed() {
        var board = SimulatedBoard(profile: .metaMotionR)
        _ = send(&board, ["0B 02 13 05 FF 60", "0B 02 13 05 FF 24", "0B 01 01", "13 02 01 00", "13 01 01"])
        _ = board.advance(to: 1_000_000_000)
        _ = send(&board, ["0B 0D 01", "0B 07 01", "0B 06 C8 00 00 00 00 00 00 00"])
        let before = board.nanoseconds
        let partial = drain(&board, to: before + 10 * board.flashLog.readoutInterval)
        #expect(partial.count == 10)
        board.linkLost()
        #expect(drain(&board, to: before + 2_000_000_000).isEmpty, "no readout without a link")
        #expect(board.flashLog.storedCount == 600, "3 s logged: kept logging while the link was down, nothing deleted")
        _ = send(&board, ["0B 06 C8 00 00 00 00 00 00 00"])
        let again = drain(&board, to: board.nanoseconds + board.flashLog.readoutInterval)
        #expect(again.first == partial.first)
    }

    /// A board whose radio queue is full holds its readout back (the real-BlueZ VM's
    /// peripheral while bluetoothd has not read its socket): held until a moment, it sends
    /// nothing before it and then goes on at its own pace, without a burst making up for the wait.
    @Test func aHeldReadoutResumesAtItsPaceWithoutABurst() {
        var board = SimulatedBoard(profile: .metaMotionR)
        _ = send(&board, ["0B 02 13 05 FF 60", "0B 02 13 05 FF 24", "0B 01 01", "13 02 01 00", "13 01 01"])
        _ = board.advance(to: 1_000_000_000)
        _ = send(&board, ["13 01 00", "0B 01 00", "0B 07 01", "0B 06 C8 00 00 00 00 00 00 00"])
        let interval = board.flashLog.readoutInterval
        let held = board.nanoseconds + 50 * interval
        board.flashLog.holdReadout(at: held)
        let resumed = board.advance(to: held + 3 * interval).filter { $0.bytes[0] == 0x0B }
        #expect(resumed.map(\.nanoseconds) == [0, 1, 2, 3].map { held + $0 * interval },
                "\(resumed.count) readout notifications after the hold")
        #expect(resumed.allSatisfy { $0.bytes[1] == 0x07 })
    }

    @Test func faultsAndSlotExhaustion() {
        var board = SimulatedBoard(profile: .metaMotionR)
        let triggers = (0..<9).map { _ in "0B 02 13 05 FF 22" }
        #expect(send(&board, triggers) == (0..<8).map { [0x0B, 0x02, UInt8($0)] }, "8 slots, the 9th gets no reply")
        #expect(board.ignoredCommands.map(\.reason) == ["all 8 trigger slots are in use"])
        _ = send(&board, ["0B 03 03"])
        board.faults.unansweredTriggers = 1
        #expect(send(&board, ["0B 02 03 04 FF 60"]).isEmpty, "P3: the reply is lost, the slot is taken")
        #expect(send(&board, ["0B 82 03"]) == [hex("0B 82 03 04 FF 60")])
        board.faults.unansweredSlotQueries = true
        #expect(send(&board, ["0B 82 00"]).isEmpty)
        // P11: a clock near 2^32 wraps.
        var late = SimulatedBoard(profile: .metaMotionR)
        late.tickAtPowerOn = 0xFFFF_FFF0
        #expect(late.tick(at: 48_000_000) == 0xFFFF_FFF0 &+ 32 && late.tick(at: 0) == 0xFFFF_FFF0)
        // P6: a stalled readout sends nothing until the stall ends.
        var stalled = SimulatedBoard(profile: .metaMotionR)
        _ = send(&stalled, ["0B 02 13 05 FF 22", "0B 01 01", "13 02 01 00", "13 01 01"])
        _ = stalled.advance(to: 100_000_000)
        stalled.faults.readoutStalled = true
        _ = send(&stalled, ["0B 07 01", "0B 06 0A 00 00 00 00 00 00 00"])
        #expect(drain(&stalled, to: 200_000_000).isEmpty)
        stalled.faults.readoutStalled = false
        #expect(drain(&stalled, to: 300_000_000).filter { $0[1] == 0x07 }.count == 5)
    }
}
