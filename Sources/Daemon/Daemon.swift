import Basics
import ControlServer
import Foundation
import Gateway
import GatewayConfig
import Logging
import ServiceLifecycle
import ServiceSupport
import UnixSignals
import Uplink

/// mwgated's run logic, apart from argument parsing: configuration, logging, assembly,
/// readiness and shutdown. Returns the process exit status.
public enum Daemon {
    /// `EX_CONFIG` (sysexits.h): the configuration is wrong.
    public static let exitConfigurationError: Int32 = 78
    /// The gateway could not start (BlueZ, the buffer, the state directory).
    public static let exitStartFailure: Int32 = 1
    /// Environment variable naming a journald-protocol datagram socket to log to instead of
    /// the automatic choice (tests and containers with a journal at a private path).
    public static let journalSocketVariable = "MWGATE_JOURNAL_SOCKET"
    /// Longest graceful shutdown before the remaining services are cancelled (cancelled
    /// recording still seals, at once). Longer than the seal's wait for the boards' last
    /// samples (`RecordingService.boardsStopSafetyLimit`, 15 s), which a shorter limit would
    /// cut into and drop accepted samples; shorter than systemd's `TimeoutStopSec=30s`, so a
    /// hung service is cancelled and the session sealed before systemd's SIGKILL. A normal
    /// stop ends in about 1-2.5 s; this bounds only a hang.
    public static let shutdownLimit: Duration = .seconds(20)

    /// What the command line asks for.
    public struct Options: Sendable {
        /// The configuration file (nil: `$CONFIGURATION_DIRECTORY/mwgated.toml`, optional).
        public var configurationPath: String?
        /// Validate the configuration and exit.
        public var checkOnly: Bool
        /// D-Bus address of BlueZ's bus (nil: the system bus, honouring `DBUS_SYSTEM_BUS_ADDRESS`).
        public var busAddress: String?

        public init(configurationPath: String? = nil, checkOnly: Bool = false, busAddress: String? = nil) {
            self.configurationPath = configurationPath
            self.checkOnly = checkOnly
            self.busAddress = busAddress
        }
    }

    /// `--check-config`: prints every problem (`file:line: key: message`) on stderr; 0 or 78.
    public static func checkConfiguration(_ options: Options, environment: [String: String] = ProcessEnvironment.current) -> Int32 {
        let paths = ServicePaths(environment: environment)
        let file = options.configurationPath ?? paths.configurationFile
        do {
            let configuration = try ConfigurationLoader.load(path: options.configurationPath, paths: paths)
            _ = try GatewaySettings(configuration: configuration, busAddress: options.busAddress)
            let exists = FileManager.default.fileExists(atPath: file)
            print(exists ? "\(file): configuration is valid" : "\(file): not present; the built-in defaults apply")
            return 0
        } catch let errors as ConfigurationErrors {
            for issue in errors.issues { FileHandle.standardError.write(Data((issue.description + "\n").utf8)) }
            return exitConfigurationError
        } catch {
            FileHandle.standardError.write(Data("\(file): \(error)\n".utf8))
            return exitConfigurationError
        }
    }

    /// Runs the daemon until SIGTERM/SIGINT, then ends the process with its exit status
    /// (mwgated's main), with the buffer still open: closing it would first checkpoint its
    /// WAL into the database (up to 4 MiB of it, and two fsyncs), which the
    /// real-BlueZ VM measured at 0.3-1.0 s after the last log line of a stop that issue 18
    /// wants over within 2 s. Nothing is lost: every commit is already durable in the WAL
    /// (`synchronous=FULL`) and the next open reads it, as after a power loss.
    public static func runToExit(_ options: Options) async -> Never {
        exit(await run(options, atExit: { exit($0) }))
    }

    /// Runs the daemon until SIGTERM/SIGINT; returns the exit status.
    public static func run(_ options: Options, environment: [String: String] = ProcessEnvironment.current,
                           extraServices: @Sendable (Gateway, StatusReporter, Logger) async throws -> [any Service] = { _, _, _ in [] }) async -> Int32 {
        await run(options, environment: environment, extraServices: extraServices, atExit: nil)
    }

