import BlueZ
@testable import BlueZSimulator
import ControlAPI
import StatusModel
import ControlServer
import DBus
import Foundation
import GNSS
import Gateway
import Logging
import MetaWear
import ServiceLifecycle
import GatewayTestSupport
import TestSupport

/// A private bus with the BlueZ simulator (2 boards), a gateway on an NMEA replay and the
/// control server owning io.mwgate.Gateway1, all in one service group; `mwctl` runs as a
/// child process against the bus.
final class ControlHarness: @unchecked Sendable {
    let rig: SimulatedGatewayRig
    let sync: FakeSync

    var bus: TestBus { rig.bus }
    var simulator: BlueZSimulator { rig.simulator }
    var addresses: [BluetoothAddress] { rig.addresses }
    var stateDirectory: URL { rig.stateDirectory }
    var gateway: Gateway { rig.gateway }

    static let repositoryRoot = SimulatedGatewayRig.repositoryRoot

    private init(rig: SimulatedGatewayRig, sync: FakeSync) {
        self.rig = rig
        self.sync = sync
    }

    /// Runs `body` once the control server owns its name, with the simulator, the gateway and
    /// the control server running, and always ends them (the services gracefully).
    static func with(hazards: [String] = ["pothole", "crack", "curb", "crowd"], withUpstream: Bool = true,
                     simulator: (inout SimulatorConfiguration) -> Void = { _ in },
                     _ body: (ControlHarness) async throws -> Void) async throws {
        try await SimulatedGatewayRig.with(label: "ctl", simulator: simulator, settings: { addresses, stateDirectory, busAddress in
            var settings = GatewaySettings(
                boards: .addresses(addresses), streaming: SimulatedGatewayRig.streaming,
                gnss: .file(path: SimulatedGatewayRig.nmeaCapture, pacing: .realtime),
                sessionMode: .manual, hazardCatalogue: hazards, stateDirectory: stateDirectory, busAddress: busAddress)
            // mwctl's live views (status, board counters) are checked with live data.
            settings.streamBetweenSessions = true
            return settings
        }) { rig in
            var logger = Logger(label: "mwgate.control-test")
            logger.logLevel = .warning
            let sync = FakeSync()
            let server = ControlServer(gateway: rig.gateway, sync: withUpstream ? sync : nil, busAddress: rig.bus.address, logger: logger)
            let group = rig.gateway.serviceGroup(adding: [server], gracefulShutdownSignals: [])
            try await RunningServices.with(run: { try await group.run() }, shutDown: { await group.triggerGracefulShutdown() }) { _ in
                try await waitForControlName(on: rig.bus)
                try await body(ControlHarness(rig: rig, sync: sync))
            }
        }
    }

    /// Returns once the control server's bus name has an owner.
    static func waitForControlName(on bus: TestBus) async throws {
        let connection = try await DBusConnection(address: bus.address)
        defer { connection.close() }
        let deadline = ContinuousClock.now + .seconds(30)
        while try await connection.nameOwner(GatewayControl.busName) == nil {
            guard ContinuousClock.now < deadline else { throw TestBusError(message: "the control server never owned its name") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Runs mwctl against this bus.
    func mwctl(_ arguments: [String], stdin: String? = nil) async throws -> CLIResult {
        try await CLI.run(arguments, environment: bus.environment, stdin: stdin)
    }

    /// Polls `mwctl status --json` until `condition` holds (generous for a loaded machine).
    @discardableResult
    func eventually(_ what: String, timeout: Duration = .seconds(60), _ condition: (GatewayStatus) -> Bool) async throws -> GatewayStatus {
        let deadline = ContinuousClock.now + timeout
        while true {
            let result = try await mwctl(["status", "--json"])
            if result.status == 0, let status = try? ControlJSON.decode(GatewayStatus.self, from: result.stdout), condition(status) {
                return status
            }
            guard ContinuousClock.now < deadline else {
                throw TestBusError(message: "timed out waiting for \(what); last: \(result.status) \(result.stdout) \(result.stderr)")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
    }
}

/// A sync service stand-in with a fixed state that counts its calls.
final class FakeSync: SyncControl, @unchecked Sendable {
    private let lock = NSLock()
    private var runs = 0

    var syncRuns: Int { lock.withLock { runs } }

    func syncStatus() async -> UpstreamSyncStatus {
        UpstreamSyncStatus(configured: true, endpoint: "https://upstream.example", state: "idle", credentialsPresent: true,
                          lastSuccessAt: 1_790_000_000, documentsSent: 7)
    }

    func syncNow() async throws -> SyncRunPayload {
        lock.withLock { runs += 1 }
        return SyncRunPayload(sent: 2, failed: 0, remaining: 0)
    }

    func requeueDead(sessionID: String?) async throws -> Int { 0 }
}

/// One mwctl run.
struct CLIResult {
    var status: Int32
    var stdout: String
    var stderr: String
}

enum CLI {
    /// mwctl beside the test bundle (`swift build --build-tests` builds it).
    static func path() throws -> String {
        var directory = URL(fileURLWithPath: CommandLine.arguments.first ?? "").deletingLastPathComponent()
        for _ in 0..<4 {
            let candidate = directory.appendingPathComponent("mwctl")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate.path }
            directory = directory.deletingLastPathComponent()
        }
        let fallback = ControlHarness.repositoryRoot.appendingPathComponent(".build/debug/mwctl").path
        if FileManager.default.isExecutableFile(atPath: fallback) { return fallback }
        throw TestBusError(message: "mwctl not found beside the test bundle (swift build --build-tests builds it)")
    }

    /// Runs mwctl (or `executable`) with output in temporary files (no pipe deadlocks).
    /// Waits without blocking a thread of the cooperative pool: the control server answering
    /// the child runs in this process and needs those threads.
    static func run(_ arguments: [String], environment: [String: String], stdin: String? = nil,
                    executable: String? = nil) async throws -> CLIResult {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: try executable ?? path())
        process.arguments = arguments
        process.environment = environment
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwctl-run-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let out = directory.appendingPathComponent("out")
        let err = directory.appendingPathComponent("err")
        _ = FileManager.default.createFile(atPath: out.path, contents: nil)
        _ = FileManager.default.createFile(atPath: err.path, contents: nil)
        let outHandle = try FileHandle(forWritingTo: out)
        let errHandle = try FileHandle(forWritingTo: err)
        process.standardOutput = outHandle
        process.standardError = errHandle
        let input = Pipe()
        process.standardInput = stdin == nil ? FileHandle.nullDevice : input
        let exited = AsyncStream<Void> { continuation in
            process.terminationHandler = { _ in
                continuation.yield()
                continuation.finish()
            }
        }
        try Spawning.run(process)
        if let stdin {
            input.fileHandleForWriting.write(Data(stdin.utf8))
            try input.fileHandleForWriting.close()
        }
        for await _ in exited {}
        try outHandle.close()
        try errHandle.close()
        return CLIResult(status: process.terminationStatus,
                         stdout: String(decoding: try Data(contentsOf: out), as: UTF8.self),
                         stderr: String(decoding: try Data(contentsOf: err), as: UTF8.self))
    }
}
