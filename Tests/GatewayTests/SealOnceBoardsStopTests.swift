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
