import BlueZ
@testable import BlueZSimulator
import Boards
import Foundation
import MetaWear
import MetaWearBoardModel
import TestSupport
import Testing

@Suite("Boards end to end: BoardManager against mwsim", .enabled(if: TestBus.isAvailable))
struct BoardManagerEndToEndTests {
    /// Auto-discovery adopts only allowed boards; a board added at runtime streams; a removed
    /// board is stopped (sensors off) and not re-adopted although it is allowed and still
    /// advertising; shutdown stops the rest.
    @Test(.timeLimit(.minutes(2)))
    func allowListAndRuntimeAddRemove() async throws {
        try await EndToEndRig.with(boards: 3) { rig in
            let addresses = [try await rig.address(0), try await rig.address(1), try await rig.address(2)]
            let manager = BoardManager(client: rig.client, defaultOptions: try testOptions())
            async let managerRun: Void = manager.run()
            let recorder = EventRecorder()
            let forwarder = recordEvents(manager.events, into: recorder)
            await manager.startDiscovery(.init(allowList: [addresses[0], addresses[2]]))
            try await waitUntil("boards 0 and 2 streaming") {
                [0, 2].allSatisfy { recorder.samples(addresses[$0]).count >= 20 }
            }
            // Board 1 advertises the whole time; give discovery a few more rounds.
            try await Task.sleep(for: .seconds(1))
            #expect(await manager.boards == [addresses[0], addresses[2]].sorted())
            #expect(try await rig.simulator.stats(1).connections == 0, "board 1 is not allowed and was never connected")
            #expect(recorder.entries(addresses[1]).isEmpty)

            await manager.add(addresses[1])
            try await waitUntil("board 1 streaming after add") { recorder.samples(addresses[1]).count >= 20 }

            await manager.remove(addresses[0])
            try await waitUntil("board 0 reported stopped") { recorder.states(addresses[0]).last == .stopped }
            #expect(try await rig.sensorsIdle(0), "a removed board's sensors are off")
            try await Task.sleep(for: .seconds(1))
            #expect(await manager.boards == [addresses[1], addresses[2]].sorted())
            #expect(try await rig.simulator.stats(0).connections == 1, "the removed board was not re-adopted")

            await manager.shutdown()
            await managerRun
            await forwarder.value
            for i in 0..<3 {
                #expect(try await rig.sensorsIdle(i), "board \(i) sensors off after shutdown")
                let samples = recorder.samples(addresses[i])
                expectStrictlyIncreasing(samples, board: "board \(i)")
                #expect(expectExactValues(samples, seed: UInt32(i + 1), board: "board \(i)") == 0)
            }
        }
    }
    /// Cancelling run() ends every board's session and run() returns (no board outlives its
    /// manager); a board is not added once run() has ended (nothing would run it), and
    /// remove() and shutdown() afterwards still return.
    @Test(.timeLimit(.minutes(2)))
    func cancellingRunEndsEveryBoard() async throws {
        try await EndToEndRig.with(boards: 1) { rig in
            let address = try await rig.address(0)
            let manager = BoardManager(client: rig.client, defaultOptions: try testOptions())
            let recorder = EventRecorder()
            let forwarder = recordEvents(manager.events, into: recorder)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await manager.run() }
                await manager.add(address)
                try await waitUntil("the board streaming") { recorder.samples(address).count >= 20 }
                group.cancelAll()
                try await group.waitForAll()
            }
            let session = try #require(await manager.session(for: address))
            #expect(await session.currentState == .stopped, "the session ended with the manager's run()")
            await manager.remove(address)
            await manager.add(address)
            #expect(await manager.boards.isEmpty, "no board is added once run() has ended")
            await manager.shutdown()
            await forwarder.value
        }
    }
}
