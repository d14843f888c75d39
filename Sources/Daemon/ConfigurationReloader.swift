import Gateway
import GatewayConfig
import Logging
import ServiceSupport

/// SIGHUP: re-reads the configuration file and applies what can change while running (log
/// level, hazard catalogue, session mode, button toggle). A file with errors is rejected as
/// a whole (the old configuration stays); changes that need a restart are named in a warning.
public actor ConfigurationReloader {
    private let path: String?
    private let paths: ServicePaths
    private let pipeline: RecordingPipeline
    private let level: ReloadableLogLevel
    private let notifier: SystemdNotifier
    private let logger: Logger
    private var current: GatewayConfiguration

    public init(path: String?, paths: ServicePaths, initial: GatewayConfiguration, pipeline: RecordingPipeline,
                level: ReloadableLogLevel, notifier: SystemdNotifier, logger: Logger) {
        self.path = path
        self.paths = paths
        self.current = initial
        self.pipeline = pipeline
        self.level = level
        self.notifier = notifier
        self.logger = logger
    }

    /// The configuration in force.
    public var configuration: GatewayConfiguration { current }

    /// Reloads; returns true when the new file was applied.
    @discardableResult
    public func reload() async -> Bool {
        notifier.reloading(status: "reloading the configuration")
        let fresh: GatewayConfiguration
        do {
            fresh = try ConfigurationLoader.load(path: path, paths: paths)
        } catch {
            for issue in error.issues { logger.error("\(issue.description)") }
            logger.error("configuration not reloaded: \(error.issues.count) problem(s); the previous configuration stays in force")
            return false
        }
        let restartNeeded = Self.changesNeedingRestart(from: current, to: fresh)
        if !restartNeeded.isEmpty {
            logger.warning("changed settings that take effect only after a restart (systemctl restart mwgated): \(restartNeeded.joined(separator: ", "))")
        }
        level.current = Logger.Level(fresh.log.level)
        await pipeline.apply(LiveSettings(fresh))
        current = fresh
        logger.event(.configReloaded, "configuration reloaded (log level \(fresh.log.level.rawValue), session mode \(fresh.session.mode.rawValue), \(fresh.hazards.names.count) hazards)")
        return true
    }

    /// The sections that differ and cannot be applied while running.
    public static func changesNeedingRestart(from old: GatewayConfiguration, to new: GatewayConfiguration) -> [String] {
        var changed: [String] = []
        if old.boards != new.boards { changed.append("[boards]") }
        if old.gnss != new.gnss { changed.append("[gnss]") }
        if old.buffer != new.buffer { changed.append("[buffer]") }
        if old.sink != new.sink { changed.append("[sink]") }
        if old.hazards.intensityScale != new.hazards.intensityScale { changed.append("hazards.intensity_scale") }
        return changed
    }
}
