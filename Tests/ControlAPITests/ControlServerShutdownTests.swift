import ControlServer
import Gateway
import GatewayTestSupport
import Logging
import ServiceLifecycle
import TestSupport
import Testing

/// The control API's place in a stopping gateway: at a SIGTERM the recording's seal starts at
/// the signal and, with no session open, ends the pipeline (and its status updates) at once,
/// before the control API's turn in the group's shutdown.
@Suite(.enabled(if: TestBus.isAvailable, "needs /usr/bin/dbus-daemon"))
struct ControlServerShutdownTests {
    @Test func theControlAPIAnswersUntilItsTurnThoughThePipelineShutDownFirst() async throws {
        try await SimulatedGatewayRig.with(label: "ctl-stop", settings: { addresses, stateDirectory, busAddress in
            GatewaySettings(boards: .addresses(addresses), streaming: SimulatedGatewayRig.streaming, gnss: nil,
                            sessionMode: .manual, stateDirectory: stateDirectory, busAddress: busAddress)
        }) { rig in
            var logger = Logger(label: "mwgate.control-stop-test")
            logger.logLevel = .warning
            let server = ControlServer(gateway: rig.gateway, sync: nil, busAddress: rig.bus.address, logger: logger)
            let group = ServiceGroup(services: [server], gracefulShutdownSignals: [], logger: logger)
            try await RunningServices.with(run: { try await group.run() }, shutDown: { await group.triggerGracefulShutdown() }) { services in
                try await ControlHarness.waitForControlName(on: rig.bus)
                await rig.gateway.pipeline.shutdown()

                let answer = try await CLI.run(["status", "--json"], environment: rig.bus.environment)
                #expect(answer.status == 0, "mwctl status after the pipeline shut down: exit \(answer.status): \(answer.stderr)")
                // A service that ended before it was asked to fails the group (mwgated: exit 1).
                try await services.shutDown()
            }
        }
    }
}
