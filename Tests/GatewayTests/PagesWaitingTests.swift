import BlueZ
import Boards
import Buffer
import Foundation
@testable import Gateway
import MetaWear
import Synchronization
import Testing
import TestSupport

/// A page of a board's flash-log readout is placed only once the gap it fills has an end in the
/// recorder (issue 21). A board that comes back on a new link while points wait for its log
/// (a drop during a hold) has its log read at once, but the new link's first point reaches the
/// recorder only after the timestamper's lookahead and the fix wait (about 2 s): a page placed
/// before found the new gap past the hold's end ("outside the gap") and was confirmed, its
/// samples deleted on the board unfilled (real-BlueZ VM, 20 link drops: 10 readouts so).
/// If the link goes before the page is placed, the page is not answered (the board keeps it).
@Suite("Flash log pages wait for their gap's end")
struct PagesWaitingTests {
    static let board = BluetoothAddress("C4:5A:2B:00:00:01")!
    static let description = BoardDescription(model: .metaMotionR, chip: .bmi160, firmwareRevision: nil, modelNumber: nil,
                                              hardwareRevision: nil, manufacturer: nil, serialNumber: nil,
                                              modules: ModuleTable([ModuleInfo(module: .gyro, implementation: 0, revision: 1)]),
                                              battery: nil, boardClock: nil)

    /// The board's events, each received at `start` + `at`.
    struct Feed {
        let pipeline: RecordingPipeline
        let start = ContinuousClock.now
        var sample = 0

        func event(_ kind: BoardEvent.Kind, at: Duration) -> BoardEvent {
            BoardEvent(board: PagesWaitingTests.board, kind: kind, receivedAt: start.advanced(by: at), wallClock: Date())
        }

        /// 100 Hz gyro, one sample a notification, from `from` for `seconds`.
        mutating func stream(from: Duration, seconds: Int) async {
            for k in 0..<(seconds * 100) {
                let raw = RawVector(x: Int16(truncatingIfNeeded: sample), y: 0, z: 0)
                sample += 1
                await pipeline.handle(event(.sample(.gyro(MotionSamples(single: raw, scale: 16.4))), at: from + .milliseconds(10 * k)))
            }
        }
    }

    /// A pipeline recording the board, whose flash log fills its gaps: streamed from 0 s, the
    /// link lost at 3 s and back at 5 s (its points wait for the log from about 7 s), lost again
    /// at 8 s while they wait, and back at 10 s: the log is asked for at once. The demands the
    /// boards' side got, as they come.
    static func afterADropDuringAHold(_ body: (inout Feed, @Sendable () -> [BackfillDemand]) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "mwgate-pages-waiting-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try BufferStore(path: BufferStore.path(inStateDirectory: directory),
                                    configuration: .init(userID: "00000000-0000-4000-8000-000000000001"))
        // Gyro alone at 100 Hz: the points wait for nothing but the lookahead and the fix wait.
        let streaming = try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz100, range: .dps2000))
        let settings = GatewaySettings(boards: .addresses([board]), streaming: streaming, stateDirectory: directory)
        let pipeline = RecordingPipeline(settings: settings, store: store, logger: LogCapture().logger())
        let taken = Taken()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                for await demand in pipeline.backfillDemand { taken.demands.withLock { $0.append(demand) } }
            }
            var feed = Feed(pipeline: pipeline)
            await pipeline.handle(feed.event(.state(.streaming(description)), at: .zero))
            let loggers = [MotionSensor.gyro: LoggerIDs(xy: 0, z: 1)]
            await pipeline.handle(feed.event(.flashLog(.logging(loggers: loggers, capacityEntries: nil, secondsToFull: nil)), at: .zero))
            _ = try await pipeline.startSession()
            await feed.stream(from: .zero, seconds: 3)
            await pipeline.handle(feed.event(.state(.lost(reason: "link dropped")), at: .seconds(3)))
            await pipeline.handle(feed.event(.state(.streaming(description)), at: .seconds(5)))
            feed.sample += 200
            await feed.stream(from: .seconds(5), seconds: 3)
            await pipeline.handle(feed.event(.state(.lost(reason: "link dropped")), at: .seconds(8)))
            taken.demands.withLock { $0.removeAll() }
            await pipeline.handle(feed.event(.state(.streaming(description)), at: .seconds(10)))
            feed.sample += 200
            try await body(&feed, { taken.demands.withLock { $0 } })
            await pipeline.shutdown()
            try await group.waitForAll()
        }
    }

    /// The demands the boards' side got, in order.
    final class Taken: Sendable {
        let demands = Mutex<[BackfillDemand]>([])
    }

    /// Waits until the demands taken satisfy `predicate` (polled; no time is asserted).
    static func demands(_ taken: () -> [BackfillDemand], _ predicate: ([BackfillDemand]) -> Bool) async throws -> [BackfillDemand] {
        for _ in 0..<200 where !predicate(taken()) { try await Task.sleep(for: .milliseconds(10)) }
        return taken()
    }

    static let page: FlashLogDownload = {
        var page = FlashLogDownload(gyro: [], clock: nil, clockReadAt: nil, duplicatesDropped: 0, orphanedEntries: 0)
        page.complete = false
        return page
    }()

    static func answered(_ demands: [BackfillDemand]) -> Bool {
        demands.contains { if case .confirmPage = $0 { true } else if case .declinePage = $0 { true } else { false } }
    }

    @Test func aPageIsAnsweredOnlyOnceTheNewLinksPointsAreHeld() async throws {
        try await Self.afterADropDuringAHold { feed, taken in
            let asked = try await Self.demands(taken) { $0.contains(.download(Self.board.rawValue)) }
            #expect(asked.contains(.download(Self.board.rawValue)), "the log asked for when the board came back: \(asked)")
            await feed.pipeline.handle(feed.event(.flashLogDownloaded(Self.page), at: .milliseconds(10_010)))
            // The new link's first point reaches the recorder 2 s after its notification.
            await feed.stream(from: .seconds(10), seconds: 2)
            #expect(!Self.answered(taken()), "no answer while the new link has no point held: \(taken())")
            await feed.stream(from: .seconds(12), seconds: 3)
            let after = try await Self.demands(taken) { Self.answered($0) }
            #expect(after.contains(.confirmPage(Self.board.rawValue)), "the page is confirmed once placed: \(after)")
        }
    }

    @Test func aWaitingPageIsNotAnsweredWhenTheLinkGoesFirst() async throws {
        try await Self.afterADropDuringAHold { feed, taken in
            await feed.pipeline.handle(feed.event(.flashLogDownloaded(Self.page), at: .milliseconds(10_010)))
            await feed.pipeline.handle(feed.event(.state(.lost(reason: "link dropped")), at: .milliseconds(10_500)))
            await feed.pipeline.handle(feed.event(.state(.streaming(Self.description)), at: .seconds(12)))
            await feed.stream(from: .seconds(12), seconds: 4)
            try await Task.sleep(for: .milliseconds(200))
            #expect(!Self.answered(taken()), "the board keeps the page for the next readout: \(taken())")
        }
    }
}
