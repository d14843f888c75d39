import BlueZ
@testable import BlueZSimulator
import Buffer
import Foundation
import GNSS
import Gateway
import StatusModel
import Logging
import MetaWear
import MetaWearBoardModel
import ServiceLifecycle
import GatewayTestSupport
import TestSupport
import Testing

/// A private bus with an in-process BlueZ simulator (one MetaMotion R / BMI160 and one
/// MetaMotion S / BMI270), a temporary state directory and a gateway assembled on them,
/// running in a `ServiceGroup`.
final class GatewayHarness: Sendable {
    let rig: SimulatedGatewayRig
    let services: RunningServices

    var bus: TestBus { rig.bus }
    var simulator: BlueZSimulator { rig.simulator }
    var addresses: [BluetoothAddress] { rig.addresses }
    var stateDirectory: URL { rig.stateDirectory }
    var gateway: Gateway { rig.gateway }

    static let nmeaCapture = SimulatedGatewayRig.nmeaCapture
    static let streaming = SimulatedGatewayRig.streaming

    private init(rig: SimulatedGatewayRig, services: RunningServices) {
        self.rig = rig
        self.services = services
    }

    /// Triggers a graceful shutdown and waits for every service to end.
    func shutDown() async throws {
        try await services.shutDown()
    }

    /// Runs `body` with the gateway's services running and always ends them (gracefully),
    /// then the simulator and the bus.
    static func with(mode: GatewaySettings.SessionMode, gnss: Bool = true, streamBetweenSessions: Bool = false,
                     backfill: Bool = false, streaming: StreamingConfiguration = SimulatedGatewayRig.streaming,
                     maxSessionDuration: Double? = nil, delivery: NotificationDelivery = .automatic, logs: LogCapture? = nil,
                     _ body: (GatewayHarness) async throws -> Void) async throws {
        try await SimulatedGatewayRig.with(label: "gw", settings: { addresses, stateDirectory, busAddress in
            var settings = GatewaySettings(
                boards: .addresses(addresses), streaming: streaming,
                gnss: gnss ? .file(path: SimulatedGatewayRig.nmeaCapture, pacing: .realtime) : nil,
                sessionMode: mode, stateDirectory: stateDirectory, busAddress: busAddress,
                alwaysModeIdleStop: .seconds(30))
            settings.streamBetweenSessions = streamBetweenSessions
            settings.backfill = backfill
            settings.maxSessionDuration = maxSessionDuration
            settings.notificationDelivery = delivery
            return settings
        }, logs: logs) { rig in
            let group = rig.gateway.serviceGroup(gracefulShutdownSignals: [])
            try await RunningServices.with(run: { try await group.run() }, shutDown: { await group.triggerGracefulShutdown() }) { services in
                try await body(GatewayHarness(rig: rig, services: services))
            }
        }
    }

    /// Polls the pipeline's status until `condition` holds (generous: a loaded 2-core machine).
    @discardableResult
    func eventually(_ what: String, timeout: Duration = .seconds(30),
                    _ condition: (GatewayStatus) -> Bool) async throws -> GatewayStatus {
        let deadline = ContinuousClock.now + timeout
        while true {
            let status = await gateway.pipeline.status
            if condition(status) { return status }
            guard ContinuousClock.now < deadline else {
                throw TestBusError(message: "timed out waiting for \(what); status: \(status)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Gyro samples board `index` has sent over the air.
    func gyroEmitted(_ index: Int) async throws -> Int {
        try await simulator.stats(index).samplesEmitted[.gyro] ?? 0
    }

    /// Waits until board `index` has button notifications on: BoardSession reports
    /// `streaming` when it starts writing the start sequence, and the button subscription
    /// is written last, a few connection events later.
    func waitForButton(_ index: Int) async throws {
        let deadline = ContinuousClock.now + .seconds(20)
        while try await !simulator.buttonSubscribed(index) {
            guard ContinuousClock.now < deadline else { throw TestBusError(message: "board \(index) never subscribed to its button") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Whether board `index`'s gyro and accelerometer are off within 10 s.
    func sensorsTurnOff(_ index: Int) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while try await !simulator.sensorsOff(index) {
            guard ContinuousClock.now < deadline else { return false }
            try await Task.sleep(for: .milliseconds(50))
        }
        return true
    }

    /// Whether board `index`'s gyro and accelerometer are off (not sampling).
    func sensorsOff(_ index: Int) async throws -> Bool {
        try await simulator.sensorsOff(index)
    }
}

extension BlueZSimulator {
    /// Whether the central asked board `index` for button notifications (`01 01 01`).
    func buttonSubscribed(_ index: Int) throws -> Bool {
        try device(index).model.commandLog.contains([0x01, 0x01, 0x01])
    }

    func sensorsOff(_ index: Int) throws -> Bool {
        let model = try device(index).model
        return !model.gyro.isSampling && !model.accelerometer.isSampling
    }

    /// Whether board `index` has a link, or one being made.
    func hasLink(_ index: Int) throws -> Bool {
        let device = try device(index)
        return device.connected || device.connecting
    }
}
