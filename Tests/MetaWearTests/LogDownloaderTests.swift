import MetaWear
import MetaWearBoardModel
import Testing

/// The gateway's download state machine against the board model (two independent readings of
/// metawear-logging.md), in simulated time.
@Suite struct LogDownloaderTests {
    /// A board and a downloader wired together: writes go to the board, its replies and timed
    /// notifications come back.
    struct Rig {
        var board: SimulatedBoard
        var downloader: LogDownloader
        var samples: [(sensor: MotionSensor, sample: LoggedSample)] = []
        var pagesReady = 0
        /// Confirm each page as it is ready (a caller that stores at once), and drop what a
        /// resumed readout voids: `samples` then holds what such a caller stored.
        var confirmsPages = false
        /// Samples up to the last confirm.
        var confirmedCount = 0
        /// Timed notifications lost on the way to the host.
        var lose: ([UInt8]) -> Bool = { _ in false }

        /// Writes packets, feeding each immediate reply back (which may write more).
        mutating func send(_ packets: [Packet]) {
            for packet in packets {
                for reply in board.write(packet.bytes).notifications { feed(reply, at: board.nanoseconds) }
            }
        }

        mutating func feed(_ bytes: [UInt8], at time: UInt64) {
            let step = downloader.receive(bytes, at: Int64(time))
            if step.resumed { samples.removeSubrange(confirmedCount...) }
            samples += step.samples
            if step.pageReady { pagesReady += 1 }
            send(step.writes)
            if confirmsPages, downloader.awaitsConfirm {
                send(downloader.confirmPage())
                confirmedCount = samples.count
            }
        }

        /// The caller's watchdog: the readout is asked for again, the unconfirmed samples dropped.
        mutating func resume() {
            samples.removeSubrange(confirmedCount...)
            send(downloader.resume())
        }

        /// Moves simulated time in 5 ms steps, delivering what the board sends, until `until`
        /// or until `stop` holds.
        mutating func run(until: UInt64, stop: (Rig) -> Bool = { $0.downloader.state == .finished }) {
            while board.nanoseconds < until, !stop(self) {
                for notification in board.advance(to: board.nanoseconds + 5_000_000) where !lose(notification.bytes) {
                    feed(notification.bytes, at: notification.nanoseconds)
                }
            }
        }

        /// Allocates the gyro loggers and returns their ids from the board's replies, in order.
        mutating func setUpGyroLoggers(chip: IMUChip) -> LoggerIDs {
            let ids = LoggingCommands.triggers(.gyro, chip: chip).flatMap { board.write($0.bytes).notifications }.compactMap { reply -> UInt8? in
                guard case .success(.triggerAllocated(let id))? = LogNotificationDecoder.decode(reply) else { return nil }
                return id
            }
            return LoggerIDs(xy: ids[0], z: ids[1])
        }
    }

    private func startLoggingGyro(_ rig: inout Rig, chip: IMUChip) {
        let config = GyroConfiguration(rate: .hz100, range: .dps2000)
        for packet in LoggingCommands.start(overwriteWhenFull: false) + Commands.startGyro(config, mode: .single, chip: chip) {
            _ = rig.board.write(packet.bytes)
        }
    }

    /// Every sample, in order, with the board's signal, exactly once.
    private func expectEverySample(_ samples: [(sensor: MotionSensor, sample: LoggedSample)], seed: UInt32, count: Int,
                                   sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(samples.count == count, sourceLocation: sourceLocation)
        for (k, item) in samples.enumerated() {
            let s = SimulatedBoard.signal(.gyro, seed: seed, index: UInt64(k))
            guard item.sensor == .gyro, item.sample.raw == RawVector(x: s.x, y: s.y, z: s.z) else {
                Issue.record("sample \(k): \(item)", sourceLocation: sourceLocation); return
            }
        }
    }