    /// ``run(_:environment:extraServices:)``; `atExit`, when given, gets the status of a
    /// daemon that ran and stopped while its buffer is still open, instead of the return.
    private static func run(_ options: Options, environment: [String: String] = ProcessEnvironment.current,
                            extraServices: @Sendable (Gateway, StatusReporter, Logger) async throws -> [any Service] = { _, _, _ in [] },
                            atExit: (@Sendable (Int32) -> Never)?) async -> Int32 {
        ProcessMemory.configure(environment: environment)
        let level = ReloadableLogLevel(.info)
        let output: JournalOutput = environment[journalSocketVariable].flatMap { $0.isEmpty ? nil : JournalOutput.native(socketPath: $0) }
            ?? .automatic(environment: environment)
        let journal = JournalWriter(identifier: "mwgated", output: output, limiter: RepeatLimiter())
        LoggingSystem.bootstrap { label in ReloadableLogHandler(label: label, writer: journal, level: level) }
        let logger = Logger(label: "mwgated")
        let notifier = SystemdNotifier(environment: environment)
        let started = ContinuousClock.now

        let paths = ServicePaths(environment: environment)
        let configuration: GatewayConfiguration
        let settings: GatewaySettings
        do {
            configuration = try ConfigurationLoader.load(path: options.configurationPath, paths: paths)
            settings = try GatewaySettings(configuration: configuration, busAddress: options.busAddress)
        } catch let errors as ConfigurationErrors {
            for issue in errors.issues { logger.error("\(issue.description)") }
            logger.critical("not starting: the configuration has \(errors.issues.count) problem(s)")
            notifier.status("configuration error: \(errors.issues.first?.description ?? "")")
            return exitConfigurationError
        } catch {
            let file = options.configurationPath ?? paths.configurationFile
            logger.error("\(file): \(error)")
            logger.critical("not starting: the configuration cannot be used")
            return exitConfigurationError
        }
        level.current = Logger.Level(configuration.log.level)
        logger.info("starting: state \(paths.stateDirectory), bus \(settings.busAddress ?? environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "system"), GNSS \(settings.gnss?.description ?? "none"), sink \(configuration.sink.kind.name)")

        let gateway: Gateway
        do {
            gateway = try await Gateway.assemble(settings: settings, logger: logger)
        } catch {
            logger.critical("cannot start: \(error)")
            notifier.status("cannot start: \(error)")
            return exitStartFailure
        }
        let reporter = StatusReporter(logger: logger, notifier: notifier)
        let reloader = ConfigurationReloader(path: options.configurationPath, paths: paths, initial: configuration,
                                             pipeline: gateway.pipeline, level: level, notifier: notifier, logger: logger)
        var extra: [any Service]
        do {
            // The upload service, fed from the gateway's buffer; it reads only sealed chunks,
            // so it stops beside the recording's last seal (the services stop together).
            let (sink, endpoint) = try SinkFactory.make(configuration.sink, credentials: CredentialStore(environment: environment), logger: logger)
            var syncConfiguration = SyncConfiguration()
            syncConfiguration.maxCommitsPerSecond = configuration.sink.maxRequestsPerSecond
            syncConfiguration.documentsPerCommit = configuration.sink.maxDocumentsPerRequest
            let sync = SyncService(store: gateway.store, sink: sink, configuration: syncConfiguration, logger: logger)
            logger.info("uploading to \(configuration.sink.kind.name) at \(endpoint)", metadata: ["sink": "\(configuration.sink.kind.name)"])
            extra = [SyncServiceRunner(sync: sync, sinkName: configuration.sink.kind.name, endpoint: endpoint, reporter: reporter, logger: logger)]
            extra += try await extraServices(gateway, reporter, logger)
        } catch {
            logger.critical("cannot start: \(error)")
            notifier.status("cannot start: \(error)")
            return exitStartFailure
        }
        let daemonService = DaemonService(pipeline: gateway.pipeline, reporter: reporter, notifier: notifier,
                                          reloader: reloader, journal: journal, logger: logger)
        let pipeline = gateway.pipeline
        // The status reporter is not a service: it must outlive the group's shutdown to report
        // the session the shutdown ends; the stream finishes when the pipeline has shut down,
        // and the run waits for it (a child task beside the group).
        let updates = await pipeline.statusUpdates()
        let readiness = ReadinessGate(parts: ["pipeline", "control API"]) {
            let status = await pipeline.status
            let elapsed = ContinuousClock.now - started
            let milliseconds = elapsed.roundedMilliseconds
            logger.notice("ready in \(milliseconds) ms: \(StatusReporter.statusLine(status))",
                          metadata: ["startup_ms": "\(milliseconds)"])
            notifier.ready(status: StatusReporter.statusLine(status))
        }
        // The control API on the same bus as BlueZ (the system bus, or --bus-address).
        let control = ControlServer(gateway: gateway, sync: extra.compactMap { $0 as? any SyncControl }.first,
                                    busAddress: settings.busAddress, logger: logger) { _ in
            await readiness.arrived("control API")
        }
        let services = gateway.services(adding: extra + [control, daemonService]) {
            await readiness.arrived("pipeline")
        }
        var groupConfiguration = ServiceGroupConfiguration(services: services, logger: logger)
        groupConfiguration.gracefulShutdownSignals = [.sigterm, .sigint]
        groupConfiguration.maximumGracefulShutdownDuration = shutdownLimit
        let group = ServiceGroup(configuration: groupConfiguration)
        let failed = await withTaskGroup(of: Void.self) { tasks in
            tasks.addTask {
                for await status in updates { await reporter.observe(status) }
            }
            do {
                try await group.run()
                return false
            } catch {
                tasks.cancelAll()
                logger.critical("stopped with an error: \(error)")
                return true
            }
        }
        if failed { return exitStartFailure }
        logger.notice("stopped")
        journal.flushSuppressed()
        if let atExit { withExtendedLifetime(gateway.store) { atExit(0) } }
        return 0
    }
}
