import BlueZ
import Synchronization

/// Where a notify session's batches go: the stream of the link currently using the session,
/// or, while there is none (a session kept through a link drop, before the next link is
/// handed to the board's session), a bounded list handed to the next link's stream first.
///
/// A kept `StartNotify` session delivers from the moment bluetoothd attaches the new link,
/// which is before `Connect` returns: without the list those first samples would be lost.
final class NotificationSink: Sendable {
    private struct State {
        var stream: AsyncStream<[GattNotification]>.Continuation?
        var waiting: [[GattNotification]] = []
        var ended = false
        /// Notifications a full stream or list refused.
        var dropped = 0
    }

    private let state = Mutex(State())
    /// Batches held between links; past it the oldest are kept and the newest counted lost
    /// by ``GattBoardLink/notificationGauge`` (a link gone that long is not coming back soon).
    private let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// A batch from the session, in arrival order.
    func deliver(_ batch: [GattNotification]) {
        state.withLock { state in
            if let stream = state.stream {
                Self.yield(batch, to: stream, counting: &state)
            } else if !state.ended, state.waiting.count < limit {
                state.waiting.append(batch)
            } else {
                if !state.ended { state.dropped += batch.count }
                GattBoardLink.notificationGauge.record(AsyncStream<[GattNotification]>.Continuation.YieldResult.dropped(batch))
            }
        }
    }

    /// Notifications refused so far because the stream (or the list between links) was full.
    var dropped: Int { state.withLock { $0.dropped } }

    /// Sends everything from now on (after what waited, in order) to `stream`; a stream that
    /// is still attached is finished first. When the session already ended, `stream` is
    /// finished at once.
    func attach(_ stream: AsyncStream<[GattNotification]>.Continuation) {
        state.withLock { state in
            state.stream?.finish()
            for batch in state.waiting { Self.yield(batch, to: stream, counting: &state) }
            state.waiting.removeAll()
            if state.ended { stream.finish() } else { state.stream = stream }
        }
    }

    /// Yields `batch` to `stream`, recording the result in the gauge and counting its
    /// notifications in ``dropped`` when the full stream refused it.
    private static func yield(_ batch: [GattNotification], to stream: AsyncStream<[GattNotification]>.Continuation,
                              counting state: inout State) {
        let result = stream.yield(batch)
        if case .dropped = result { state.dropped += batch.count }
        GattBoardLink.notificationGauge.record(result)
    }

    /// Finishes the attached stream; what comes later waits for the next ``attach(_:)``.
    func detach() {
        state.withLock { state in
            state.stream?.finish()
            state.stream = nil
        }
    }

    /// The session is over: the attached stream finishes and nothing more is taken.
    func end() {
        state.withLock { state in
            state.ended = true
            state.stream?.finish()
            state.stream = nil
            state.waiting.removeAll()
        }
    }
}
