import Basics
import Logging
import ServiceLifecycle

/// The pipeline's clock as a service: ticks every 250 ms (fix waits, checkpoints ≤ 1 s,
/// clock synchronisation, backlog). On graceful shutdown (SIGTERM) or cancellation it shuts
/// the pipeline down: a recording session is stopped with trigger `shutdown`, so every
/// accepted sample is sealed and the session awaits its survey at the next start.
///
/// The seal begins at the shutdown's start (the gateway's services all begin stopping at once,
/// ``ServicesStoppingTogether``) or at ``beginSealing()``, and waits first for the
/// last samples of the boards streaming into the session: until the pipeline has taken each
/// such board's final state change, which its events reach only after every sample the board
/// delivered before it, so whatever is still queued in the boards' streams is drained into the
/// session first (bounded by the streams' capacities, not by a time). ``boardsStopSafetyLimit``
/// only ends the wait for a board that never acknowledges its stop. The seal does not wait for
/// the other services' shutdown. With no board streaming into a
/// session (connecting, handshaking, idle) it seals at once. Services that read the buffer
/// (sync) may stop beside it: they read only sealed chunks.
public struct RecordingService: Service, CustomStringConvertible {
    /// The longest the seal waits for the boards' last samples: a safety net for a board that
    /// never acknowledges its stop, not a normal-path cut-off. A board's stop is bounded at
    /// about 1.1 s on its link (`BlueZBoardTransport`: 700 ms for the stop commands, 400 ms
    /// for the disconnect), but the pipeline may still be working through the samples queued
    /// before it (a loaded debug VM needed 2.1 s; the fleet's stream holds ~20 s of four boards'
    /// notifications), and every one of them was already accepted. 15 s covers that many times
    /// over and, with the daemon's group limit (`Daemon.shutdownLimit`, 20 s), still seals and
    /// exits well inside systemd's `TimeoutStopSec=30s` (systemd/mwgated.service), after which
    /// a SIGKILL would leave the session to startup recovery from its checkpoints.
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

    /// Starts the shutdown's seal now, ahead of the shutdown: it waits for the boards' last
    /// samples, then seals.
    public func beginSealing() {
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
                let waitBegan = ContinuousClock.now
                if !Task.isCancelled, await !Self.boardsStopped(pipeline, within: Self.boardsStopSafetyLimit) {
                    logger.warning("recording: a board still streams \(Self.boardsStopSafetyLimit) after the seal began (it ignored its stop); sealing without its later samples")
                }
                // Where a stop's time goes (issue 18: within 2 s): this wait is the boards' stop
                // plus the pipeline's work on what they delivered before it.
                logger.debug("recording: the boards' last samples were in \((ContinuousClock.now - waitBegan).roundedMilliseconds) ms after the seal began")
                group.cancelAll()
            }
        } onGracefulShutdown: {
            sealRequest.request()
        }
        logger.info("recording: shutting down (sealing open chunks)")
        let sealBegan = ContinuousClock.now
        await pipeline.shutdown()
        logger.debug("recording: sealed in \((ContinuousClock.now - sealBegan).roundedMilliseconds) ms")
        // Sealed early (beginSealing()): the service still ends only at the shutdown, since a
        // service that returns before it is asked to ends the group with an error.
        try? await gracefulShutdown()
    }

    /// Whether every board that streams into the recording session has stopped streaming
    /// within `limit` (at once when none does: connecting, handshaking, no session).
    private static func boardsStopped(_ pipeline: RecordingPipeline, within limit: Duration) async -> Bool {
        guard await pipeline.isWaitingForBoardSamples else { return true }
        await pipeline.handleBoardEventsAsTheyArrive()
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in pipeline.streamingBoardsChanged where await !pipeline.isWaitingForBoardSamples {
                    return true
                }
                return false
            }
            group.addTask {
                try? await Task.sleep(for: limit)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }
}
