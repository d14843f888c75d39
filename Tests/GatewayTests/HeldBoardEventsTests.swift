import BlueZ
import Boards
import Foundation
@testable import Gateway
import Testing

/// The hand-over of board events to the recording pipeline: the pipeline is woken for the
/// first event held while nothing ticks at the recording pace, not for every batch; while its
/// ticks take them it is not woken at all; nothing is left behind when the ticks stop; and the
/// feeder waits for the pipeline once the bound is reached.
@Suite("Board events held for the pipeline")
struct HeldBoardEventsTests {
    static func batch(_ state: BoardState) throws -> [BoardEvent] {
        [BoardEvent(board: try #require(BluetoothAddress("C4:5A:2B:00:00:01")), kind: .state(state), receivedAt: .now, wallClock: Date())]
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

    @Test func whileTicksTakeThemNoEventWakesThePipelineAndStoppingHandsBackWhatIsHeld() throws {
        let held = HeldBoardEvents()
        #expect(held.setTakenByTicks(true).isEmpty)
        #expect(held.hold(try Self.batch(.connecting)) == .held)
        #expect(held.hold(try Self.batch(.handshaking)) == .held)
        #expect(Self.states(held.setTakenByTicks(false)) == [BoardState.connecting.description, BoardState.handshaking.description])
        #expect(held.hold(try Self.batch(.stopped)) == .wake)
    }

    @Test func atTheBoundTheFeederWaitsForThePipeline() throws {
        let held = HeldBoardEvents()
        _ = held.setTakenByTicks(true)
        for _ in 1..<HeldBoardEvents.capacity { #expect(held.hold(try Self.batch(.connecting)) == .held) }
        #expect(held.hold(try Self.batch(.connecting)) == .full)
        #expect(held.takeAll().count == HeldBoardEvents.capacity)
        #expect(held.hold(try Self.batch(.connecting)) == .held)
    }
}
