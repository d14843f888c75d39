import Buffer
import ControlAPI
import ControlServer
import Foundation
import Gateway
import GatewayConfig
import Logging
import ServiceLifecycle
import ServiceSupport
import StatusModel
import Uplink

/// Uplink's `SyncService` as a service of the gateway's group and as the control API's
/// `SyncControl`; it also turns the sync's status changes into the `sync-failing` /
/// `sync-recovered` journal events.
public struct SyncServiceRunner: Service, SyncControl, CustomStringConvertible {
    /// The running sync service.
    public let sync: SyncService
    private let endpoint: String?
    private let sinkName: String
    private let reporter: StatusReporter
    private let logger: Logger

    /// A runner for `sync` (uploading to `sinkName` at `endpoint`, shown without secrets),
    /// reporting failure streaks to `reporter`.
    public init(sync: SyncService, sinkName: String, endpoint: String?, reporter: StatusReporter, logger: Logger) {
        self.sync = sync
        self.sinkName = sinkName
        self.endpoint = endpoint
        self.reporter = reporter
        self.logger = logger
    }

    public var description: String { "SyncService(\(sinkName))" }

    public func run() async throws {
        let sync = sync, reporter = reporter
        let updates = await sync.statusUpdates()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await Self.reportFailureStreaks(updates, to: reporter) }
            defer { group.cancelAll() }
            // The sink's connection is closed before the process exits: PostgresNIO traps
            // (assertion) when a connection is released still open, which turned every SIGTERM
            // of a debug build into a crash.
            do {
                try await cancelWhenGracefulShutdown { try await sync.run() }
            } catch {
                await sync.sink.close()
                throw error
            }
            await sync.sink.close()
        }
    }

    /// The first failure after a success, and the first success after failures, as journal events.
    private static func reportFailureStreaks(_ updates: AsyncStream<SyncStatus>, to reporter: StatusReporter) async {
        var failures = 0
        for await status in updates {
            if status.consecutiveFailures > failures, failures == 0 {
                await reporter.syncAttempt(succeeded: false, sink: status.sink, error: status.lastError)
            } else if status.consecutiveFailures == 0, failures > 0 {
                await reporter.syncAttempt(succeeded: true, sink: status.sink)
            }
            failures = status.consecutiveFailures
        }
    }

    /// The sync's state for `mwctl sync` (times in seconds since the epoch).
    public func syncStatus() async -> UpstreamSyncStatus {
        let status = await sync.status
        let now = Date().timeIntervalSince1970
        return UpstreamSyncStatus(
            configured: true, endpoint: endpoint, state: status.activity.rawValue, credentialsPresent: true,
            lastSuccessAt: status.lastSuccess.map { $0.timeIntervalSince1970 },
            lastAttemptAt: nil, lastError: status.lastError,
            nextAttemptAt: status.nextAttemptIn.map { now + $0 }, documentsSent: status.sent)
    }

    /// One upload pass now.
    public func syncNow() async throws -> SyncRunPayload {
        do {
            let sent = try await sync.drain()
            let status = await sync.status
            return SyncRunPayload(sent: sent, failed: 0, remaining: status.backlogCount)
        } catch {
            let status = await sync.status
            return SyncRunPayload(sent: 0, failed: 1, remaining: status.backlogCount, error: "\(error)")
        }
    }

    /// Queues dead documents once more.
    public func requeueDead(sessionID: String?) async throws -> Int {
        try await sync.requeueDead(sessionID: sessionID)
    }
}

/// The configured sink, with its secret from systemd credentials.
public enum SinkFactory {
    /// The sink cannot be built; the message names the key and the problem.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The sink and a display endpoint (no secrets).
    public static func make(_ sink: GatewayConfiguration.Sink, credentials: CredentialStore = CredentialStore(),
                            logger: Logger) throws -> (sink: any Sink, endpoint: String) {
        switch sink.kind {
        case .directory(let path):
            do { return (try DirectorySink(root: path, logger: logger), "file://\(path)") } catch {
                throw Failure(description: "sink.directory: cannot use \(path): \(error)")
            }
        case .firestore(let settings):
            let configuration: FirestoreConfiguration
            if let host = settings.emulatorHost {
                configuration = .emulator(host: host, projectID: settings.projectID)
            } else {
                let key: ServiceAccountKey
                do {
                    key = try ServiceAccountKey(json: try credentials.data(settings.credential))
                } catch {
                    throw Failure(description: "sink.firestore: credential \(settings.credential): \(error)")
                }
                configuration = FirestoreConfiguration(projectID: settings.projectID, databaseID: settings.database, auth: .serviceAccount(key))
            }
            do {
                return (try FirestoreSink(configuration: configuration, logger: logger), configuration.baseURL + "/v1/" + configuration.databasePath)
            } catch {
                throw Failure(description: "sink.firestore: \(error)")
            }
        case .postgres(let settings):
            let password: String?
            do { password = String(decoding: try credentials.data(settings.passwordCredential), as: UTF8.self).trimmingCharacters(in: .newlines) } catch {
                throw Failure(description: "sink.postgres: credential \(settings.passwordCredential): \(error)")
            }
            let tls: PostgresSinkConfiguration.TLSMode = switch settings.sslMode {
            case .disable: .disable
            case .prefer: .prefer
            case .require, .verifyCA, .verifyFull: .require
            }
            let configuration = PostgresSinkConfiguration(endpoint: .tcp(host: settings.host, port: settings.port), username: settings.user,
                                                          password: password, database: settings.database, tls: tls)
            return (PostgresSink(configuration: configuration, logger: logger), "postgres://\(settings.user)@\(settings.host):\(settings.port)/\(settings.database)")
        }
    }
}
