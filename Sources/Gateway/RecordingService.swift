import Basics
import Logging
import ServiceLifecycle

/// The pipeline's clock as a service: ticks every 250 ms (fix waits, checkpoints ≤ 1 s,
/// clock synchronisation, backlog). On graceful shutdown (SIGTERM) or cancellation it shuts
/// the pipeline down: a recording session is stopped with trigger `shutdown`, so every
/// accepted sample is sealed and the session awaits its survey at the next start.
///
/// The seal begins at ``beginSealing()`` (a graceful shutdown's first step, beside the boards'
/// stop: ``BoardsStopFirst``) or at its own shutdown, and waits first for the
/// last samples of the boards streaming into the session: the pipeline seals in the step that
/// takes the last such board's final state change (``RecordingPipeline/sealOnceBoardsStop()``),
/// which its events reach only after every sample the board delivered before it, so whatever is
/// still queued in the boards' streams is drained into the session first (bounded by the
/// streams' capacities, not by a time). ``boardsStopSafetyLimit``
/// only ends the wait for a board that never acknowledges its stop. The seal does not wait for
/// the other services' shutdown. With no board streaming into a
/// session (connecting, handshaking, idle) it seals at once. Services that read the buffer
/// (sync) may stop beside it: they read only sealed chunks.
public struct RecordingService: Service, CustomStringConvertible {
    /// The longest the seal waits for the boards' last samples: a safety net for a board that
    /// never acknowledges its stop, not a normal-path cut-off. A board's stop is short on its
    /// link (`BlueZBoardTransport`: the stop commands go without waiting for bluetoothd's
    /// answers, the notify's release waits at most 400 ms), but the pipeline may still be
    /// working through the samples queued before it (a loaded debug VM needed 2.1 s; the
    /// fleet's stream holds ~20 s of four boards' notifications), and every one of them was
    /// already accepted. 15 s covers that many times over and, with the daemon's group limit
    /// (`Daemon.shutdownLimit`, 20 s), still seals and exits well inside systemd's
    /// `TimeoutStopSec=30s` (systemd/mwgated.service), after which a SIGKILL would leave the
    /// session to startup recovery from its checkpoints.
    public static let boardsStopSafetyLimit: Duration = .seconds(15)

    /// The pipeline ticked.
    public let pipeline: RecordingPipeline
    private let logger: Logger
    private let onRunning: (@Sendable () async -> Void)?
    private let sealRequest = ShutdownRequest()

    /// A service ticking `pipeline`; `onRunning` is called once ticking started (where
    /// readiness is signalled, e.g. sd_notify READY=1).
    public init(pipeline: RecordingPipeline, logger: Logger, onRunning: (@Sendable () async -> Void)? = nil) {
        self.pipeline = pipeline
        self.logger = logger
        self.onRunning = onRunning
    }

    public var description: String { "RecordingService" }

    /// The shutdown begins: from now on a board's stop holds its last chunk for the session
    /// end's one commit, even before the seal's wait itself begins (``beginSealing()``).
    public func announceShutdown() {
        pipeline.shutdownBegins()
    }

    /// Starts the shutdown's seal now, ahead of the shutdown: it waits for the boards' last
    /// samples, then seals.
    public func beginSealing() {
        pipeline.shutdownBegins()
        sealRequest.request()
    }

    public func run() async throws {
        let pipeline = pipeline
        let sealRequest = sealRequest
        await pipeline.tick()
        await onRunning?()
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await pipeline.runTicks() }
                await sealRequest.awaitRequest()
                let sealBegan = ContinuousClock.now
                logger.info("recording: shutting down (sealing open chunks once the boards' last samples are in)")
                if !Task.isCancelled, await !Self.sealedOnceBoardsStopped(pipeline, within: Self.boardsStopSafetyLimit) {
                    logger.warning("recording: a board still streams \(Self.boardsStopSafetyLimit) after the seal began (it ignored its stop); sealing without its later samples")
                }
                // Sealed by now, unless cancelled or a board ignored its stop.
                await pipeline.shutdown()
                // Where a stop's time goes (issue 18: within 2 s): the boards' stop, the
                // pipeline's work on what they delivered before it, and the seal.
                logger.debug("recording: sealed \((ContinuousClock.now - sealBegan).roundedMilliseconds) ms after the seal began")
                group.cancelAll()
            }
        } onGracefulShutdown: {
            beginSealing()
        }
        // Cancelled before the seal was asked for: seal now.
        await pipeline.shutdown()
        // Sealed early (beginSealing()): the service still ends only at the shutdown, since a
        // service that returns before it is asked to ends the group with an error.
        try? await gracefulShutdown()
    }

    /// Whether the pipeline sealed within `limit` once every board that streams into the
    /// recording session stopped streaming (``RecordingPipeline/sealOnceBoardsStop()``; at once
    /// when none does: connecting, handshaking, no session).
    private static func sealedOnceBoardsStopped(_ pipeline: RecordingPipeline, within limit: Duration) async -> Bool {
        await pipeline.sealOnceBoardsStop()
        guard await !pipeline.isShutDown else { return true }
        return await trueWithin(limit) {
            for await _ in pipeline.streamingBoardsChanged where await pipeline.isShutDown {
                return true
            }
            return false
        }
    }
}
