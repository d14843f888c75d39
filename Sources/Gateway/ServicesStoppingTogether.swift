import Basics
import Logging
import ServiceLifecycle
import Synchronization

/// Services that start together and, at a graceful shutdown, all begin stopping at once,
/// instead of one after another as a `ServiceGroup` stops its services (in reverse order, each
/// waiting for the one before it). Each runs as a child task, which inherits this service's
/// graceful shutdown, so a SIGTERM reaches every one of them at the same moment and the
/// shutdown takes as long as the slowest part instead of the sum of all (the real-BlueZ VM:
/// control API 0.63 s, then sync 1.0 s, then the rest, one after another: issue 18 asks for 2 s).
///
/// For services whose stops do not depend on each other's end; an order that matters within
/// them is kept by the services themselves (recording's seal waits for the boards' last
/// samples: ``RecordingService``). As in a `ServiceGroup`, one that fails, or returns before the
/// shutdown, ends the others (cancelled) and this service with its error. Logs when each one
/// stopped, counted from the shutdown's start (debug), and once all have, which took longest.
public struct ServicesStoppingTogether: Service, CustomStringConvertible {
    private let services: [any Service]
    private let logger: Logger

    /// `services`, each named in the log by its `description` (`CustomStringConvertible`).
    public init(_ services: [any Service], logger: Logger) {
        self.services = services
        self.logger = logger
    }

    public var description: String { "ServicesStoppingTogether(\(services.map(Self.name).joined(separator: ", ")))" }

    public func run() async throws {
        let logger = logger
        let clock = ContinuousClock()
        let shutdownBegan = ShutdownMoment()
        try await withGracefulShutdownHandler {
            try await withThrowingTaskGroup(of: (String, Duration?).self) { group in
                for service in services {
                    let name = Self.name(service)
                    group.addTask {
                        try await service.run()
                        // A `ServiceGroup` calls a long-running service's early end a failure.
                        guard Task.isShuttingDownGracefully || Task.isCancelled else { throw ServiceGroupError.serviceFinishedUnexpectedly(service: name) }
                        return (name, shutdownBegan.elapsed(clock))
                    }
                }
                var stopTimes: [(String, Duration)] = []
                while let (name, took) = try await group.next() {
                    let took = took ?? .zero
                    stopTimes.append((name, took))
                    logger.debug("shutdown: \(name) stopped \(took.roundedMilliseconds) ms after the shutdown began")
                }
                if let slowest = stopTimes.max(by: { $0.1 < $1.1 }) {
                    logger.info("shutdown: \(stopTimes.count) services stopped together in \(slowest.1.roundedMilliseconds) ms (the slowest: \(slowest.0))")
                }
            }
        } onGracefulShutdown: {
            shutdownBegan.mark(clock.now)
        }
    }

    private static func name(_ service: any Service) -> String {
        (service as? any CustomStringConvertible)?.description ?? String(describing: type(of: service))
    }

}

/// When the graceful shutdown began, set once from its handler (any thread) and read by the
/// services' tasks as they end.
private final class ShutdownMoment: Sendable {
    private let instant = Mutex<ContinuousClock.Instant?>(nil)

    func mark(_ now: ContinuousClock.Instant) {
        instant.withLock { if $0 == nil { $0 = now } }
    }

    func elapsed(_ clock: ContinuousClock) -> Duration? {
        instant.withLock { $0 }.map { clock.now - $0 }
    }
}
