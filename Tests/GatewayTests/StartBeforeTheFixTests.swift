import Basics
import Buffer
import Foundation
import GNSS
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// A session started before the gateway's first GNSS fix while the system clock is not
/// synchronised (a board computer without a battery-backed clock; the soak's system clock runs
/// 116 days ahead of its NMEA replay). Its samples are stamped on the monotonic clock and
/// converted with the GNSS correction once it is known, the first fix's for those before it;
/// the session's start is a time of the same clock and is converted the same way. Before, the
/// start kept the uncorrected system clock: soak seed 2113's session began 116 days after it
/// ended, the day of its history and its records document's `start` on the wrong clock, and its
/// time source said "unsynchronised" though every time in it was GNSS-corrected.
@Suite("A session started before the first fix")
struct StartBeforeTheFixTests {
    /// The system clock's error: 116 days ahead of UTC.
    static let clockAhead = 116.0 * 86_400
    /// UTC at the monotonic clock's 0 (the NMEA replay's time).
    static let utc = 1_785_909_000.0

    @Test("its start is on its points' clock, before its first point, and its time source is the correction's")
    func startIsCorrectedWithItsSamples() throws {
        let run = try record(killedBeforeTheStop: false)
        print("start before the fix: started \(run.startedAt), first point \(run.firstPoint), last \(run.lastPoint), "
              + "ended \(run.endedAt.map { "\($0)" } ?? "-"), source \(run.timeSource ?? "-"), days \(run.days)")
        #expect(run.startedAt <= run.firstPoint, "the session starts before its first point")
        #expect(run.firstPoint - run.startedAt < 2_000, "and by the 1.5 s before the board streamed: \(run.firstPoint - run.startedAt) ms")
        #expect((run.endedAt ?? 0) >= run.lastPoint, "it ends after its last point")
        #expect(run.timeSource == TimeSource.gnssCorrected.rawValue, "its times are GNSS-corrected: \(run.timeSource ?? "-")")
        #expect(run.recordStart == Int64(run.startedAt.rounded()), "the records document starts where the session does")
        #expect(run.days == [run.firstPointDay], "history lists it on its day: \(run.days)")
    }

    /// Killed before the stop: recovery ends the session at its last stored point, so the start
    /// the store kept is all there is of it.
    @Test("the same, the gateway killed before the stop: the stored start is the corrected one")
    func startIsCorrectedBeforeAKill() throws {
        let run = try record(killedBeforeTheStop: true)
        print("start before the fix, killed: started \(run.startedAt), first point \(run.firstPoint), ended \(run.endedAt ?? -1)")
        #expect(run.startedAt <= run.firstPoint, "the session starts before its first point")
        #expect(run.firstPoint - run.startedAt < 2_000, "and by the 1.5 s before the board streamed: \(run.firstPoint - run.startedAt) ms")
        #expect((run.endedAt ?? 0) >= run.startedAt, "it ends after it starts")
    }

    struct Run {
        var startedAt: Double
        var endedAt: Double?
        var firstPoint: Double
        var lastPoint: Double
        var timeSource: String?
        var recordStart: Int64?
        var days: [String]
        /// The day of its first point.
        var firstPointDay: String
        /// Every point's time in the order stored (its chunks in seal order).
        var stored: [Double] = []
        /// The session's CSV export's last elapsed time, seconds.
        var exportedSeconds: Double = .nan
        /// The walking time history gives the session's day.
        var walkingMinutes: Double = .nan
    }

