import BlueZ
import BlueZSimulator
import Foundation
import GNSS
import Gateway
import Logging
import MetaWear
import TestSupport

/// The start-up shared by every in-process gateway test: a private bus, the BlueZ simulator
/// with two boards (one MetaMotion R / BMI160, one MetaMotion S / BMI270), a fresh state
/// directory and a gateway assembled on them. Starting the gateway's services is the
/// caller's business (with or without a control server on top).
///
/// ```swift
/// try await SimulatedGatewayRig.with(label: "gw", settings: { addresses, stateDirectory, bus in
///     GatewaySettings(boards: .addresses(addresses), streaming: SimulatedGatewayRig.streaming, ...)
/// }) { rig in
///     // ... run rig.gateway.serviceGroup(...) and let it end before returning
/// }
/// ```
public struct SimulatedGatewayRig: Sendable {
    public let bus: TestBus
    public let simulator: BlueZSimulator
    /// The simulated boards' addresses, in simulator index order.
    public let addresses: [BluetoothAddress]
    /// A fresh temporary state directory (removed when ``with(label:simulator:settings:_:)`` ends).
    public let stateDirectory: URL
    public let gateway: Gateway

    /// The repository root, from this file's path.
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// A real receiver's capture beside the repository (`../shared/testdata/nmea`).
    public static let nmeaCapture = repositoryRoot.deletingLastPathComponent()
        .appendingPathComponent("shared/testdata/nmea/quectel-l76k-nmea.log").path

    /// 50 Hz gyro + 50 Hz accelerometer = 100 notifications/s per board, the link budget.
    public static let streaming: StreamingConfiguration = {
        do {
            return try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz50, range: .dps2000),
                                              accelerometer: AccelerometerConfiguration(rate: .hz50, range: .g4))
        } catch {
            fatalError("the test streaming configuration is invalid: \(error)")
        }
    }()

    /// Starts the bus and simulator, assembles a gateway from `settings(addresses,
    /// stateDirectory, busAddress)` and runs `body` with them; then stops the simulator and the
    /// bus and removes the state directory (`body` lets the gateway's services end first).
    /// The clock probe says "not synchronised", as on a Pi without NTP: the GNSS UTC offset
    /// corrects the clock (the capture is from 2026-08-05). `simulator` shapes the simulated
    /// bluetoothd and boards (e.g. which world of Device Information they show).
    public static func with<Value>(
        label: String,
        simulator: (inout SimulatorConfiguration) -> Void = { _ in },
        settings: ([BluetoothAddress], String, String) throws -> GatewaySettings,
        logs: LogCapture? = nil,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (SimulatedGatewayRig) async throws -> Value
    ) async throws -> Value {
        let bus = try TestBus()
        defer { bus.stop() }
        var configuration = SimulatorConfiguration(busAddress: bus.address, boards: 2, model: .mixed)
        configuration.discoveryDelay = .milliseconds(50)
        configuration.log = { _ in }
        simulator(&configuration)
        let stateDirectory = FileManager.default.temporaryDirectory
            .appendingPathComponent("mwgate-\(label)-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: stateDirectory) }
        return try await BlueZSimulator.withRunning(configuration) { simulator in
            var addresses: [BluetoothAddress] = []
            for index in 0..<2 {
                let info = try await simulator.boardInfo(index)
                guard let address = BluetoothAddress(info.address) else { throw TestBusError(message: "bad address \(info.address)") }
                addresses.append(address)
            }
            // Warnings and worse on the console; with `logs`, notices too, kept for the test.
            var logger = logs?.logger("mwgate.\(label)") ?? Logger(label: "mwgate.\(label)")
            logger.logLevel = logs == nil ? .warning : .notice
            let gateway = try await Gateway.assemble(
                settings: try settings(addresses, stateDirectory.path, bus.address), logger: logger,
                clockProbe: FixedClockSynchronisation(false))
            return try await body(SimulatedGatewayRig(bus: bus, simulator: simulator, addresses: addresses,
                                                      stateDirectory: stateDirectory, gateway: gateway))
        }
    }
}
