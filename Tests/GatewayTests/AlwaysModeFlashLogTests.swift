import Buffer
import Foundation
import MetaWear
import MetaWearBoardModel
@testable import Recording
import Testing

/// An always-mode gateway has no "between sessions", where a board's flash log was trimmed, and
/// a session never pauses logging for a trim (P15): before the reads of the log's streamed part
/// its log only grew, filled the flash after hours and then overwrote its oldest entries, and
/// from then on a gap could no longer be filled. A board model logs its gyro while it streams
/// into an always-mode session on a real buffer (SQLite and segment journal) for a simulated
/// hour, its flash small enough to fill in under 7 minutes; the recorder's reads of the
/// streamed part run as `BoardSession.readStreamedFlashLog(leaving:)` does, each page handed to
/// the recorder (and confirmed, deleting it on the board) once the recorder lets it.
@Suite("Flash log: an always-mode board's log stays short")
struct AlwaysModeFlashLogTests {
    static let gyroHertz = 25.0
    static let hours = 1.0
    /// The board's flash: 400 s of 25 Hz gyro (two entries a sample).
    static let capacity = 20_000

    @Test func anAlwaysModeBoardsLogStaysShortForHoursAndLosesNothing() throws {
        let dir = NSTemporaryDirectory() + "mwgate-always-log-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try BufferStore(path: BufferStore.path(inStateDirectory: dir),
                                    configuration: BufferStore.Configuration(userID: "00000000-0000-4000-8000-000000000001"))
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        var configuration = SessionController.Configuration()
        configuration.alwaysMode = true
        let controller = SessionController(store: store, timeBase: base, configuration: configuration)
        var simulated = SimulatedBoard(profile: .metaMotionR, seed: 9)
        simulated.flashLog.capacity = Self.capacity
        simulated.flashLog.pageEntries = 128
        var rig = FlashLogReadoutRig.loggingGyro(of: simulated)
        rig.readsStreamedPartAt = Self.gyroHertz
        rig.handshake(gyro: GyroConfiguration(rate: .hz25, range: .dps2000), chip: .bmi160)
        controller.expectBackfill(board: "B", true)
        controller.attach(board: "B", gyroRateHertz: Self.gyroHertz)
        let decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps2000, accelerometerRange: .g4)
        var trimmer = BoardLogTrimmer()
        var now: Int64 = 0
        var peak = 0
        while now < Int64(Self.hours * 3600e9) {
            now += 50_000_000
            rig.stream(to: now, linkUp: true, into: controller, board: "B", decoder: decoder, trimmer: &trimmer)
            peak = max(peak, rig.board.flashLog.storedCount)
        }
        let taken = Int(rig.board.flashLog.written / 2)
        guard case .recording(let sessionID) = controller.state else {
            Issue.record("the always-mode session started with the stream")
            return
        }
        try controller.stop(trigger: .always, now: now)
        let points = try store.dataset(sessionID: sessionID).points.filter { $0.board == "B" }.map(\.point)
        #expect(controller.lastStoreError == nil)
        let indices = points.map(FlashLogPageSafetyTests.index)
        let steps = zip(indices, indices.dropFirst()).filter { ($1 - $0 + 65536) % 65536 != 1 }
        print("always mode, \(Self.hours) h at \(Self.gyroHertz) Hz: \(rig.streamedReads) reads of the streamed part, "
              + "\(rig.pagesStored) pages stored, log at most \(peak) entries (flash \(Self.capacity)), "
              + "\(rig.board.flashLog.overwritten) overwritten, \(points.count) stored of \(taken) taken")
        #expect(rig.board.flashLog.overwritten == 0 && rig.board.flashLog.refusedWhenFull == 0, "the flash never filled")
        #expect(peak <= Self.healthyLogBound, "the log held at most \(peak) entries")
        #expect(rig.streamedReads >= Int(Self.hours * 3600 / 10) - 5, "read every 10 s: \(rig.streamedReads)")
        #expect(steps.isEmpty, "every sample stored once, in order: \(steps.count) breaks, first \(steps.prefix(3))")
        #expect(indices.first == 0 && points.count == taken, "every sample taken is stored: \(points.count) of \(taken)")
        #expect(zip(points, points.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp }, "time order")
    }

    /// Most entries the log holds while the stream is healthy at 25 Hz (50 entries a second):
    /// the 375 a read leaves (6 s, a quarter over), the 500 of the 10 s between reads, and 2 s
    /// of entries for the tick a read starts on and its first page.
    static let healthyLogBound = 375 + 500 + 100
}
