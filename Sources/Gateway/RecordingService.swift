import Logging
import ServiceLifecycle

/// The pipeline's clock as a service: ticks every 250 ms (fix waits, checkpoints ≤ 1 s,
/// clock synchronisation, backlog). On graceful shutdown (SIGTERM) or cancellation it shuts
/// the pipeline down: a recording session is stopped with trigger `shutdown`, so every
/// accepted sample is sealed and the session awaits its survey at the next start.
///
/// Place it after the board and GNSS services in a `ServiceGroup` (services are shut down
/// in reverse order) so recording is sealed before the board service ends (the daemon starts
/// stopping the boards at the signal, ``BoardService/beginStopping()``: what their links
/// deliver until they close is still recorded); services that read the buffer (sync) go
/// after it.
public struct RecordingService: Service, CustomStringConvertible {
    /// The pipeline ticked.
    public let pipeline: RecordingPipeline
    private let logger: Logger
    private let onRunning: (@Sendable () async -> Void)?

    /// A service ticking `pipeline`; `onRunning` is called once ticking started (where
    /// readiness is signalled, e.g. sd_notify READY=1).
    public init(pipeline: RecordingPipeline, logger: Logger, onRunning: (@Sendable () async -> Void)? = nil) {
        self.pipeline = pipeline
        self.logger = logger
        self.onRunning = onRunning
    }

    public var description: String { "RecordingService" }

    public func run() async throws {
        let pipeline = pipeline
        await pipeline.tick()
        await onRunning?()
        await cancelWhenGracefulShutdown { await pipeline.runTicks() }
        logger.info("recording: shutting down (sealing open chunks)")
        await pipeline.shutdown()
    }
}
