import MetaWear
import Testing

/// The gateway's logging protocol against metawear-logging.md's literal bytes (§4-§8).
@Suite struct LoggingProtocolTests {
    private func bytes(_ packets: [Packet]) -> [[UInt8]] { packets.map(\.bytes) }

    @Test func commandsAreTheSDKsBytes() {
        // §4.3: BMI160 gyro 13 05, BMI270 gyro 13 04 (13 05 is packed there), accelerometer 03 04.
        #expect(bytes(LoggingCommands.triggers(.gyro, chip: .bmi160)) == hexLines(["0B 02 13 05 FF 60", "0B 02 13 05 FF 24"]))
        #expect(bytes(LoggingCommands.triggers(.gyro, chip: .bmi270)) == hexLines(["0B 02 13 04 FF 60", "0B 02 13 04 FF 24"]))
        for chip in IMUChip.allCases {
            #expect(bytes(LoggingCommands.triggers(.accelerometer, chip: chip)) == hexLines(["0B 02 03 04 FF 60", "0B 02 03 04 FF 24"]))
        }
        // §5.1 start/stop/flush.
        #expect(bytes(LoggingCommands.start(overwriteWhenFull: false)) == hexLines(["0B 0B 00", "0B 01 01"]))
        #expect(bytes(LoggingCommands.start(overwriteWhenFull: true)) == hexLines(["0B 0B 01", "0B 01 01"]))
        #expect(LoggingCommands.stop.bytes == hex("0B 01 00"))
        #expect(bytes(LoggingCommands.flushPage(revision: 3)) == [hex("0B 10 01")])
        #expect(LoggingCommands.flushPage(revision: 2).isEmpty)
        #expect(bytes(LoggingCommands.flushWhileLogging(revision: 3, overwriteWhenFull: true))
                == [hex("0B 01 00"), hex("0B 10 01"), hex("0B 0B 01"), hex("0B 01 01")])
        #expect(LoggingCommands.flushWhileLogging(revision: 2, overwriteWhenFull: true).isEmpty)
        // §5.2 download vectors: MMR and MMS, 414 entries, n_notifies 20, 0 and 100.
        #expect(bytes(LoggingCommands.downloadPreamble(revision: 2)) == hexLines(["0b 08 01", "0b 0d 01", "0b 07 01", "0b 85"]))
        #expect(bytes(LoggingCommands.downloadPreamble(revision: 3)) == hexLines(["0b 08 01", "0b 07 01", "0b 85"]))
        #expect(LoggingCommands.readout(entries: 414, progressUpdates: 20).bytes == hex("0b 06 9e 01 00 00 14 00 00 00"))
        #expect(LoggingCommands.readout(entries: 414, progressUpdates: 0).bytes == hex("0b 06 9e 01 00 00 00 00 00 00"))
        #expect(LoggingCommands.readout(entries: 414, progressUpdates: 100).bytes == hex("0b 06 9e 01 00 00 04 00 00 00"))
        #expect(LoggingCommands.confirmPage.bytes == hex("0b 0e"))
        // §6 clear, §4.4 remove.
        #expect(bytes(LoggingCommands.clear(revision: 2)) == hexLines(["0B 0D 01", "0B 09 FF FF FF FF"]))
        #expect(bytes(LoggingCommands.clear(revision: 3)) == hexLines(["0B 09 FF FF FF FF"]))
        #expect(bytes(LoggingCommands.remove(loggerIDs: [1, 0])) == hexLines(["0B 03 00", "0B 03 01"]))
        #expect(LoggingCommands.removeAll.bytes == hex("0B 0A"))
        #expect(LoggingCommands.readTrigger(slot: 7).bytes == hex("0B 82 07"))
        #expect(LoggingCommands.readLength.bytes == hex("0B 85"))
    }

    @Test func capabilitiesFromModuleInfo() throws {
        let mms = LoggingCapabilities(moduleInfo: try ModuleInfo(reply: hex("0b 80 00 03 08 00 00 fb 03 00 02")), model: .metaMotionS)
        #expect(mms == LoggingCapabilities(revision: 3, triggerSlots: 8, capacityEntries: 66_781_184, pageEntries: 512))
        let mmr = try ModuleInfo(reply: hex("0b 80 00 02 08 80 2b 00 00"))
        #expect(LoggingCapabilities(moduleInfo: mmr, model: .metaMotionRL)?.capacityEntries == 1_048_576)
        // The SDK's canned reply says 11,136: the documented 8 MB decides.
        #expect(LoggingCapabilities(moduleInfo: mmr, model: .metaMotionR)?.capacityEntries == 1_048_576)
        #expect(LoggingCapabilities(moduleInfo: mmr, model: .metaMotionR)?.triggerSlots == 8)
        // A real MetaMotion R (firmware 1.4.5, MbientLab's MetaBase) reports 1,048,576 in the same
        // field; a MetaMotion C, whose flash no source documents, gets what its board reports.
        let reported = try ModuleInfo(reply: hex("0b 80 00 02 08 00 00 10 00"))
        #expect(LoggingCapabilities(moduleInfo: reported, model: .metaMotionC)?.capacityEntries == 1_048_576)
        let silent = try ModuleInfo(reply: hex("0b 80 00 02 08"))
        #expect(LoggingCapabilities(moduleInfo: silent, model: .metaMotionC)?.capacityEntries == nil, "unknown, shown as such")
        #expect(LoggingCapabilities(moduleInfo: ModuleInfo(absent: .logging), model: .metaMotionR) == nil)
        // 3 h of gyro at 100 Hz (200 entries/s) fit an RL: 1,048,576 / 200 = 5,242.88 s.
        #expect(LoggingCapabilities(moduleInfo: mmr, model: .metaMotionRL)?.secondsOfLogging(entriesPerSecond: 200) == 5242.88)
    }

    @Test func decodesTheReferenceVectors() {
        func entries(_ line: String) -> [LogEntry]? {
            guard case .success(.entries(let e))? = LogNotificationDecoder.decode(hex(line)) else { return nil }
            return e
        }
        #expect(entries("0b 07 a1 cc 4d 00 00 6c 01 00 00") == [LogEntry(loggerID: 1, resetUID: 5, tick: 0x4DCC, data: 0x016C)])
        #expect(entries("0b 07 a0 e6 42 00 00 f5 00 3d 01 a1 e6 42 00 00 dd 0f 00 00") == [
            LogEntry(loggerID: 0, resetUID: 5, tick: 0x42E6, data: 0x013D_00F5),
            LogEntry(loggerID: 1, resetUID: 5, tick: 0x42E6, data: 0x0FDD),
        ])
        #expect(entries("0b 07 61 38 c2 01 00 e6 72 8c 57 63 38 c2 01 00 58 4b 00 00")?.map(\.loggerID) == [1, 3])
        #expect(entries("0b 07 61 38 c2 01 00 e6 72 8c 57 63 38 c2 01 00 58 4b 00 00")?.map(\.resetUID) == [3, 3])
        #expect(LogNotificationDecoder.decode(hex("0b 08 71 02 00 00")) == .success(.progress(entriesLeft: 0x271)))
        #expect(LogNotificationDecoder.decode(hex("0b 0d")) == .success(.pageCompleted))
        #expect(LogNotificationDecoder.decode(hex("0b 85 9e 01 00 00")) == .success(.length(414)))
        #expect(LogNotificationDecoder.decode(hex("0b 02 03")) == .success(.triggerAllocated(id: 3)))
        #expect(LogNotificationDecoder.decode(hex("0b 82")) == .success(.trigger(nil)))
        #expect(LogNotificationDecoder.decode(hex("0b 82 13 05 ff 22")) == .success(.trigger(
            LogTrigger(module: .gyro, register: 0x05, dataID: 0xFF, offset: 2, length: 2))))
        #expect(LogNotificationDecoder.decode(hex("0b 84 15 04 00 00 05")) == nil, "the clock is NotificationDecoder's")
        #expect(LogNotificationDecoder.decode(hex("13 05 00 00 00 00 00 00")) == nil)
        // Bad lengths are errors that name the problem, never a trap.
        guard case .failure(let error)? = LogNotificationDecoder.decode(hex("0b 07 a0 00 40")) else {
            Issue.record("short readout accepted"); return
        }
        #expect(error.description == "logging notification [0B 07 A0 00 40]: a readout notification is 11 or 20 bytes, got 5")
    }

    /// §8.1's example: ids 0/1, uid 5, tick 0x4000 → (100, −200, 300), 24,000 ms after boot.
    @Test func assemblesSamplesAndSkipsHalfSamples() {
        var assembler = LogSampleAssembler(xyLogger: 0, zLogger: 1)
        guard case .success(.entries(let e))? = LogNotificationDecoder.decode(hex("0b 07 a0 00 40 00 00 64 00 38 ff a1 00 40 00 00 2c 01 00 00")) else {
            Issue.record("not decoded"); return
        }
        let first = assembler.add(e[0]), second = assembler.add(e[1])
        #expect(first == nil)
        #expect(second == LoggedSample(resetUID: 5, tick: 0x4000, raw: RawVector(x: 100, y: -200, z: 300)))
        #expect(BoardTicks.sdkMilliseconds(0x4000) == 24_000)
        #expect([0x4007, 0x400E].map { BoardTicks.sdkMilliseconds($0) } == [24_010, 24_021])
        // P9: z(a), xy(b), z(b), xy(c), z(c) must give b and c, not (x_b, y_b, z_a).
        func xy(_ tick: UInt32, _ v: Int16) -> LogEntry {
            LogEntry(loggerID: 0, resetUID: 5, tick: tick, data: UInt32(UInt16(bitPattern: v)) | UInt32(UInt16(bitPattern: v)) << 16)
        }
        func z(_ tick: UInt32, _ v: Int16) -> LogEntry { LogEntry(loggerID: 1, resetUID: 5, tick: tick, data: UInt32(UInt16(bitPattern: v))) }
        var wrapped = LogSampleAssembler(xyLogger: 0, zLogger: 1)
        let out = [z(10, 1), xy(17, 2), z(17, 2), xy(24, 3), z(25, 3)].compactMap { wrapped.add($0) }
        #expect(out.map(\.raw) == [RawVector(x: 2, y: 2, z: 2), RawVector(x: 3, y: 3, z: 3)])
        #expect(wrapped.orphanedEntries == 1)
        // Entries of other loggers (another sensor) are not this assembler's.
        let foreign = wrapped.add(LogEntry(loggerID: 2, resetUID: 5, tick: 30, data: 0))
        #expect(foreign == nil)
        // A sample never pairs across boots.
        let acrossBoots = [xy(40, 4), LogEntry(loggerID: 1, resetUID: 6, tick: 40, data: 4)].compactMap { wrapped.add($0) }
        #expect(acrossBoots.isEmpty)
    }

    /// §7.2 TestLogTimestamp: clock `0b 84 a9 72 04 00 01` read at connect; entries at ticks
    /// 269,173/269,174 (the SDK stamps the second) are 32,700 ms before connect.
    @Test func ticksBecomeHostTime() {
        var reference = LogTimeReference()
        let connect = 1_700_000_000_000.0
        reference.observe(BoardClock(tick: 291_497, resetUID: 1), hostMilliseconds: connect)
        let time = reference.time(uid: 1, ticks: 269_174)
        #expect(time.map { ($0.milliseconds - (connect - 32_700)).magnitude < 1 } == true)
        #expect(time?.guessed == false)
        // Unknown boots borrow the nearest earlier one's reference, flagged as a guess (P10).
        #expect(reference.time(uid: 3, ticks: 0)?.guessed == true)
        #expect(reference.time(uid: 0, ticks: 0)?.guessed == true, "uid 0 wraps back to 1 via 7…2")
        #expect(LogTimeReference().time(uid: 0, ticks: 0) == nil)
    }

    @Test func rolloverAndResetDetection() {
        var unwrapper = TickUnwrapper()
        let ticks: [UInt32] = [0xFFFF_FFF0, 0xFFFF_FFFF, 0x0000_0005, 0x0000_0004, 0x0001_0000]
        let unwrapped = ticks.map { unwrapper.unwrap($0) }
        #expect(unwrapped == [0xFFFF_FFF0, 0xFFFF_FFFF, 0x1_0000_0005, 0x1_0000_0004, 0x1_0001_0000])
        let t0 = 1_000_000.0
        let clock = BoardClock(tick: 100_000, resetUID: 5)
        // 10 s later: 6,827 ticks.
        #expect(BoardClockChange.between(clock, at: t0, and: BoardClock(tick: 106_827, resetUID: 5), at: t0 + 10_000) == .continuous)
        #expect(BoardClockChange.between(clock, at: t0, and: BoardClock(tick: 700, resetUID: 6), at: t0 + 10_000) == .reset(boots: 1))
        #expect(BoardClockChange.between(clock, at: t0, and: BoardClock(tick: 700, resetUID: 0), at: t0 + 10_000) == .reset(boots: 3))
        #expect(BoardClockChange.between(clock, at: t0, and: BoardClock(tick: 700, resetUID: 5), at: t0 + 10_000) == .reset(boots: 8))
        let late = BoardClock(tick: 0xFFFF_F000, resetUID: 2)
        #expect(BoardClockChange.between(late, at: t0, and: BoardClock(tick: 2731, resetUID: 2), at: t0 + 10_000) == .rolledOver)
    }

    /// After a link loss the board sends again from its oldest unconfirmed entry: those are
    /// dropped, entries that share a tick at high rates are kept, and nothing new is lost.
    @Test func duplicatesAfterALinkLossAreDropped() {
        var dedup = ReadoutDeduplicator()
        // 1600 Hz single-axis logger: ticks 1.46 ms apart, samples 0.625 ms apart.
        let stream = (0..<40).map { LogEntry(loggerID: 0, resetUID: 2, tick: UInt32(Double($0) * 0.625 / BoardTicks.millisecondsPerTick), data: UInt32($0)) }
        let firstReadout = stream.prefix(25).filter { dedup.admit($0) }
        #expect(firstReadout.count == 25, "a first readout delivers everything")
        dedup.linkLost()
        let admitted = stream.filter { dedup.admit($0) }
        #expect(admitted == Array(stream.suffix(15)))
        #expect(dedup.duplicatesDropped == 25)
        dedup.readoutCompleted()
        let afresh = dedup.admit(stream[0])
        #expect(afresh, "after a completed readout a reused UID starts afresh")
    }
}