    @Test func downloadsAFullLogPageByPage() {
        var rig = Rig(board: SimulatedBoard(profile: .metaMotionR, seed: 7), downloader: LogDownloader(revision: 2, loggers: [:]))
        let ids = rig.setUpGyroLoggers(chip: .bmi160)
        rig.downloader = LogDownloader(revision: 2, loggers: [.gyro: ids])
        startLoggingGyro(&rig, chip: .bmi160)
        _ = rig.board.advance(to: 12_000_000_000)  // 1,200 samples, 2,400 entries: 4 pages and 352 entries
        rig.send(Commands.stop(.gyro, mode: .single, chip: .bmi160) + [LoggingCommands.stop])
        let logStart = rig.board.commandLog.count
        rig.send(rig.downloader.begin())
        rig.run(until: 30_000_000_000)
        #expect(rig.downloader.state == .finished)
        #expect(Array(rig.board.commandLog[logStart..<logStart + 5])
                == hexLines(["0b 08 01", "0b 0d 01", "0b 07 01", "0b 85", "0b 06 60 09 00 00 78 00 00 00"]))
        #expect(rig.board.commandLog.filter { $0 == hex("0b 0e") }.count == 5, "four full pages and the last")
        expectEverySample(rig.samples, seed: 7, count: 1200)
        #expect(rig.board.flashLog.storedCount == 0, "confirmed pages are deleted")
        #expect(rig.downloader.duplicatesDropped == 0 && rig.downloader.orphanedEntries == 0 && rig.downloader.unknownEntries == 0)
        #expect(rig.downloader.progress.total == 2400 && rig.downloader.progress.left == 0)
        // 200 notifications a second, two entries each.
        #expect((380...420).contains(rig.downloader.progress.entriesPerSecond ?? 0), "\(String(describing: rig.downloader.progress.entriesPerSecond))")
    }

    /// The link drops after 700 entries while the board goes on logging; after reconnecting the
    /// readout starts again at the unconfirmed page: its entries are dropped as duplicates and
    /// every sample arrives once.
    @Test func aLinkLossMidReadoutLosesAndDuplicatesNothing() {
        var rig = Rig(board: SimulatedBoard(profile: .metaMotionR, seed: 8), downloader: LogDownloader(revision: 2, loggers: [:]))
        let ids = rig.setUpGyroLoggers(chip: .bmi160)
        rig.downloader = LogDownloader(revision: 2, loggers: [.gyro: ids])
        startLoggingGyro(&rig, chip: .bmi160)
        _ = rig.board.advance(to: 6_000_000_000)
        rig.send(rig.downloader.begin())
        rig.run(until: 60_000_000_000) { $0.samples.count >= 350 }
        rig.board.linkLost()
        rig.downloader.linkLost()
        _ = rig.board.advance(to: rig.board.nanoseconds + 1_000_000_000)  // nothing reaches the host
        rig.send(rig.downloader.begin())
        rig.run(until: 60_000_000_000)
        #expect(rig.downloader.state == .finished)
        #expect(rig.downloader.duplicatesDropped == 700 - 512, "the unconfirmed part of page 2 came again")
        let count = rig.samples.count
        #expect(count > 700, "the log grew while the link was down")
        expectEverySample(rig.samples, seed: 8, count: count)
    }

    /// A logged MetaMotion R (1,200 samples, four full pages and part of a fifth) read out by
    /// a caller that stores and confirms each page, with `lose` dropping notifications on the
    /// way (issue 21).
    private func lossyRig(seed: UInt32, lose: @escaping ([UInt8]) -> Bool) -> Rig {
        var rig = Rig(board: SimulatedBoard(profile: .metaMotionR, seed: seed), downloader: LogDownloader(revision: 2, loggers: [:]))
        let ids = rig.setUpGyroLoggers(chip: .bmi160)
        rig.downloader = LogDownloader(revision: 2, loggers: [.gyro: ids], confirmsPagesItself: false)
        rig.confirmsPages = true
        rig.lose = lose
        startLoggingGyro(&rig, chip: .bmi160)
        _ = rig.board.advance(to: 12_000_000_000)
        rig.send(Commands.stop(.gyro, mode: .single, chip: .bmi160) + [LoggingCommands.stop])
        return rig
    }

    /// The second page's end (`0B 0D`) is lost: the board waits for a confirm, the download
    /// for entries, for ever (P6). Asked for again, the board sends its unconfirmed page once
    /// more and every sample is stored once.
    @Test func aLostPageEndIsResumedFromTheLastConfirmedPage() {
        var pageEnds = 0
        var rig = lossyRig(seed: 11) { bytes in
            guard bytes == [0x0B, 0x0D] else { return false }
            pageEnds += 1
            return pageEnds == 2
        }
        rig.send(rig.downloader.begin())
        rig.run(until: 60_000_000_000)
        #expect(rig.downloader.state == .reading && rig.board.flashLog.isReadingOut, "both wait: the stall")
        #expect(rig.samples.count > 256 && rig.samples.count <= 512)
        rig.resume()
        rig.run(until: 120_000_000_000)
        #expect(rig.downloader.state == .finished)
        #expect(rig.downloader.resumes == 1)
        expectEverySample(rig.samples, seed: 11, count: 1200)
        #expect(rig.board.flashLog.storedCount == 0)
    }

    /// One readout notification (two entries) of the third page is lost: the board's next
    /// progress count is short of what arrived, so the readout is asked for again before the
    /// page is reported and confirmed away; every sample is stored once.
    @Test func aLostEntryShowsInTheProgressCountAndIsReadAgain() {
        var readouts = 0
        var rig = lossyRig(seed: 12) { bytes in
            guard bytes.count == 20, bytes[1] == 0x07 else { return false }
            readouts += 1
            return readouts == 600
        }
        rig.send(rig.downloader.begin())
        rig.run(until: 120_000_000_000)
        #expect(rig.downloader.state == .finished)
        #expect(rig.downloader.resumes == 1 && rig.downloader.missedEntries == 2)
        expectEverySample(rig.samples, seed: 12, count: 1200)
        #expect(rig.board.flashLog.storedCount == 0)
    }

    /// With pages confirmed by the caller, the board waits: nothing is deleted before the
    /// samples are stored.
    @Test func pagesWaitForTheCallersConfirm() {
        var rig = Rig(board: SimulatedBoard(profile: .metaMotionS, seed: 9), downloader: LogDownloader(revision: 3, loggers: [:]))
        let ids = rig.setUpGyroLoggers(chip: .bmi270)
        rig.downloader = LogDownloader(revision: 3, loggers: [.gyro: ids], confirmsPagesItself: false)
        startLoggingGyro(&rig, chip: .bmi270)
        _ = rig.board.advance(to: 3_000_000_000)  // 600 entries
        rig.send(Commands.stop(.gyro, mode: .single, chip: .bmi270) + [LoggingCommands.stop] + LoggingCommands.flushPage(revision: 3))
        let begin = rig.downloader.begin()
        #expect(begin.map(\.bytes) == hexLines(["0b 08 01", "0b 07 01", "0b 85"]), "no 0B 0D 01 on revision 3")
        rig.send(begin)
        rig.run(until: 20_000_000_000) { $0.pagesReady == 1 }
        rig.run(until: rig.board.nanoseconds + 2_000_000_000)
        #expect(rig.downloader.state == .awaitingConfirm && rig.samples.count == 256)
        #expect(rig.board.flashLog.storedCount == 600, "nothing deleted before the confirm")
        rig.send(rig.downloader.confirmPage())
        #expect(rig.board.flashLog.storedCount == 88)
        rig.run(until: rig.board.nanoseconds + 5_000_000_000)
        #expect(rig.downloader.state == .finished && rig.pagesReady == 2)
        rig.send(rig.downloader.confirmPage())
        #expect(rig.board.flashLog.storedCount == 0)
        expectEverySample(rig.samples, seed: 9, count: 300)
    }

    /// A readout of the log's streamed part leaves the newest entries on the board while it
    /// logs on: it asks for the length less what it leaves (in whole sample pairs), reads the
    /// oldest samples in order, each once, and its confirms delete only what it read; a log
    /// holding no more than it leaves is not read at all.
    @Test func aReadoutLeavingTheNewestEntriesReadsOnlyTheOldest() {
        var rig = Rig(board: SimulatedBoard(profile: .metaMotionR, seed: 7), downloader: LogDownloader(revision: 2, loggers: [:]))
        let ids = rig.setUpGyroLoggers(chip: .bmi160)
        startLoggingGyro(&rig, chip: .bmi160)
        _ = rig.board.advance(to: 5_000_000_000)  // 500 samples, 1,000 entries
        rig.downloader = LogDownloader(revision: 2, loggers: [.gyro: ids], confirmsPagesItself: false, leavingNewest: 1001)
        rig.confirmsPages = true
        rig.send(rig.downloader.begin())
        #expect(rig.downloader.state == .finished && rig.samples.isEmpty, "nothing older than what it leaves")
        #expect(!rig.board.commandLog.contains { $0.starts(with: [0x0B, 0x06]) }, "no readout asked for")
        _ = rig.board.advance(to: 12_000_000_000)  // 1,200 samples, 2,400 entries
        rig.downloader = LogDownloader(revision: 2, loggers: [.gyro: ids], confirmsPagesItself: false, leavingNewest: 1001)
        let logStart = rig.board.commandLog.count
        rig.send(rig.downloader.begin())
        rig.run(until: 30_000_000_000)
        #expect(rig.downloader.state == .finished)
        #expect(rig.board.commandLog[logStart + 4] == hex("0b 06 76 05 00 00 45 00 00 00"), "2,400 less 1,001, down to whole pairs: 1,398")
        #expect(rig.downloader.progress.total == 1398)
        expectEverySample(rig.samples, seed: 7, count: 699)
        #expect(rig.board.flashLog.storedCount == Int(rig.board.flashLog.written) - 1398, "only what it read is deleted")
        #expect(rig.downloader.orphanedEntries == 0)
    }

    /// A gateway restarted without state finds its loggers on the board instead of allocating
    /// new ones (P12), also when another sensor's loggers sit between them.
    @Test func discoveryFindsTheLoggersOnTheBoard() {
        var board = SimulatedBoard(profile: .metaMotionR)
        for packet in LoggingCommands.triggers(.accelerometer, chip: .bmi160) + LoggingCommands.triggers(.gyro, chip: .bmi160) {
            _ = board.write(packet.bytes)
        }
        _ = board.write(LoggingCommands.remove(loggerIDs: [0, 1]).map(\.bytes)[0])
        var slots: [UInt8: LogTrigger?] = [:]
        for (id, read) in LoggerDiscovery.slotReads(count: 8).enumerated() {
            for reply in board.write(read.bytes).notifications {
                if case .success(.trigger(let trigger))? = LogNotificationDecoder.decode(reply) { slots[UInt8(id)] = trigger }
            }
        }
        #expect(slots.count == 8)
        #expect(LoggerDiscovery.existing(slots: slots, chip: .bmi160) == [.gyro: LoggerIDs(xy: 2, z: 3)],
                "the accelerometer lost its x/y logger")
        #expect(LoggerDiscovery.existing(slots: slots, chip: .bmi270).isEmpty, "13 05 is not the BMI270's data register")
    }
}
