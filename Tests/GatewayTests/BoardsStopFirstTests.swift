import BlueZ
@testable import BlueZSimulator
import Gateway
import GatewayTestSupport
import ServiceLifecycle
import Synchronization
import TestSupport
import Testing

/// At a graceful shutdown (SIGTERM) what a user needs first is every board's sensors off and
/// its link's end asked; the gateway's other services (here a stand-in for sync and the
/// control API) begin stopping only after that, so on a starved machine their stops do not
/// take the CPU from the boards' commands (issue 18 §2.7: in the real-BlueZ VM at load 8-12
/// `Disconnect` went out 1.2-3.0 s after the signal while the control API's and sync's stops
/// ran beside it). Shown by the order of what happened, not by time: the boards' `FE 06`
/// (written after their sensors-off commands were answered) reaches the simulated bluetoothd
/// before the other service is asked to stop. Without ``BoardsStopFirst`` every service is
/// asked at the shutdown's start, before any stop command has left (checked: the test fails).
@Suite struct BoardsStopFirstTests {
    @Test(.timeLimit(.minutes(2)))
    func theBoardsStopCommandsGoOutBeforeTheOtherServicesBeginStopping() async throws {
        let happenings = Happenings()
        try await SimulatedGatewayRig.with(label: "first", simulator: { configuration in
            configuration.log = { line in
                // "mwsim: write ADDRESS board=N type=command fe06", "mwsim: board N ADDRESS Disconnect asked"
                if line.hasPrefix("mwsim: write "), line.hasSuffix(" fe06"), let board = Self.board(in: line) {
                    happenings.note("board \(board) FE 06")
                } else if line.hasSuffix(" Disconnect asked"), let board = line.split(separator: " ").dropFirst(2).first {
                    happenings.note("board \(board) Disconnect asked")
                }
            }
        }, settings: { addresses, stateDirectory, busAddress in
            var settings = GatewaySettings(boards: .addresses(addresses), streaming: SimulatedGatewayRig.streaming, gnss: nil,
                                           sessionMode: .manual, stateDirectory: stateDirectory, busAddress: busAddress,
                                           alwaysModeIdleStop: .seconds(30))
            settings.streamBetweenSessions = true
            return settings
        }) { rig in
            let upload = AskedToStop(description: "upload", happenings: happenings)
            let group = rig.gateway.serviceGroup(adding: [upload], gracefulShutdownSignals: [])
            try await RunningServices.with(run: { try await group.run() }, shutDown: { await group.triggerGracefulShutdown() }) { services in
                try await waitUntil("both boards streaming", within: .seconds(60)) {
                    let boards = await rig.gateway.pipeline.status.boards
                    return boards.count == 2 && boards.allSatisfy { $0.isStreaming && $0.gyroSamplesReceived > 20 }
                }
                try await services.shutDown()
            }
            let order = happenings.all
            let asked = try #require(order.firstIndex(of: "upload asked to stop"), "\(order)")
            for board in 0..<2 {
                let commands = order.firstIndex(of: "board \(board) FE 06")
                #expect(commands.map { $0 < asked } == true, "board \(board)'s stop commands before the other services' stop: \(order)")
                #expect(order.contains("board \(board) Disconnect asked"), "\(order)")
                #expect(try await rig.simulator.sensorsOff(board), "board \(board)'s sensors off")
            }
        }
    }

    /// N of `board=N` in a simulator log line.
    private static func board(in line: String) -> Int? {
        line.split(separator: " ").first { $0.hasPrefix("board=") }.flatMap { Int($0.dropFirst("board=".count)) }
    }
}

/// Notes, in its graceful shutdown handler (at the moment it is asked, not when its task next
/// runs), that it was asked to stop; then ends.
private struct AskedToStop: Service, CustomStringConvertible {
    let description: String
    let happenings: Happenings

    func run() async throws {
        let (asked, ask) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await withGracefulShutdownHandler {
            for await _ in asked { return }
        } onGracefulShutdown: { [description] in
            happenings.note("\(description) asked to stop")
            ask.yield()
        }
    }
}

/// What happened, in order, noted from any thread.
private final class Happenings: Sendable {
    private let notes = Mutex<[String]>([])

    func note(_ what: String) { notes.withLock { $0.append(what) } }

    var all: [String] { notes.withLock { $0 } }
}
