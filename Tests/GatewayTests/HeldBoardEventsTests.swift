import BlueZ
import Boards
import Foundation
@testable import Gateway
import MetaWear
import Testing

/// The hand-over of board events to the recording pipeline: the pipeline is woken for the
/// first event held while nothing ticks at the recording pace, not for every batch; while its
/// ticks take them only a board's state change and a stream's first samples wake it; nothing is left behind when the ticks stop; and the
/// feeder waits for the pipeline once the bound is reached.
@Suite("Board events held for the pipeline")
struct HeldBoardEventsTests {
    static func batch(_ state: BoardState) throws -> [BoardEvent] {
        [BoardEvent(board: try #require(BluetoothAddress("C4:5A:2B:00:00:01")), kind: .state(state), receivedAt: .now, wallClock: Date())]
    }

    /// A batch of one gyro sample (`x`, to tell batches apart).
    static func samples(_ x: Int16) throws -> [BoardEvent] {
        [BoardEvent(board: try #require(BluetoothAddress("C4:5A:2B:00:00:01")),
                    kind: .sample(.gyro(MotionSamples(single: RawVector(x: x, y: 0, z: 0), scale: 16.4))), receivedAt: .now, wallClock: Date())]
    }

    static func states(_ batches: [[BoardEvent]]) -> [String] {
        batches.flatMap { $0.map { event in
            if case .state(let state) = event.kind { return state.description }
            return "?"
        } }
    }

    @Test func theFirstEventHeldWakesThePipelineOnceUntilItTakesThem() throws {
        let held = HeldBoardEvents()
        #expect(held.hold(try Self.batch(.connecting)) == .wake)
        #expect(held.hold(try Self.batch(.handshaking)) == .held)
        #expect(Self.states(held.takeAll()) == [BoardState.connecting.description, BoardState.handshaking.description])
        #expect(held.takeAll().isEmpty)
        #expect(held.hold(try Self.batch(.stopped)) == .wake)
    }

    @Test func whileTicksTakeThemNoSampleWakesThePipelineAndStoppingHandsBackWhatIsHeld() throws {
        let held = HeldBoardEvents()
        #expect(held.setTakenByTicks(true).isEmpty)
        #expect(held.hold(try Self.samples(1)) == .held)
        #expect(held.hold(try Self.samples(2)) == .held)
        #expect(held.setTakenByTicks(false).count == 2)
        #expect(held.hold(try Self.batch(.stopped)) == .wake)
    }

    /// Issue 18 §3: after a reconnect the status said streaming, and the journal that the
    /// board was back, only at the pipeline's next tick (up to 250 ms) after its first samples.
    @Test func whileTicksTakeThemAStateChangeAndTheFirstSamplesOfAStreamWakeThePipeline() throws {
        let held = HeldBoardEvents()
        _ = held.setTakenByTicks(true)
        #expect(held.hold(try Self.samples(1)) == .held)
        #expect(held.hold(try Self.batch(.lost(reason: "link dropped"))) == .wake)
        #expect(held.takeAll().count == 2)
        #expect(held.hold(try Self.batch(.handshaking)) == .wake)
        let description = BoardDescription(model: .metaMotionR, chip: .bmi160, firmwareRevision: nil, modelNumber: nil,
                                           hardwareRevision: nil, manufacturer: nil, serialNumber: nil, modules: ModuleTable([]),
                                           battery: nil, boardClock: nil)
        #expect(held.hold(try Self.batch(.streaming(description))) == .held, "a wake is already asked for")
        #expect(held.takeAll().count == 2)
        #expect(held.hold(try Self.samples(2)) == .wake, "the stream's first samples")
        _ = held.takeAll()
        #expect(held.hold(try Self.samples(3)) == .held, "the stream's later samples wait for a tick")
    }

    /// The board waits at each page's end for the answer: a page does not wait for a tick.
    @Test func aFlashLogPageWakesThePipelineWhileTicksTakeTheEvents() throws {
        let held = HeldBoardEvents()
        _ = held.setTakenByTicks(true)
        #expect(held.hold(try Self.samples(1)) == .held)
        var page = FlashLogDownload(gyro: [], clock: nil, clockReadAt: nil, duplicatesDropped: 0, orphanedEntries: 0)
        page.complete = false
        let board = try #require(BluetoothAddress("C4:5A:2B:00:00:01"))
        #expect(held.hold([BoardEvent(board: board, kind: .flashLogDownloaded(page), receivedAt: .now, wallClock: Date())]) == .wake)
        #expect(held.hold(try Self.samples(2)) == .held, "one wake until the pipeline takes them")
        #expect(held.takeAll().count == 3)
    }

    @Test func atTheBoundTheFeederWaitsForThePipeline() throws {
        let held = HeldBoardEvents()
        _ = held.setTakenByTicks(true)
        for _ in 1..<HeldBoardEvents.capacity { #expect(held.hold(try Self.samples(1)) == .held) }
        #expect(held.hold(try Self.samples(1)) == .full)
        #expect(held.takeAll().count == HeldBoardEvents.capacity)
        #expect(held.hold(try Self.samples(1)) == .held)
    }
}