    /// A session starts at 0 on a system clock `clockAhead` seconds ahead (116 days unless
    /// told); the first fix comes at `firstFix` (100 ms unless told), one a second after it (as
    /// in the soak: started +95.558 s, fix +95.659 s); a MetaMotion R streams its 100 Hz gyro
    /// into it from 1.5 s; the session stops (or the gateway dies) at `end` (5 s unless told).
    /// When told, the system clock is stepped by `step` seconds at `stepAt` (and becomes
    /// synchronised with it); the clocks are read before each fix and at the step, as the
    /// pipeline reads them (``ClockStepTests``).
    func record(killedBeforeTheStop: Bool, clockAhead: Double = StartBeforeTheFixTests.clockAhead, firstFix: Int64 = 100_000_000,
                end: Int64 = 5_000_000_000, step: Double = 0, stepAt: Int64 = .max, synchronisedByTheStep: Bool = false) throws -> Run {
        print("StartBeforeTheFixTests seed 2113, clock \(clockAhead) s ahead, first fix at \(firstFix) ns, end \(end) ns, "
              + "stepped by \(step) s at \(stepAt) ns, synchronised by it \(synchronisedByTheStep)")
        let buffer = try RestartableBuffer(label: "start-before-fix")
        defer { buffer.remove() }
        var store = try buffer.open()
        let utc = Self.utc
        let wall = { (now: Int64) in utc + clockAhead + Double(now) / 1e9 + (now >= stepAt ? step : 0) }
        let base = TimeBase(wallNanoseconds: Int64(wall(0) * 1e9), monotonicNanoseconds: 0, systemClockSynchronised: false)
        let controller = SessionController(store: store, timeBase: base)
        var (rng, now, trimmer) = (SeededRandom(seed: 2113), Int64(0), BoardLogTrimmer())
        var board = SimulatedBoard(profile: .metaMotionR, seed: 9)
        board.tickAtPowerOn = 333_333
        board.flashLog.pageEntries = 128
        var rig = FlashLogReadoutRig.loggingGyro(of: board)
        let session = try controller.start(trigger: .controlAPI, now: 0)
        var (nextFix, linked, stepped) = (firstFix, false, false)
        let streamsAt: Int64 = 1_500_000_000
        while now < end {
            now += Int64(Double.random(in: 7.5e6...30e6, using: &rng))
            if !linked, now >= streamsAt {
                // The board's stream begins 1.5 s after the start (its link and handshake).
                linked = true
                _ = rig.board.advance(to: UInt64(now))
                controller.expectBackfill(board: "B", true)
                rig.links(gyro: FlashLogReadoutRig.gyro100, into: controller, board: "B", trimmer: &trimmer)
            }
            if !stepped, now >= stepAt {
                stepped = true
                controller.readWallClock(wallNanoseconds: Int64(wall(now) * 1e9), monotonicNanoseconds: now)
                if synchronisedByTheStep { controller.setSystemClockSynchronised(true) }
            }
            while nextFix <= now {
                // Reported 80 ms after its epoch: the offset the report gives is 80 ms short.
                let second = Double(nextFix) / 1e9
                let arrival = wall(nextFix)
                controller.readWallClock(wallNanoseconds: Int64(arrival * 1e9), monotonicNanoseconds: nextFix)
                controller.ingest(fix: GNSSFix(time: Date(timeIntervalSince1970: utc + second - 0.08),
                                               timeOfDay: NMEATimeOfDay(microseconds: 0), mode: .threeD, latitude: 47.66,
                                               longitude: -122.33, hdop: 0.9, systemClockOffset: utc + second - 0.08 - arrival,
                                               arrival: Date(timeIntervalSince1970: arrival)), now: nextFix)
                nextFix += 1_000_000_000
            }
            guard linked else { continue }
            rig.stream(to: now, linkUp: true, into: controller, board: "B", decoder: FlashLogReadoutRig.bmi160Decoder, trimmer: &trimmer)
        }
        if killedBeforeTheStop {
            // kill -9: the store is dropped and opened again, and recovery ends the session.
            store = try buffer.open()
            #expect(try store.recoverInterruptedSessions() == [session])
        } else {
            try controller.stop(trigger: .controlAPI, now: now)
        }
        _ = try? store.submitSurvey(sessionID: session, survey: .noHazard, submittedAt: Date(timeIntervalSince1970: utc + clockAhead + 10))
        return try Run(of: try store.dataset(sessionID: session), in: store)
    }
}

extension StartBeforeTheFixTests.Run {
    /// What the store says of a session's times: its dataset, records document, export and history.
    init(of dataset: SessionDataset, in store: BufferStore) throws {
        let times = dataset.points.map(\.point.gyroscope.timestamp)
        let stored = try dataset.chunkNames.flatMap { try store.realtimeDocument(name: $0)?.points.map(\.gyroscope.timestamp) ?? [] }
        let csv = SessionExporter.render(dataset, format: .csv).split(separator: "\n").dropFirst()
        self.init(startedAt: dataset.startedAt, endedAt: dataset.endedAt, firstPoint: times.min() ?? .nan, lastPoint: times.max() ?? .nan,
                  timeSource: dataset.timeSource, recordStart: try store.recordsDocument(sessionID: dataset.sessionID)?.start,
                  days: try store.history().map(\.day), firstPointDay: store.day(ofEpochMilliseconds: times.min() ?? .nan), stored: stored,
                  exportedSeconds: csv.last.flatMap { Double($0.split(separator: ",")[2]) } ?? .nan,
                  walkingMinutes: try store.history().first?.walkingMinutes ?? .nan)
    }
}
