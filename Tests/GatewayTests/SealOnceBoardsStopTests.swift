import Buffer
import Foundation
import Gateway
import Testing

/// The shutdown's seal waits for the last samples of the boards recording into the session,
/// and then seals in the step that takes the last board's stop, on the pipeline's own thread.
/// Before, the pipeline only announced the board's stop and the recording service, woken on
/// the shared pool, called back into it to seal: hops that a loaded real-BlueZ VM made part of
/// the 0.4-0.45 s between the boards' stop and the seal's start (issue 18 §2.7, 2 s in all).
@Suite("The shutdown's seal, once the boards stop")
struct SealOnceBoardsStopTests {
    typealias Rig = SamplesAfterShutdownTests

    @Test func theStepThatTakesTheLastBoardsStopSealsWithEverySampleBeforeIt() async throws {
        try await Rig.withStreamingBoard { pipeline, logs in
            let sessionID = try await pipeline.startSession()
            await Rig.samples(pipeline)
            await pipeline.sealOnceBoardsStop()
            #expect(!(await pipeline.health.isShutDown), "sealed while the board still streamed into the session")
            // What the board delivered before its stop is still the session's.
            await Rig.samples(pipeline)
            await pipeline.handle(Rig.event(.state(.stopped)))
            #expect(await pipeline.health.isShutDown, "the board's stop was taken and the session is not sealed")
            #expect(logs.text.contains("the boards' last samples were in"), "\(logs.text)")
            await Rig.boardEventsEnd(pipeline)
            #expect(!logs.text.contains(Rig.warning), "\(logs.text)")
            #expect(logs.text.contains("session \(sessionID) stopped with 20 points sealed"), "\(logs.text)")
        }
    }

    /// Issue 18 §2.7: the board's last chunk, sealed as its stop detaches it, and the session's
    /// end are one SQLite commit (one fsync on a stop's path), counted in the buffer's WAL.
    @Test func theBoardsLastChunkAndTheSessionsEndAreOneCommit() async throws {
        try await Rig.withStreamingBoard { pipeline, logs, store in
            let sessionID = try await pipeline.startSession()
            await Rig.samples(pipeline)
            await pipeline.sealOnceBoardsStop()
            await Rig.samples(pipeline)
            let before = try WALCommits.count(store.path + "-wal")
            await pipeline.handle(Rig.event(.state(.stopped)))
            #expect(await pipeline.health.isShutDown)
            #expect(logs.text.contains("session \(sessionID) stopped with 20 points sealed"), "\(logs.text)")
            let commits = try WALCommits.count(store.path + "-wal") - before
            #expect(commits == 1, "\(commits) commits between the board's stop and the seal's end")
            #expect(try store.dataset(sessionID: sessionID).points.count == 20)
        }
    }

    /// On a starved gateway the board's stop can reach the pipeline before the seal's wait
    /// begins: asked for first (``RecordingPipeline/shutdownBegins()``), the seal still holds the
    /// board's last chunk for the end's commit.
    @Test func aBoardsStopTakenBeforeTheSealsWaitIsInTheEndsCommit() async throws {
        try await Rig.withStreamingBoard { pipeline, _, store in
            let sessionID = try await pipeline.startSession()
            await Rig.samples(pipeline)
            pipeline.shutdownBegins()
            let before = try WALCommits.count(store.path + "-wal")
            await pipeline.handle(Rig.event(.state(.stopped)))
            await pipeline.sealOnceBoardsStop()
            #expect(await pipeline.health.isShutDown)
            let commits = try WALCommits.count(store.path + "-wal") - before
            #expect(commits == 1, "\(commits) commits between the board's stop and the seal's end")
            #expect(try store.dataset(sessionID: sessionID).points.count == 10)
        }
    }

    @Test func withNoBoardRecordingItSealsAtOnce() async throws {
        try await Rig.withStreamingBoard { pipeline, _ in
            // Streaming between sessions: no session waits for the board's samples.
            await pipeline.sealOnceBoardsStop()
            #expect(await pipeline.health.isShutDown)
        }
    }

    @Test func theBoardsEventsEndingSealsToo() async throws {
        try await Rig.withStreamingBoard { pipeline, _ in
            _ = try await pipeline.startSession()
            await pipeline.sealOnceBoardsStop()
            #expect(!(await pipeline.health.isShutDown))
            await Rig.boardEventsEnd(pipeline)
            #expect(await pipeline.health.isShutDown)
        }
    }
}

/// Commits in an SQLite write-ahead log: its frames that end a transaction (a database size in
/// their header), up to the first frame left from before the log's last reset (other salts).
enum WALCommits {
    static func count(_ path: String) throws -> Int {
        let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
        func word(_ offset: Int) -> UInt32 { bytes[offset..<offset + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        guard bytes.count >= 32 else { return 0 }
        let pageSize = Int(word(8))
        var commits = 0
        var frame = 32
        while frame + 24 + pageSize <= bytes.count, word(frame + 8) == word(16), word(frame + 12) == word(20) {
            if word(frame + 4) != 0 { commits += 1 }
            frame += 24 + pageSize
        }
        return commits
    }
}
