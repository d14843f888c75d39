@testable import BlueZSimulator
import Boards
import TestSupport
import Testing

/// Issue 18 defect 7 (every link closed after a stop, in every state): what happens to the link
/// while a stop runs belongs to the stop, never to the reconnection it ends. The board's link
/// drops as the stop's first command reaches a busy bluetoothd (300 ms a write, as in the
/// real-BlueZ VM). The session must not ask for the board again: a `Connect` sent during a stop
/// may be carried out after it, when nothing is left to end the link.
@Suite("Boards end to end: a link drop during a stop", .enabled(if: TestBus.isAvailable))
struct StopDuringLinkDropTests {
    @Test(.timeLimit(.minutes(2)))
    func aLinkLostWhileStoppingIsNotConnectedAgain() async throws {
        try await EndToEndRig.with(boards: 1, configure: { $0.disconnectReplyDelay = .seconds(3) }) { rig in
            try await rig.withRecordedSession { board in
                try await waitUntil("streaming") { board.recorder.samples(board.address).count >= 20 }
                await rig.simulator.setWriteValueDelay(.milliseconds(300))
                try await rig.simulator.dropLinkAtNextWrite(0)
                let before = rig.simulatorLog.all.count
                await board.stop()
                // bluetoothd handles one client's calls in the order sent: the stop's `Disconnect`
                // comes after anything the session asked before it.
                try await waitUntil("bluetoothd handled the stop's Disconnect") {
                    rig.simulatorLog.all.dropFirst(before).contains { $0.contains("Disconnect asked") }
                }
                let during = Array(rig.simulatorLog.all.dropFirst(before))
                #expect(during.contains { $0.contains("link-drop board 0") && $0.contains("as a write arrives") },
                        "the link did not drop during the stop: \(during)")
                #expect(!during.contains { $0.contains("Connect asked") }, "the stop asked for the board again: \(during)")
                #expect(board.recorder.states(board.address).last == .stopped)
                #expect(try await !rig.simulator.isConnected(0), "the board's link is up after the stop")
            }
        }
    }
}
