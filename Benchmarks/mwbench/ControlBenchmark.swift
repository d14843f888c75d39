import BlueZ
import BlueZSimulator
import ControlAPI
import ControlServer
import DBus
import Foundation
import Gateway
import Logging
import MetaWear
import ServiceLifecycle

/// `mwbench control serve --address BUS`: a whole gateway (two simulated boards, no GNSS,
/// a buffer in a temporary directory) with the control server on a private bus, for
/// scripts/bench/control.sh to time `mwctl status --json` against `busctl call`.
enum ControlBenchmark {
    static func run(_ arguments: [String]) async {
        guard arguments.first == "serve", let index = arguments.firstIndex(of: "--address"), index + 1 < arguments.count else {
            fail("usage: mwbench control serve --address BUS_ADDRESS")
        }
        let address = arguments[index + 1]
        do { try await serve(address: address) } catch { fail("mwbench control: \(error)") }
    }

    static func serve(address: String) async throws {
        var configuration = SimulatorConfiguration(busAddress: address, boards: 2, model: .mixed)
        configuration.log = { _ in }
        try await BlueZSimulator.withRunning(configuration) { simulator in
            var boards: [BluetoothAddress] = []
            for index in 0..<2 {
                let info = try await simulator.boardInfo(index)
                if let board = BluetoothAddress(info.address) { boards.append(board) }
            }
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwbench-control-\(UUID().uuidString.prefix(8))")
            defer { try? FileManager.default.removeItem(at: directory) }
            let streaming = try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz50, range: .dps2000),
                                                       accelerometer: AccelerometerConfiguration(rate: .hz50, range: .g4))
            let settings = GatewaySettings(boards: .addresses(boards), streaming: streaming, stateDirectory: directory.path,
                                           busAddress: address)
            var logger = Logger(label: "mwbench.control")
            logger.logLevel = .error
            let gateway = try await Gateway.assemble(settings: settings, logger: logger, clockProbe: FixedClockSynchronisation(true))
            let server = ControlServer(gateway: gateway, sync: nil, busAddress: address, logger: logger) { _ in
                FileHandle.standardOutput.write(Data("ready\n".utf8))
            }
            let group = gateway.serviceGroup(adding: [server], gracefulShutdownSignals: [.sigterm, .sigint])
            try await group.run()
        }
    }
}
