import Basics
import Buffer
import Foundation
import MetaWear
import MetaWearBoardModel
import Recording
import Testing

/// Issue 18 §2.7: a SIGTERM while recording stops within 2 s, and each durable write on the
/// stop's path is an fsync, the slowest steps on a loaded gateway. At a shutdown each board's
/// stop detaches it (its last chunk sealed), then the session stops: what each board took
/// until its sensors went off is a stop gap its flash log fills later, kept in the store.
@Suite("Recording: the durable writes of a stop")
struct StopCommitsTests {
    /// Two boards that log to their flash stop (a shutdown): each detach seals the board's
    /// chunk without journaling its points first, and the session's end is stored with both
    /// boards' stop gaps in one transaction, not one for each gap and one for the end.
    @Test func aShutdownStopWritesEachChunkOnceAndTheEndWithItsGapsTogether() throws {
        let dir = NSTemporaryDirectory() + "mwgate-stopcommits-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let buffer = try BufferStore(path: BufferStore.path(inStateDirectory: dir),
                                     configuration: BufferStore.Configuration(userID: "00000000-0000-4000-8000-000000000001"))
        let store = CountingStore(buffer)
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        let controller = SessionController(store: store, timeBase: base)
        let boards = ["B0", "B1"]
        for board in boards {
            controller.expectBackfill(board: board, true)
            controller.attach(board: board, gyroRateHertz: 100)
        }
        let id = try controller.start(trigger: .controlAPI, now: 0)
        let now = stream(boards, into: controller, seconds: 3)

        for board in boards {
            store.writes.removeAll()
            controller.detach(board: board, now: now)
            #expect(store.writes == ["seal"], "the detach of \(board) wrote \(store.writes)")
        }
        store.writes.removeAll()
        let end = try controller.stop(trigger: .shutdown, now: now + 1_000_000)
        #expect(store.writes == ["endSession+0 chunks+2 stop gaps"], "the stop wrote \(store.writes)")

