import BlueZ
@testable import BlueZSimulator
import DBus
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
/// ran beside it). The stop waits for none of bluetoothd's answers, so what it promises is
/// that the boards' calls have left the gateway, in order, before the other services are
/// asked to stop. Shown by the order in which the simulated bluetoothd received the calls (it
/// handles them one after another in that order, as bluetoothd's main loop reads them): each
/// board's sensors-off commands, its `FE 06`, then its `Disconnect`, and only after them a
/// call the stand-in sends the moment it is asked to stop. The board's model saw the commands
/// before the link dropped: the sensors are off and the link ended (the simulator drops the
/// link as `Disconnect` arrives, so a `Disconnect` that overtook the commands leaves the
/// sensors on). Checked that it fails without ``BoardsStopFirst``'s wait (the stand-in's call
/// arrives first) and with `Disconnect` asked before the commands.
@Suite struct BoardsStopFirstTests {
    @Test(.timeLimit(.minutes(2)))
    func theBoardsStopCallsLeaveInOrderBeforeTheOtherServicesBeginStopping() async throws {
        let received = Happenings()
        try await SimulatedGatewayRig.with(label: "first", simulator: { configuration in
            configuration.logsCalls = true
            configuration.log = { line in
                // "mwsim: write ADDRESS board=N type=command HEX", "mwsim: call MEMBER PATH from SENDER"
                if line.hasPrefix("mwsim: write ") || line.hasPrefix("mwsim: call ") { received.note(line) }
            }
        }, settings: { addresses, stateDirectory, busAddress in
            var settings = GatewaySettings(boards: .addresses(addresses), streaming: SimulatedGatewayRig.streaming, gnss: nil,
                                           sessionMode: .manual, stateDirectory: stateDirectory, busAddress: busAddress,
                                           alwaysModeIdleStop: .seconds(30))
            settings.streamBetweenSessions = true
            return settings
        }) { rig in
            let marker = try await DBusConnection(address: rig.bus.address)
            defer { marker.close() }
            let upload = AskedToStop(description: "upload") {
                try? marker.send(.methodCall(destination: BlueZNames.service, path: BlueZSimulator.adapterPath,
                                             interface: BlueZNames.adapter, member: "GetDiscoveryFilters"))
            }
            let group = rig.gateway.serviceGroup(adding: [upload], gracefulShutdownSignals: [])
            var began = 0
            try await RunningServices.with(run: { try await group.run() }, shutDown: { await group.triggerGracefulShutdown() }) { services in
                try await waitUntil("both boards streaming", within: .seconds(60)) {
                    let boards = await rig.gateway.pipeline.status.boards
                    return boards.count == 2 && boards.allSatisfy { $0.isStreaming && $0.gyroSamplesReceived > 20 }
                }
                began = received.all.count
                try await services.shutDown()
            }
            let order = Array(received.all.dropFirst(began))
            let asked = try #require(order.firstIndex { $0.hasPrefix("mwsim: call GetDiscoveryFilters ") && $0.hasSuffix(" from \(marker.uniqueName)") },
                                     "the stand-in's call never arrived: \(order)")
            for (board, address) in rig.addresses.enumerated() {
                let writes = order.indices.filter { order[$0].hasPrefix("mwsim: write ") && order[$0].contains(" board=\(board) ") }
                let disconnect = try #require(address.devicePath(on: BlueZSimulator.adapterPath)).rawValue
                let disconnected = order.firstIndex { $0.hasPrefix("mwsim: call Disconnect \(disconnect) ") }
                let fe06 = writes.last { order[$0].hasSuffix(" fe06") }
                #expect(fe06 != nil && writes.first! < fe06!, "board \(board): sensors-off commands, then FE 06: \(order)")
                #expect(fe06.map { fe06 in disconnected.map { fe06 < $0 && $0 < asked } } == true,
                        "board \(board): FE 06, then Disconnect, then the other services' stop: \(order)")
                #expect(try await rig.simulator.sensorsOff(board), "board \(board)'s sensors off")
                try await waitUntil("board \(board)'s link ended") { try await !rig.simulator.hasLink(board) }
            }
        }
    }
}

/// Calls `asked` in its graceful shutdown handler (at the moment it is asked, not when its
/// task next runs); then ends.
private struct AskedToStop: Service, CustomStringConvertible {
    let description: String
    let asked: @Sendable () -> Void

    func run() async throws {
        let (stopping, stop) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await withGracefulShutdownHandler {
            for await _ in stopping { return }
        } onGracefulShutdown: { [asked] in
            asked()
            stop.yield()
        }
    }
}

/// What the simulated bluetoothd logged, in order, noted from any thread.
private final class Happenings: Sendable {
    private let notes = Mutex<[String]>([])

    func note(_ what: String) { notes.withLock { $0.append(what) } }

    var all: [String] { notes.withLock { $0 } }
}
