import MetaWear
import MetaWearBoardModel
import Recording

/// The pure half of backfill: a board model logs gyro at 100 Hz while its stream loses a
/// 60 s drop and five 8 s drops; the whole log is downloaded through `LogDownloader` and placed
/// with `BackfillPlanner`. Reports CPU per 1,000 backfilled samples (decode, pairing, duplicate
/// check and placement), download decode throughput and the placement error against the
/// board's true sample times. The D-Bus path (download through dbus-daemon and the daemon) is
/// not in this figure.
enum BackfillBenchmark {
    static func run(_ arguments: [String]) {
        var seconds = 900
        var gapMinutes = [2, 5, 10]
        var restartMinutes = [2, 5, 10]
        var restartDown = 8.0
        var gapDown = 8.0
        var streamedReads = true
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            if argument == "--seconds", let value = iterator.next().flatMap(Int.init), value >= 120 {
                seconds = value
            } else if argument == "--gap-after-minutes", let value = iterator.next() {
                gapMinutes = value.split(separator: ",").compactMap { Int($0) }
            } else if argument == "--restart-after-minutes", let value = iterator.next() {
                restartMinutes = value.split(separator: ",").compactMap { Int($0) }
            } else if argument == "--restart-down-seconds", let value = iterator.next().flatMap(Double.init), value > 0 {
                restartDown = value
            } else if argument == "--gap-down-seconds", let value = iterator.next().flatMap(Double.init), value > 0 {
                gapDown = value
            } else if argument == "--no-streamed-reads" {
                streamedReads = false
            } else {
                fail("usage: mwbench backfill [--seconds N (>= 120)] [--gap-after-minutes 2,5,10] [--restart-after-minutes 2,5,10] [--restart-down-seconds 8] [--gap-down-seconds 8] [--no-streamed-reads]")
            }
        }
        let gaps: [Range<UInt64>] = [60..<68, 100..<160, 200..<208, 300..<308, 400..<408, 500..<508].map {
            $0.lowerBound * 1_000_000_000..<$0.upperBound * 1_000_000_000
        }
        var board = SimulatedBoard(profile: .metaMotionR, seed: 3)
        board.flashLog.readoutInterval = 1_000_000  // pace is irrelevant here: CPU is measured
        let ids = LoggingCommands.triggers(.gyro, chip: .bmi160).flatMap { board.write($0.bytes).notifications }.map { $0[2] }
        let config = GyroConfiguration(rate: .hz100, range: .dps2000)
        for packet in LoggingCommands.start(overwriteWhenFull: false) + Commands.startGyro(config, mode: .single, chip: .bmi160) {
            _ = board.write(packet.bytes)
        }
        // Streamed samples keep their true times: the figure is the log path's, not BLE's.
        var streamed: [BackfillPlanner.StreamedSample] = []
        var truth: [UInt32: Int64] = [:]
        for notification in board.advance(to: UInt64(seconds) * 1_000_000_000) where notification.bytes.count == 8 {
            let time = Int64(notification.nanoseconds)
            truth[board.tick(at: notification.nanoseconds)] = time
            guard !gaps.contains(where: { $0.contains(notification.nanoseconds) }) else { continue }
            let b = notification.bytes
            func int16(_ at: Int) -> Int16 { Int16(bitPattern: UInt16(b[at]) | UInt16(b[at + 1]) << 8) }
            streamed.append(.init(time: time, raw: RawVector(x: int16(2), y: int16(4), z: int16(6))))
        }
        for packet in Commands.stop(.gyro, mode: .single, chip: .bmi160) + [LoggingCommands.stop] { _ = board.write(packet.bytes) }

        // The download against the board, recording what reached the gateway; then the same
        // bytes again through a fresh downloader, timed alone.
        let loggers: [MotionSensor: LoggerIDs] = [.gyro: LoggerIDs(xy: ids[0], z: ids[1])]
        var downloader = LogDownloader(revision: 2, loggers: loggers)
        var received: [[UInt8]] = []
        var pending = downloader.begin().map(\.bytes)
        while downloader.state != .finished {
            var incoming: [[UInt8]] = []
            for bytes in pending { incoming += board.write(bytes).notifications }
            pending = []
            if incoming.isEmpty { incoming = board.advance(to: board.nanoseconds + 100_000_000).map(\.bytes) }
            for bytes in incoming { pending += downloader.receive(bytes, at: Int64(board.nanoseconds)).writes.map(\.bytes) }
            received += incoming
        }
        let entries = received.reduce(0) { $0 + ($1.count >= 2 && $1[1] == 0x07 ? ($1.count - 2) / 9 : 0) }
        var replay = LogDownloader(revision: 2, loggers: loggers)
        _ = replay.begin()
        var logged: [LoggedSample] = []
        logged.reserveCapacity(entries / 2)
        let decodeStart = ProcessCPU.ownSeconds()
        for (i, bytes) in received.enumerated() { logged += replay.receive(bytes, at: Int64(i)).samples.map(\.sample) }
        let decodeSeconds = ProcessCPU.ownSeconds() - decodeStart
        let before = ProcessCPU.ownSeconds()
        let plan = BackfillPlanner(nominalPeriod: 10_000_000).plan(streamed: streamed, logged: logged)
        let planSeconds = ProcessCPU.ownSeconds() - before
        var errors = plan.backfilled.compactMap { sample in truth[sample.tick].map { Double(abs(sample.time - $0)) / 1e6 } }
        errors.sort()
        let backfilled = plan.backfilled.count
        let cpu = (decodeSeconds + planSeconds) * 1000
        print("| what | value |")
        print("|---|---:|")
        print("| samples logged / streamed / backfilled | \(logged.count) / \(streamed.count) / \(backfilled) |")
        print("| entries downloaded | \(entries) |")
        print("backfill_seconds=\(seconds)")
        print("backfill_logged_samples=\(logged.count)")
        print("backfill_streamed_samples=\(streamed.count)")
        print("backfill_backfilled_samples=\(backfilled)")
        print("backfill_entries=\(entries)")
        print("backfill_decode_ms=\(MetaWearBenchmark.format(decodeSeconds * 1000, 1))")
        print("backfill_plan_ms=\(MetaWearBenchmark.format(planSeconds * 1000, 1))")
        print("backfill_decode_entries_per_s=\(MetaWearBenchmark.format(Double(entries) / max(decodeSeconds, 1e-9), 0))")
        print("backfill_cpu_ms_per_1000=\(MetaWearBenchmark.format(cpu / Double(max(backfilled, 1)) * 1000, 2))")
        print("backfill_cpu_ms_per_1000_logged=\(MetaWearBenchmark.format(cpu / Double(max(logged.count, 1)) * 1000, 2))")
        print("backfill_median_error_ms=\(MetaWearBenchmark.format(errors.isEmpty ? -1 : errors[errors.count / 2], 4))")
        print("backfill_max_error_ms=\(MetaWearBenchmark.format(errors.last ?? -1, 4))")
        print("backfill_duplicates=\(plan.collisions)")
        for line in BackfillGapBenchmark.run(minutes: gapMinutes, streamedReads: streamedReads, downSeconds: gapDown) { print(line) }
        for line in BackfillGapBenchmark.run(minutes: restartMinutes, streamedReads: streamedReads, fault: .restart,
                                             downSeconds: restartDown) { print(line) }
    }
}
