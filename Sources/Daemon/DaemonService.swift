import Foundation
import Gateway
import GatewayConfig
import Logging
import ServiceLifecycle
import ServiceSupport

/// The daemon's own service, run beside the gateway's (all see a graceful shutdown at once):
/// it flushes rate-limited status lines and time-based events
/// (status snapshots themselves are fed to the ``StatusReporter`` by ``Daemon``), feeds
/// the systemd watchdog only while the pipeline is healthy, reloads the configuration on
/// SIGHUP and says `STOPPING=1` when shutdown begins.
public struct DaemonService: Service, CustomStringConvertible {
    /// Longest time since the pipeline's last tick for it to count as alive (ticks are 250 ms apart).
    public static let tickStaleness: Duration = .seconds(3)

    private let pipeline: RecordingPipeline
    private let reporter: StatusReporter
    private let notifier: SystemdNotifier
    private let reloader: ConfigurationReloader
    private let journal: JournalWriter?
    private let logger: Logger

    public init(pipeline: RecordingPipeline, reporter: StatusReporter, notifier: SystemdNotifier,
                reloader: ConfigurationReloader, journal: JournalWriter?, logger: Logger) {
        self.pipeline = pipeline
        self.reporter = reporter
        self.notifier = notifier
        self.reloader = reloader
        self.journal = journal
        self.logger = logger
    }

    public var description: String { "DaemonService" }

    public func run() async throws {
        let pipeline = pipeline, reporter = reporter, notifier = notifier, reloader = reloader
        let journal = journal, logger = logger
        let hangups = SignalStream.make([.hangup])
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    await Self.housekeeping(pipeline: pipeline, reporter: reporter, notifier: notifier, journal: journal)
                }
                group.addTask {
                    for await _ in hangups {
                        await reloader.reload()
                        notifier.ready(status: await reporter.currentStatusLine)
                    }
                }
                await group.waitForAll()
            }
        }
        logger.notice("shutting down: sealing open chunks, stopping the boards")
        notifier.stopping(status: "shutting down: sealing open chunks, stopping the boards")
    }

    /// Longest sleep of the housekeeping while idle (no session, nothing to upload, no status
    /// line or fix to watch): a rate-limited status line queued meanwhile waits this long.
    public static let idleHousekeepingInterval: Duration = .seconds(5)

    /// Once a second while there is something to watch (or twice per watchdog period when
    /// shorter), every ``idleHousekeepingInterval`` while idle: re-check time-based events,
    /// flush a rate-limited status line and suppressed-log summaries, and ping the watchdog
    /// when the pipeline is alive and the buffer takes writes.
    static func housekeeping(pipeline: RecordingPipeline, reporter: StatusReporter, notifier: SystemdNotifier,
                             journal: JournalWriter?) async {
        var busyPeriod: Duration = .seconds(1)
        var idlePeriod = idleHousekeepingInterval
        if let watchdog = notifier.watchdogInterval {
            busyPeriod = min(busyPeriod, watchdog / 2)
            idlePeriod = min(idlePeriod, watchdog / 2)
        }
        busyPeriod = max(busyPeriod, .milliseconds(50))
        idlePeriod = max(idlePeriod, busyPeriod)
        while !Task.isCancelled {
            let health = await pipeline.health
            let watching = await reporter.isWatching
            let period = health.isIdle && !watching ? idlePeriod : busyPeriod
            await reporter.recheck()
            await reporter.flushStatus()
            journal?.flushSuppressed()
            if notifier.watchdogInterval != nil, isHealthy(health) {
                notifier.watchdog()
            }
            do { try await Task.sleep(for: period) } catch { return }
        }
    }

    /// The watchdog's rule: no sealed chunk is waiting for the buffer to take it, and the tick
    /// loop ran within ``tickStaleness`` or, idle, has nothing periodic to do (the pipeline
    /// answered the health query: it is not hung).
    public static func isHealthy(_ health: RecordingPipeline.Health, now: ContinuousClock.Instant = .now) -> Bool {
        guard !health.isShutDown, health.bufferError == nil else { return false }
        if health.isIdle { return true }
        guard let last = health.lastTickAt else { return false }
        return now - last <= tickStaleness
    }
}
