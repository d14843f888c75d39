import BlueZ
import Boards

/// Runs `session` with its events recorded, gives it to `body`, then stops it and waits for
/// its run and its event forwarder to end (also when `body` throws): the in-memory suites'
/// one way to drive a board session.
func runRecorded(_ session: BoardSession, _ body: (BoardSession, EventRecorder) async throws -> Void) async throws {
    let recorder = EventRecorder()
    let forwarder = recordEvents(session.events, into: recorder)
    async let running: Void = session.run()
    var failure: (any Error)?
    do { try await body(session, recorder) } catch { failure = error }
    await session.stop()
    await running
    await forwarder.value
    if let failure { throw failure }
}

/// The transport's `index`-th link (from 0), once the session has opened it.
func openedLink(_ transport: InMemoryBoardTransport, _ index: Int) async throws -> InMemoryLink {
    try await waitUntil("link \(index + 1)") { await transport.links.count > index }
    return await transport.links[index]
}
