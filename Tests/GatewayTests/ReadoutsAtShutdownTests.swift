import Boards
import Gateway
import MetaWear
import Testing

/// A graceful shutdown's seal does not wait on a flash-log readout (issue 18 §2.7: exit within
/// 2 s): a page that reaches the pipeline once the seal is asked for is left on the board, not
/// placed, stored or answered (no confirm could reach a stopping board anyway), so the boards'
/// last samples and the seal no longer queue behind its placement and forced commit. Shown by
/// what the pipeline does, not by time: a page before the seal is answered, the one after it
/// gets no answer, and the journal says what was left. Without the change the second page was
/// placed and confirmed in the seal's wait (checked: the test fails).
/// `ReadoutAtShutdownEndToEndTests` shows the next run filling the gap such a page was for.
@Suite("Flash-log readouts at a shutdown")
struct ReadoutsAtShutdownTests {
    typealias Rig = SamplesAfterShutdownTests

    /// One page of the board's readout: `count` gyro samples of boot 1 from `tick`.
    static func page(from tick: UInt32, count: Int) -> BoardEvent.Kind {
        let samples = (0..<count).map { LoggedSample(resetUID: 1, tick: tick + UInt32($0) * 10, raw: RawVector(x: Int16($0), y: 0, z: 0)) }
        var download = FlashLogDownload(gyro: samples, clock: nil, clockReadAt: nil, duplicatesDropped: 0, orphanedEntries: 0)
        download.complete = false
        return .flashLogDownloaded(download)
    }

    @Test func aPageThatComesOnceTheSealIsAskedForIsLeftOnTheBoardUnanswered() async throws {
        try await Rig.withStreamingBoard { pipeline, logs in
            let board = Rig.board.rawValue
            let sessionID = try await pipeline.startSession()
            await Rig.samples(pipeline)
            var answers = pipeline.backfillDemand.makeAsyncIterator()
            // While the session records a page is stored and confirmed: the board may delete it.
            await pipeline.handle(Rig.event(Self.page(from: 1000, count: 12)))
            #expect(await answers.next() == .confirmPage(board))
            await pipeline.sealOnceBoardsStop()
            // The board delivered another page before its stop: the seal does not place it.
            await pipeline.handle(Rig.event(Self.page(from: 1120, count: 12)))
            await Rig.samples(pipeline)
            await pipeline.handle(Rig.event(.state(.stopped)))
            #expect(await pipeline.health.isShutDown, "the board's stop was taken and the session is not sealed")
            var later: [BackfillDemand] = []
            while let demand = await answers.next() { later.append(demand) }
            #expect(!later.contains(.confirmPage(board)) && !later.contains(.declinePage(board)),
                    "the page after the seal began is neither confirmed nor declined: \(later)")
            #expect(logs.text.contains("session \(sessionID) stopped with 20 points sealed"), "\(logs.text)")
            #expect(logs.text.contains("board \(board)'s flash-log readout left unanswered, 1 page(s) with 12 gyro samples"),
                    "\(logs.text)")
        }
    }
}