        #expect(end.pointCount > 500)
        #expect(try buffer.sessionsAwaitingSurvey() == [id])
        let gaps = try buffer.restartGaps(sessionIDs: [id])
        #expect(gaps.map(\.board).sorted() == boards && gaps.allSatisfy { $0.until != nil }, "kept gaps: \(gaps.map { ($0.board, $0.until) })")
    }

    /// A shutdown's seal holds the chunks its boards' stops seal (``SessionController/holdSealsForTheStop()``):
    /// the boards' last chunks, their stop gaps and the session's end are one commit, and every
    /// point is in the store after it.
    @Test func aShutdownSealsEveryBoardsLastChunkWithTheEndInOneCommit() throws {
        try withStore { buffer, store in
            let (controller, id, now) = try recording(into: store)
            controller.holdSealsForTheStop()
            for board in boards { controller.detach(board: board, now: now) }
            #expect(store.writes.isEmpty, "the boards' stops wrote \(store.writes)")
            let end = try controller.stop(trigger: .shutdown, now: now + 1_000_000)
            #expect(store.writes == ["endSession+2 chunks+2 stop gaps"], "the stop wrote \(store.writes)")

            #expect(end.pointCount > 500)
            let points = try buffer.dataset(sessionID: id).points
            #expect(points.count == end.pointCount)
            #expect(Set(points.map(\.board)) == Set(boards))
            #expect(try buffer.sessionsAwaitingSurvey() == [id])
            #expect(try buffer.restartGaps(sessionIDs: [id]).map(\.board).sorted() == boards)
        }
    }

    /// A stop with the boards linked (the control API's) seals their last chunks with the end in one commit.
    @Test func aStopSealsTheLinkedBoardsLastChunksWithTheEndInOneCommit() throws {
        try withStore { buffer, store in
            let (controller, id, now) = try recording(into: store)
            let end = try controller.stop(trigger: .controlAPI, now: now)
            #expect(store.writes == ["endSession+2 chunks+0 stop gaps"], "the stop wrote \(store.writes)")
            #expect(try buffer.dataset(sessionID: id).points.count == end.pointCount)
        }
    }

    /// A board's stop held its last chunk, and the other board is slow to stop (the seal waits
    /// up to 15 s for it): once a segment write is due, the held chunk is sealed on its own, so
    /// a kill -9 then loses no point of it, as while recording.
    @Test func aHeldChunkIsSealedWhenASegmentWriteIsDue() throws {
        let all = try everyPoint()
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let id = try {
            let store = CountingStore(try Self.openBuffer(dir))
            let (controller, id, now) = try recording(into: store)
            controller.holdSealsForTheStop()
            for board in boards { controller.detach(board: board, now: now) }
            // The stream's last segment write was 990 ms before the boards' stops (its ticks
            // every 10 ms from 10 ms on write at 10, 1010 and 2010 ms).
            controller.tick(now: now)
            #expect(store.writes.isEmpty, "no segment write due yet: \(store.writes)")
            controller.tick(now: now + 1_000_000_000)
            #expect(store.writes == ["seal", "seal"], "a second after the boards' stops: \(store.writes)")
            return id
        }()
        // Killed here: recovery finds every point.
        let buffer = try Self.openBuffer(dir)
        #expect(try buffer.recoverInterruptedSessions() == [id])
        #expect(try buffer.dataset(sessionID: id).points.count == all)
    }

    /// The end's one commit fails, and so does the seal of B0's last chunk on its own (a full or
    /// failing disk), which leaves it in memory for a retry: its points since the last segment
    /// write were in no segment, and the end dropped the session's segments and left it out of
    /// recovery, so a gateway ended before the retry lost them (the shutdown's case: the
    /// process exits after the stop). Now the session stays open until the chunk is sealed, its
    /// points journaled: killed then, recovery finds every point; kept running, the retry seals
    /// the chunk and stores the end.
    @Test("the end's commit and a held chunk's own seal fail: nothing is lost, killed or kept running",
          arguments: ["killed after the stop", "the store heals"])
    func aRefusedHeldChunkIsJournaledAndTheEndWaitsForIt(then: String) throws {
        let all = try everyPoint()
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = CountingStore(try Self.openBuffer(dir))
        let (controller, id, now) = try recording(into: store)
        controller.holdSealsForTheStop()
        for board in boards { controller.detach(board: board, now: now) }
        store.refusesTheEndsCommit = true
        store.refusedBoards = ["B0"]
        let end = try controller.stop(trigger: .shutdown, now: now + 1_000_000)
        #expect(end.pointCount == all)
        #expect(controller.hasFailedSeals, "B0's chunk waits for a retry")
        if then == "the store heals" {
            store.refusedBoards = []
            controller.tick(now: now + 2_000_000_000)
            #expect(!controller.hasFailedSeals, "the chunk and the end are stored: \(controller.lastStoreError ?? "")")
            #expect(try store.store.sessionsAwaitingSurvey() == [id])
            #expect(try store.store.dataset(sessionID: id).points.count == all)
            return
        }
        // Killed here: recovery finds every point.
        let buffer = try Self.openBuffer(dir)
        #expect(try buffer.recoverInterruptedSessions() == [id])
        #expect(try buffer.dataset(sessionID: id).points.count == all)
    }

    private let boards = ["B0", "B1"]

    private static func openBuffer(_ dir: String) throws -> BufferStore {
        try BufferStore(path: BufferStore.path(inStateDirectory: dir),
                        configuration: BufferStore.Configuration(userID: "00000000-0000-4000-8000-000000000001"))
    }

    /// A new directory for a buffer (the caller removes it).
    private static func directory() throws -> String {
        let dir = NSTemporaryDirectory() + "mwgate-stopcommits-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir
    }

    /// Every point the session of ``recording(into:)`` took, from a stop of the same recording.
    private func everyPoint() throws -> Int {
        try withStore { _, store in
            let (controller, _, now) = try recording(into: store)
            return try controller.stop(trigger: .controlAPI, now: now).pointCount
        }
    }

    /// Runs `body` with a buffer in a new directory and the store counting its writes.
    private func withStore<T>(_ body: (BufferStore, CountingStore) throws -> T) throws -> T {
        let dir = try Self.directory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let buffer = try Self.openBuffer(dir)
        return try body(buffer, CountingStore(buffer))
    }

    /// A session of 3 s from two boards that log to their flash; the store's writes so far forgotten.
    private func recording(into store: CountingStore) throws -> (SessionController, String, Int64) {
        let base = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)
        let controller = SessionController(store: store, timeBase: base)
        for board in boards {
            controller.expectBackfill(board: board, true)
            controller.attach(board: board, gyroRateHertz: 100)
        }
        let id = try controller.start(trigger: .controlAPI, now: 0)
        let now = stream(boards, into: controller, seconds: 3)
        store.writes.removeAll()
        return (controller, id, now)
    }

    /// Streams `seconds` of 100 Hz gyro from a board model per name (no GNSS: points without a location).
    private func stream(_ boards: [String], into controller: SessionController, seconds: Int64) -> Int64 {
        var models = boards.indices.map { index in
            var board = SimulatedBoard(profile: .metaMotionR, seed: UInt32(index + 1))
            for packet in Commands.startGyro(GyroConfiguration(rate: .hz100, range: .dps2000), mode: .single, chip: .bmi160) {
                _ = board.write(packet.bytes)
            }
            return board
        }
        let decoder = NotificationDecoder(chip: .bmi160, gyroRange: .dps2000, accelerometerRange: .g4)
        var now: Int64 = 0
        while now < seconds * 1_000_000_000 {
            now += 10_000_000
            for index in models.indices {
                for notification in models[index].advance(to: UInt64(now)) {
                    controller.ingest(board: boards[index], event: decoder.decode(notification.bytes), receivedAt: now)
                }
            }
            controller.tick(now: now)
        }
        return now
    }
}

