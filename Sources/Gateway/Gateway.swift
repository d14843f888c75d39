import Basics
import BlueZ
import Boards
import Buffer
import Foundation
import GNSS
import Logging
import MetaWear
import Recording
import ServiceLifecycle
import UnixSignals

/// The gateway assembled from ``GatewaySettings``: the buffer, the boards, the GNSS source
/// and the recording pipeline, as services for one `ServiceGroup`.
///
/// Startup order (``assemble(settings:logger:clockProbe:)``): open the buffer and close
/// sessions a crash left open (`recoverInterruptedSessions`) → open the BlueZ client for the
/// boards → make the GNSS source → the pipeline. ``serviceGroup(adding:gracefulShutdownSignals:onRunning:)``
/// runs them (and the added services); at a graceful shutdown all but GNSS begin stopping at
/// once, GNSS after the seal: the seal waits only for the boards' last samples (see ``RecordingService``).
///
/// Where the other parts plug in: the configuration produces ``GatewaySettings``; the
/// logging backend (journald) is bootstrapped by the executable before it builds the
/// `Logger` passed here; the upload service (Uplink's `SyncService`, reading ``store``) and
/// the control API are passed to `serviceGroup(adding:)`; readiness (sd_notify) goes in
/// `onRunning`.
public struct Gateway: Sendable {
    /// The settings in force.
    public let settings: GatewaySettings
    /// The durable buffer (shared with the sync service and the control API).
    public let store: BufferStore
    /// This gateway's device UUID (`user_id` of records documents).
    public let deviceID: String
    /// Sessions closed at startup because a crash or power loss interrupted them.
    public let recoveredSessions: [String]
    /// Where board events and fixes meet; the control API's commands and status.
    public let pipeline: RecordingPipeline
    /// The services, in start order.
    public let boards: BoardService
    public let gnss: GNSSService
    public let recording: RecordingService
    private let logger: Logger

    /// Opens everything in startup order; errors name what could not be opened.
    public static func assemble(settings: GatewaySettings, logger: Logger,
                                clockProbe: any ClockSynchronisationProbe = KernelClockSynchronisation()) async throws -> Gateway {
        do { try settings.validate() } catch { throw GatewayError("bad settings: \(error)") }
        let directory = settings.stateDirectory
        do {
            try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        } catch {
            throw GatewayError("cannot create the state directory \(directory): \(error.localizedDescription)")
        }
        let deviceID: String
        do { deviceID = try DeviceIdentity.loadOrCreate(stateDirectory: directory) } catch {
            throw GatewayError("cannot load the device identity in \(directory): \(error)")
        }
        let bufferLogger = logger
        let configuration = BufferStore.Configuration(
            userID: deviceID,
            budget: DiskBudget(maxBytes: settings.budget.maxBytes, minFreeBytes: settings.budget.minFreeBytes),
            retentionDays: settings.budget.retentionDays,
            log: { bufferLogger.info("buffer: \($0)") })
        let path = BufferStore.path(inStateDirectory: directory)
        let store: BufferStore
        let recovered: [String]
        do {
            store = try BufferStore(path: path, configuration: configuration)
            recovered = try store.recoverInterruptedSessions()
        } catch {
            throw GatewayError("cannot open the buffer \(path): \(error)")
        }
        if !recovered.isEmpty {
            logger.notice("recovered \(recovered.count) interrupted session(s); they await their survey: \(recovered.joined(separator: ", "))")
        }

        let options = BoardSessionOptions(configuration: settings.streaming, notificationDelivery: settings.notificationDelivery,
                                          batteryInterval: settings.batteryInterval,
                                          sensorsOnConnect: RecordingPipeline.sensorsWanted(settings, recording: false),
                                          flashLogging: settings.backfill)
        let manager: BoardManager
        do { manager = try await BoardManager.open(busAddress: settings.busAddress, defaultOptions: options) } catch {
            throw GatewayError("cannot reach BlueZ on \(settings.busAddress ?? "the system bus"): \(error)")
        }

        // What the boards logged while no gateway ran is in their flash logs.
        var restartGaps: [RestartGap] = []
        // What logged sessions (interrupted, shut down, or with a board away at the stop) still
        // wait for from the boards' logs.
        var loggedRests: [KeptLoggedRest] = []
        // Those of an earlier start not filled yet too (the store keeps them until filled).
        if settings.backfill {
            do { restartGaps = try store.restartGaps() } catch {
                logger.warning("the recovered sessions' restart gaps cannot be read, they stay unfilled: \(error)")
            }
            do { loggedRests = try store.loggedRests() } catch {
                logger.warning("what logged sessions wait for from the boards' logs cannot be read, it stays on the boards: \(error)")
            }
        }
        let pipeline = RecordingPipeline(settings: settings, store: store, logger: logger, clockProbe: clockProbe,
                                         restartGaps: restartGaps, loggedRests: loggedRests)
        let gnssLogger = logger
        let source = settings.gnss?.makeSource(configuration: FixSourceConfiguration(events: { gnssLogger.info("gnss: \($0)") }))

        return Gateway(
            settings: settings, store: store, deviceID: deviceID, recoveredSessions: recovered, pipeline: pipeline,
            boards: BoardService(manager: manager, selection: settings.boards, pipeline: pipeline, logger: logger),
            gnss: GNSSService(source: source, pipeline: pipeline, logger: logger),
            recording: RecordingService(pipeline: pipeline, logger: logger),
            logger: logger)
    }

    /// The GNSS service, then the gateway's other services and `extra` (sync, control API,
    /// the daemon's own) as one service whose parts all begin stopping together at a graceful
    /// shutdown (``ServicesStoppingTogether``), so a SIGTERM takes as long as the slowest of
    /// them, not their sum; and last ``BoardsStopFirst``, which a group shuts down first (a
    /// group stops its services in reverse order, each after the one before): the boards'
    /// stop and the recording's seal (which waits for the boards' last samples) begin at the
    /// signal, and the others once every board's stop commands are out and its `Disconnect`
    /// asked. GNSS stops last: the fixes keep coming until the seal, so the boards' last
    /// samples get their locations. `onRunning` is called once the pipeline ticks (readiness).
    public func services(adding extra: [any Service] = [], onRunning: (@Sendable () async -> Void)? = nil) -> [any Service] {
        let recording = onRunning.map { RecordingService(pipeline: pipeline, logger: logger, onRunning: $0) } ?? recording
        return [gnss, ServicesStoppingTogether([boards, recording] + extra, logger: logger),
                BoardsStopFirst(boards: boards, recording: recording, logger: logger)]
    }

    /// A service group running ``services(adding:onRunning:)``, shut down gracefully by
    /// `gracefulShutdownSignals`.
    public func serviceGroup(adding extra: [any Service] = [], gracefulShutdownSignals: [UnixSignal] = [.sigterm, .sigint],
                             onRunning: (@Sendable () async -> Void)? = nil) -> ServiceGroup {
        ServiceGroup(services: services(adding: extra, onRunning: onRunning),
                     gracefulShutdownSignals: gracefulShutdownSignals, logger: logger)
    }
}

/// The gateway could not start; the message names what failed.
public struct GatewayError: Error, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
