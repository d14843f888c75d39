import GNSS
import Logging
import ServiceLifecycle

/// The fix source's lifetime as a service. Sources reconnect by themselves (serial, TCP,
/// gpsd); a source that cannot be used at all (its stream throws) is retried with a growing
/// pause; one whose input ended (a replayed file) leaves the gateway running without fixes.
public struct GNSSService: Service, CustomStringConvertible {
    /// The source (nil: no receiver configured; the service just waits for shutdown).
    public let source: (any FixSource)?
    private let pipeline: RecordingPipeline
    private let logger: Logger
    private let retryPauses: [Duration]

    /// A service feeding `source`'s fixes to `pipeline`.
    public init(source: (any FixSource)?, pipeline: RecordingPipeline, logger: Logger,
                retryPauses: [Duration] = [.seconds(1), .seconds(2), .seconds(5), .seconds(10), .seconds(30)]) {
        self.source = source
        self.pipeline = pipeline
        self.logger = logger
        self.retryPauses = retryPauses.isEmpty ? [.seconds(5)] : retryPauses
    }

    public var description: String { "GNSSService" }

    public func run() async throws {
        guard let source else {
            logger.info("no GNSS source configured: points will have no location")
            try? await gracefulShutdown()
            return
        }
        let pipeline = pipeline
        var failures = 0
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            logger.info("reading fixes from \(source.description)")
            let error = await cancelWhenGracefulShutdown { await pipeline.consume(fixes: source.fixes()) }
            if Task.isCancelled || Task.isShuttingDownGracefully { return }
            guard let error else {
                await pipeline.report(area: "gnss", "\(source.description) ended; recording goes on without new fixes")
                try? await gracefulShutdown()
                return
            }
            let pause = retryPauses[min(failures, retryPauses.count - 1)]
            failures += 1
            await pipeline.report(area: "gnss", "\(source.description) failed: \(error); retrying in \(pause)")
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: pause) }
        }
    }
}