/// The buffer, naming each durable write it is asked for (each is one transaction).
private final class CountingStore: RecordingStore {
    let store: BufferStore
    var writes: [String] = []
    /// The end's one transaction with the stop's chunks fails (a full or failing disk).
    var refusesTheEndsCommit = false
    /// Boards whose chunks the store refuses to seal.
    var refusedBoards: Set<String> = []
    struct Refused: Error {}

    init(_ store: BufferStore) { self.store = store }

    func beginSession(_ start: SessionStart) throws {
        writes.append("beginSession")
        try store.beginSession(start)
    }
    func append(_ segments: [OpenSegment]) throws {
        writes.append("append")
        try store.append(segments)
    }
    func seal(_ chunk: ChunkToSeal) throws -> String {
        writes.append("seal")
        if refusedBoards.contains(chunk.board) { throw Refused() }
        return try store.seal(chunk)
    }
    func endSession(_ end: SessionEnd) throws {
        writes.append("endSession")
        try store.endSession(end)
    }
    func endSession(_ end: SessionEnd, keepingStopGaps gaps: [StopGapBound]) throws {
        writes.append("endSession+\(gaps.count) stop gaps")
        try store.endSession(end, keepingStopGaps: gaps)
    }
    func endSession(_ end: SessionEnd, sealing chunks: [ChunkToSeal], keepingStopGaps gaps: [StopGapBound]) throws -> [String] {
        writes.append("endSession+\(chunks.count) chunks+\(gaps.count) stop gaps")
        if refusesTheEndsCommit { throw Refused() }
        return try store.endSession(end, sealing: chunks, keepingStopGaps: gaps)
    }
    func submitSurvey(sessionID: String, survey: HazardSurvey, submittedAt: Date) throws -> RecordsDocument {
        try store.submitSurvey(sessionID: sessionID, survey: survey, submittedAt: submittedAt)
    }
    func sessionsAwaitingSurvey() throws -> [String] { try store.sessionsAwaitingSurvey() }
    func restartGapBounded(sessionID: String, board: String, until: Double) throws {
        writes.append("restartGapBounded")
        try store.restartGapBounded(sessionID: sessionID, board: board, until: until)
    }
    func restartGapKept(_ gap: StopGapBound) throws {
        writes.append("restartGapKept")
        try store.restartGapKept(gap)
    }
    func restartGapClosed(sessionID: String, board: String) throws {
        writes.append("restartGapClosed")
        try store.restartGapClosed(sessionID: sessionID, board: board)
    }
    func keepLoggedRest(_ rest: KeptLoggedRest) throws {
        writes.append("keepLoggedRest")
        try store.keepLoggedRest(rest)
    }
    func loggedRestClosed(sessionID: String, board: String) throws {
        writes.append("loggedRestClosed")
        try store.loggedRestClosed(sessionID: sessionID, board: board)
    }
}
