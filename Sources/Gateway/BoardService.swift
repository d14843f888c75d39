import Basics
import BlueZ
import Boards
import Logging
import Recording
import ServiceLifecycle

/// The boards' lifetime as a service: adds the configured boards (or starts discovery),
/// feeds their events to the pipeline, starts and stops their sensors as the pipeline asks
/// (``RecordingPipeline/sensorDemand``), and on graceful shutdown (SIGTERM) stops every board
/// cleanly (sensors off, notifications off, disconnected) before returning. The stop begins
/// at ``beginStopping()`` (a graceful shutdown's first step, ``BoardsStopFirst``) or at its
/// own shutdown, whichever comes first. Cancellation (the service group's
/// shutdown limit passed) ends the sessions at once, without waiting for their stop commands.
public struct BoardService: Service, CustomStringConvertible {
    /// The fleet.
    public let manager: BoardManager
    private let pipeline: RecordingPipeline
    private let selection: GatewaySettings.BoardSelection
    private let logger: Logger
    private let stopRequest = ShutdownRequest()
    /// Made once every board's stop has asked for its link's end (``linksEnding(within:)``).
    private let linksEndAsked = ShutdownRequest()

    /// A service running `manager`'s boards into `pipeline`.
    public init(manager: BoardManager, selection: GatewaySettings.BoardSelection, pipeline: RecordingPipeline, logger: Logger) {
        self.manager = manager
        self.selection = selection
        self.pipeline = pipeline
        self.logger = logger
    }

    /// Starts stopping the boards now, ahead of the group's shutdown: their sensors go off and
    /// their links close while the other services run on.
    public func beginStopping() {
        stopRequest.request()
    }

    /// Returns once every board's stop (begun by the shutdown or ``beginStopping()``) has
    /// asked for its link's end: its stop commands written (or given up) and `Disconnect`
    /// asked, before the links' close; or once the boards' whole stop has ended, or `limit`
    /// passed (false), or the calling task is cancelled. One caller only.
    public func linksEnding(within limit: Duration) async -> Bool {
        let linksEndAsked = linksEndAsked
        return await trueWithin(limit) {
            await linksEndAsked.awaitRequest()
            return !Task.isCancelled
        }
    }

    public var description: String { "BoardService" }

    public func run() async throws {
        let manager = manager
        let client = manager.client
        let stopRequest = stopRequest
        let linksEndAsked = linksEndAsked
        let logger = logger
        let pipeline = pipeline
        await withTaskGroup(of: Void.self) { group in
            // BlueZ's changes flow and the sessions run while the boards are fed to the
            // pipeline; the manager's shutdown ends the manager, finishes its events and
            // closes the client.
            group.addTask { await client.run() }
            group.addTask { await manager.run() }
            // A reader of BlueZ's changes that fell behind (its intermediate changes left out,
            // their result re-read) is a problem worth the journal and the status.
            group.addTask {
                for await lapse in client.lapses { await pipeline.report(area: "bluez", lapse.description) }
            }
            // The stop, at the first request (or at once when cancelled).
            group.addTask {
                await stopRequest.awaitRequest()
                logger.info("stopping the boards (sensors off, disconnect)")
                let began = ContinuousClock.now
                await manager.shutdown(linksEnding: {
                    logger.debug("every board's stop commands are out and Disconnect asked, \((ContinuousClock.now - began).roundedMilliseconds) ms after the boards' stop began")
                    linksEndAsked.request()
                })
                linksEndAsked.request()
                logger.info("boards stopped in \((ContinuousClock.now - began).roundedMilliseconds) ms")
            }
            await withGracefulShutdownHandler {
                await withTaskCancellationHandler {
                    await runBoards()
                } onCancel: {
                    stopRequest.request()
                }
            } onGracefulShutdown: {
                stopRequest.request()
            }
        }
        // Stopped early (beginStopping()): the service still ends only at the shutdown, since
        // a service that returns before it is asked to ends the group with an error (exit 1).
        try? await gracefulShutdown()
    }

    /// Feeds the boards' events to the pipeline until they end (the manager shut down), and
    /// the pipeline's sensor and backfill demands to the boards meanwhile.
    private func runBoards() async {
        let manager = manager
        let pipeline = pipeline
        switch selection {
        case .addresses(let addresses):
            for address in addresses { await manager.add(address) }
            logger.info("running \(addresses.count) configured board(s): \(addresses.map(\.rawValue).joined(separator: ", "))")
        case .discovery(let allowList, let namePrefix):
            await manager.startDiscovery(BoardManager.Discovery(allowList: allowList, namePrefix: namePrefix))
            logger.info("discovering boards\(allowList.map { " (allow list: \($0.count) address(es))" } ?? "")")
        }
        await withTaskGroup(of: Void.self) { group in
            // Sensors on for a session, off after it (unless configured to stream).
            group.addTask {
                for await on in pipeline.sensorDemand { await manager.setSensors(on) }
            }
            // A board whose points wait for its flash log (a gap): download it.
            group.addTask {
                for await demand in pipeline.backfillDemand {
                    switch demand {
                    case .download(let board):
                        if let address = BluetoothAddress(board) { await manager.downloadFlashLog(address) }
                    case .readStreamedLog(let board):
                        if let address = BluetoothAddress(board) {
                            await manager.readStreamedFlashLog(address, leaving: SessionController.streamedLogLeftUnread)
                        }
                    case .confirmPage(let board):
                        if let address = BluetoothAddress(board) { await manager.confirmFlashLogPage(address) }
                    case .declinePage(let board):
                        if let address = BluetoothAddress(board) { await manager.declineFlashLogPage(address) }
                    case .markFlashLog(let board, let askedAt):
                        if let address = BluetoothAddress(board) { await manager.markFlashLogForTrim(address, askedAt: askedAt) }
                    case .trimFlashLog(let board):
                        if let address = BluetoothAddress(board) { await manager.trimFlashLog(address) }
                    case .finishFlashLog(let board):
                        if let address = BluetoothAddress(board) { await manager.finishFlashLog(address) }
                    case .drainFlashLog(let board):
                        if let address = BluetoothAddress(board) { await manager.drainFlashLog(address) }
                    }
                }
            }
            await pipeline.consume(boardEvents: manager.events)
            group.cancelAll()
        }
    }
}
