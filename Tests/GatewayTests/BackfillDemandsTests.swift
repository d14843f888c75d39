import BlueZ
import Boards
import Buffer
import Foundation
@testable import Gateway
import GatewayTestSupport
import MetaWear
import Testing
import TestSupport

/// The pipeline's demands on the boards' flash logs are never dropped (issue 21): a burst is
/// kept per board, one of each kind, instead of losing the oldest.
@Suite("Flash log demands")
struct BackfillDemandsTests {
    static let first = BluetoothAddress("C4:5A:2B:00:00:01")!
    static let second = BluetoothAddress("C4:5A:2B:00:00:02")!

    /// A pipeline of `boards` on a fresh buffer, logging into `logs`.
    static func withPipeline(boards: [BluetoothAddress], logs: LogCapture = LogCapture(),
                             _ body: (RecordingPipeline) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "mwgate-flash-log-pipeline-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try BufferStore(path: BufferStore.path(inStateDirectory: directory),
                                    configuration: .init(userID: "00000000-0000-4000-8000-000000000001"))
        let settings = GatewaySettings(boards: .addresses(boards), streaming: SimulatedGatewayRig.streaming, stateDirectory: directory)
        try await body(RecordingPipeline(settings: settings, store: store, logger: logs.logger()))
    }

    /// A page of `board`'s flash-log readout, as its board session reports it.
    static func pageEvent(_ board: BluetoothAddress, _ download: FlashLogDownload) -> BoardEvent {
        BoardEvent(board: board, kind: .flashLogDownloaded(download), receivedAt: .now, wallClock: Date())
    }

    /// Every demand waiting once the stream is finished, in the order the reader gets them.
    static func drain(_ demands: BackfillDemands) async -> [BackfillDemand] {
        var taken: [BackfillDemand] = []
        for await demand in demands { taken.append(demand) }
        return taken
    }

    /// One board's page confirm, then 70 pages of another board confirmed, before the boards'
    /// side reads any (a reader held up by a slow board operation): the first board's confirm
    /// is still delivered. Its stream kept the newest 64 and dropped it, and the first board's
    /// readout then waited for its confirm for the rest of the link.
    @Test func aBurstOfAnotherBoardsPagesKeepsTheFirstBoardsConfirm() async throws {
        var download = FlashLogDownload(gyro: [], clock: nil, clockReadAt: nil, duplicatesDropped: 0, orphanedEntries: 0)
        download.complete = false
        try await Self.withPipeline(boards: [Self.first, Self.second]) { pipeline in
            await pipeline.handle(Self.pageEvent(Self.first, download))
            for _ in 0..<70 { await pipeline.handle(Self.pageEvent(Self.second, download)) }
            await pipeline.shutdown()
            let taken = await Self.drain(pipeline.backfillDemand)
            #expect(taken.contains(.confirmPage(Self.first.rawValue)), "the first board's page is confirmed: \(taken.count) demands")
            #expect(taken.contains(.confirmPage(Self.second.rawValue)))
        }
    }

    /// A page the store refused is declined before the download the recorder asked with it
    /// (to read the page again): the board's readout must end unconfirmed first, since a board
    /// session takes no download while its board waits for a page's answer.
    @Test func aDeclinedPageIsAnsweredBeforeTheDownloadThatReadsItAgain() async {
        let demands = BackfillDemands()
        demands.send(.download("B"))
        demands.send(.declinePage("B"))
        demands.finish()
        #expect(await Self.drain(demands) == [.declinePage("B"), .download("B")])
    }

    /// A long burst over four boards (marks, trims, downloads, page confirms, a finish) while
    /// nothing reads: every board gets each kind it was asked for, once, its newest mark, its
    /// trim before that mark (a trim after a newer mark would drop entries not stored yet), and
    /// no more than one of each kind waits (bounded by the boards).
    @Test func aBurstIsKeptPerBoardOneOfEachKind() async {
        let demands = BackfillDemands()
        let boards = (1...4).map { "C4:5A:2B:00:00:0\($0)" }
        let start = ContinuousClock.now
        var newestMark: [String: ContinuousClock.Instant] = [:]
        for round in 0..<100 {
            for board in boards {
                let askedAt = start.advanced(by: .milliseconds(round))
                demands.send(.markFlashLog(board, askedAt: askedAt))
                newestMark[board] = askedAt
                demands.send(.trimFlashLog(board))
                if round % 10 == 0 { demands.send(.download(board)) }
                if round % 7 == 0 { demands.send(.confirmPage(board)) }
            }
        }
        demands.send(.finishFlashLog(boards[0]))
        demands.finish()
        demands.send(.download("late"))
        let taken = await Self.drain(demands)
        #expect(taken.count == 4 * 4 + 1, "one of each kind asked for a board: \(taken)")
        for board in boards {
            let mine = taken.filter { $0.board == board }
            #expect(mine.contains(.download(board)) && mine.contains(.confirmPage(board)))
            #expect(mine.first == .confirmPage(board), "the page confirm first: the board waits on it")
            let trim = mine.firstIndex(of: .trimFlashLog(board)), mark = mine.firstIndex(of: .markFlashLog(board, askedAt: newestMark[board]!))
            #expect(trim != nil && mark != nil && trim! < mark!, "the trim, then the newest mark: \(mine)")
        }
        #expect(taken.contains(.finishFlashLog(boards[0])))
        #expect(!taken.contains(.download("late")), "nothing after the end")
    }
}
