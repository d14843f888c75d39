import Buffer
@testable import BlueZSimulator
import Foundation
import Gateway
import Recording
import Testing
import TestSupport

/// A flash-log page the store could not take is read again on the same link (issue 21, 5.):
/// the recorder declines it, the board keeps it (it deletes a page only on its confirm), the
/// readout ends there and the recorder's next download reads the page again, while the board
/// stays linked. A nearly full SD card, the usual cause of a refused write, goes with a board
/// that stays linked for hours: waiting for its next link, the refill might never come.
@Suite("Flash log: a declined page is read again on the same link")
struct DeclinedPageEndToEndTests {
    /// SQL that makes the buffer refuse every chunk of `board` in a session no longer
    /// recording (a stop gap's correction chunks), as a full disk refuses a write.
    static func refuseCorrections(of board: String) -> String {
        """
        CREATE TRIGGER refuse_corrections BEFORE INSERT ON chunks
        WHEN NEW.board = '\(board)' AND (SELECT state FROM sessions WHERE id = NEW.session_id) <> 'recording'
        BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
        """
    }

    /// A 3 s stall whose log is still being read at the session's stop (the gap is kept and
    /// filled with correction chunks): the store refuses the first correction chunk, then takes
    /// them again. Every sample is in the session once, in order, read on the link the page
    /// was refused on. (The stall itself costs board 0 its link: the stream watchdog's.)
    @Test func aPageTheStoreRefusedIsReadAgainOnTheSameLink() async throws {
        try await BackfillEndToEndTests.recording { h, pipeline, sessionID in
            let board = h.addresses[0].rawValue
            let buffer = BufferStore.path(inStateDirectory: h.stateDirectory.path)
            func sql(_ statement: String) throws {
                _ = try h.bus.runBlocking("/usr/bin/sqlite3", ["-cmd", ".timeout 10000", buffer, statement])
            }
            try await h.eventually("samples before the stall") { s in s.boards.allSatisfy { $0.gyroSamplesInSession >= 300 } }
            try sql(Self.refuseCorrections(of: board))
            let readoutsBefore = try await h.simulator.readoutsAsked(0)
            // A readout slow enough to be under way at the stop, whatever the log holds.
            try await h.simulator.setReadoutRate(0, notificationsPerSecond: 60)
            try await h.simulator.stall(0, seconds: 3)
            try await Task.sleep(for: .seconds(4))
            let backfilledAtStop = await pipeline.status.boards.first { $0.address == board }?.gyroSamplesBackfilled ?? 0
            try await pipeline.stopSession()
            let refused = try await h.eventually("the store refused a correction chunk", timeout: .seconds(90)) { s in
                s.problems.contains { $0.area == "buffer" && $0.message.contains("correction chunk") }
            }
            let connections = try await h.simulator.stats(0).connections
            try sql("DROP TRIGGER refuse_corrections")
            try await h.simulator.setReadoutRate(0, notificationsPerSecond: 200)
            let record = try await pipeline.submitSurvey(.noHazard, sessionID: sessionID, waitingForBackfillAtMost: .seconds(90))
            let points = try BackfillEndToEndTests.expectStopGapFilled(h, sessionID: sessionID, board: board, record: record)
            let readouts = try await h.simulator.readoutsAsked(0) - readoutsBefore
            let reconnects = try await h.simulator.stats(0).connections - connections
            print("declined page: \(points.count) points, \(points.filter(\.backfilled).count) backfilled, readouts since the stall "
                  + "\(readouts), new links since the refusal \(reconnects), store errors \(refused.problems.filter { $0.area == "buffer" }.count)")
            #expect(backfilledAtStop == 0, "the download was still running at the stop")
            #expect(reconnects == 0, "board 0 kept the link its page was refused on")
            #expect(readouts >= 2, "the refused page was read again by a second readout: \(readouts) readout(s)")
        }
    }
}

extension BlueZSimulator {
    /// Readouts (`0B 06`) board `index` was asked for so far.
    func readoutsAsked(_ index: Int) throws -> Int {
        try device(index).model.commandLog.filter { $0.starts(with: [0x0B, 0x06]) }.count
    }
}
