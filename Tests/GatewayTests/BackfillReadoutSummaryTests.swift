import Boards
import Buffer
import Foundation
@testable import Gateway
import GatewayTestSupport
import MetaWear
import Recording
import Testing
import TestSupport

/// The journal line at the end of a flash-log readout says what the whole readout did.
@Suite("Flash log readout summary")
struct BackfillReadoutSummaryTests {
    static func page(samples: Int, complete: Bool) -> FlashLogDownload {
        let gyro = (0..<samples).map { LoggedSample(resetUID: 1, tick: UInt32($0 * 10), raw: RawVector(x: Int16($0), y: 0, z: 0)) }
        var download = FlashLogDownload(gyro: gyro, clock: nil, clockReadAt: nil, duplicatesDropped: 0, orphanedEntries: 0)
        download.complete = complete
        return download
    }

    /// A readout's pages of 128 samples, then its empty last page: the line counts every page's
    /// samples (it said "0 samples downloaded", from the last page alone).
    @Test func theLineCountsEveryPagesSamples() async throws {
        let board = BackfillDemandsTests.first
        let logs = LogCapture()
        try await BackfillDemandsTests.withPipeline(boards: [board], logs: logs) { pipeline in
            for complete in [false, false, false, true] {
                await pipeline.handle(BackfillDemandsTests.pageEvent(board, Self.page(samples: complete ? 0 : 128, complete: complete)))
            }
            await pipeline.shutdown()
        }
        #expect(logs.text.contains("board \(board.rawValue) flash log: 384 samples downloaded, 0 filled a gap, 0 still missing"),
                "\(logs.text)")
    }

    /// The pages of a restart's gap fill it page by page and the last fills nothing: the line
    /// counts every page's fills, into the interrupted session.
    @Test func theLineCountsEveryPagesFills() {
        var summary = BackfillReadoutSummary()
        for (samples, filled) in [(128, 100), (128, 28), (0, 0)] {
            var outcome = SessionController.BackfillOutcome()
            outcome.durable = true
            outcome.filled = filled
            outcome.filledIntoEarlierSessions = filled
            summary.add(Self.page(samples: samples, complete: samples == 0), outcome)
        }
        #expect(summary.text.hasPrefix("256 samples downloaded, 128 filled a gap (128 into an earlier session), 0 still missing,"),
                "\(summary.text)")
    }

    /// A readout that ended before its gap did: the line says the gap stays open and the log
    /// is read again, not only "0 filled" as if the gap were given up.
    @Test func aReadoutReadAgainSaysSo() {
        var summary = BackfillReadoutSummary()
        var outcome = SessionController.BackfillOutcome()
        outcome.durable = true
        outcome.readAgain = true
        summary.add(Self.page(samples: 250, complete: true), outcome)
        #expect(summary.text.hasPrefix("250 samples downloaded, 0 filled a gap, 0 still missing (a gap it ended short of stays open: "
                                       + "the log is read again),"), "\(summary.text)")
    }

    /// The store refuses a page: it is declined, and the next readout reads it again. The
    /// line counts its 128 samples once (it said 384: the page at each reading).
    @Test func aPageReadAgainAfterADeclineCountsOnce() {
        var summary = BackfillReadoutSummary()
        for durable in [true, false, true] {
            var outcome = SessionController.BackfillOutcome()
            outcome.durable = durable
            summary.add(Self.page(samples: 128, complete: false), outcome)
        }
        var last = SessionController.BackfillOutcome()
        last.durable = true
        summary.add(Self.page(samples: 0, complete: true), last)
        #expect(summary.text.hasPrefix("256 samples downloaded,"), "\(summary.text)")
    }
}
