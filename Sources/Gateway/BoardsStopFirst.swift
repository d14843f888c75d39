import Basics
import Logging
import ServiceLifecycle

/// The first thing a graceful shutdown (SIGTERM) does: every board's stop (sensors off, `FE 06`,
/// `Disconnect` asked) and, beside it, the seal's wait for the boards' last samples; the
/// gateway's other services (control API, sync, the daemon's own) begin stopping only once
/// every board's stop has asked for its link's end (``BoardService/linksEnding(within:)``),
/// so their stops do not take the CPU from the boards' commands on a starved machine (issue 18
/// §2.7: in the real-BlueZ VM at load 8-12 `Disconnect` went out 1.2-3.0 s after the signal
/// while the control API's and sync's stops ran beside it). The rest of the boards' stop (the
/// links' close, scanning off) and the seal then run beside the other services' stops.
///
/// The last service of ``Gateway/services(adding:onRunning:)``, so a `ServiceGroup` shuts it
/// down first and the others only after it has returned. It waits at most ``longestHold``, so a
/// board stop that hangs cannot keep the other services from stopping.
struct BoardsStopFirst: Service, CustomStringConvertible {
    /// The longest the other services wait for the boards' stop to ask for the links' end:
    /// the whole stop's budget (issue 18 §2.7: 2 s); past it holding them back gains nothing.
    static let longestHold: Duration = .seconds(2)

    let boards: BoardService
    let recording: RecordingService
    let logger: Logger

    var description: String { "BoardsStopFirst" }

    func run() async throws {
        // Cancelled instead (the group's limit passed): the boards' own service ends them.
        guard (try? await gracefulShutdown()) != nil else { return }
        let began = ContinuousClock.now
        // Announced to the pipeline before any board stops: a board's stop taken before the
        // seal's wait begins holds its chunk for the session end's one commit
        // (RecordingPipeline.shutdownBegins()). Then the boards' stop, then the seal's wait.
        recording.announceShutdown()
        boards.beginStopping()
        recording.beginSealing()
        let asked = await boards.linksEnding(within: Self.longestHold)
        let took = (ContinuousClock.now - began).roundedMilliseconds
        if asked {
            logger.info("shutdown: every board's link end asked \(took) ms after the shutdown began; the other services stop now")
        } else {
            logger.warning("shutdown: the boards' stop has not asked for every link's end after \(took) ms; the other services stop beside it")
        }
    }
}
