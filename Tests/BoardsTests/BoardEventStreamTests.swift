import Basics
import BlueZ
@testable import Boards
import Foundation
import Testing

@Suite struct BoardEventStreamTests {
    private func event(_ index: Int) -> BoardEvent {
        BoardEvent(board: BluetoothAddress("AA:BB:CC:DD:EE:FF")!, kind: .state(.recoveringStream(restart: index)),
                   receivedAt: .now, wallClock: Date())
    }

    private func restart(_ event: BoardEvent) -> Int? {
        if case .state(.recoveringStream(let restart)) = event.kind { restart } else { nil }
    }

    @Test func iteratingYieldsEveryEventOfEveryBatchInOrderThenEnds() async {
        let (stream, continuation) = BoardEventStream.makeStream(gauge: StreamGauge(name: "test_events", capacity: 8))
        continuation.yield([event(0), event(1), event(2)])
        continuation.yield([event(3)])
        continuation.yield([event(4), event(5)])
        continuation.finish()
        var seen: [Int] = []
        for await event in stream { seen.append(restart(event) ?? -1) }
        #expect(seen == [0, 1, 2, 3, 4, 5])
    }

    @Test func batchesArriveAsTheyWereYielded() async {
        let (stream, continuation) = BoardEventStream.makeStream(gauge: StreamGauge(name: "test_events", capacity: 8))
        continuation.yield([event(0), event(1)])
        continuation.yield([event(2)])
        continuation.finish()
        var sizes: [Int] = []
        for await batch in stream.batches { sizes.append(batch.count) }
        #expect(sizes == [2, 1])
    }
}
