import Boards
import Synchronization

/// Board events that reached the gateway and wait for the ``RecordingPipeline`` to take them.
///
/// The pipeline runs on ``RecordingThread``, and every hand-over from the cooperative pool to
/// that thread wakes it (an eventfd write and an epoll return, then the switch back). Handing
/// it each batch of the boards' notifications (four boards, four batches a second each) cost
/// about 13 % more CPU per sample than when the pipeline ran on the pool. So the board events
/// are held here instead, and while a session records, the pipeline's own tick (every 250 ms,
/// on that thread already) takes them: no wake-up for the events at all. While nothing ticks
/// at that pace (idle, or ticking only for the upload backlog), the first event held wakes
/// the pipeline, so a button press or a board's state change is taken at once. A flash-log page
/// wakes it while the ticks take the events too: the board waits at each page's end for its
/// answer (issue 21), and a page that waited for the next tick (125 ms on average) held every
/// readout at about a third of what the board and the link carried (mwsim at 10,000
/// notifications/s: 3,631 entries/s through mwgated, 13,023 through bleak beside it; 15,433
/// with the wake).
///
/// A board's state change and, after a `streaming` state, the first batch with samples wake
/// the pipeline even while the ticks take the events: the status says a board
/// streams again, and the journal that it is back, once its first samples are in, not up to a
/// tick later (a quarter of the reconnect's time in the real-BlueZ VM, issue 18 §3). A few
/// wake-ups a link, not one a batch.
///
/// The pipeline takes what is held before anything else it does (a tick, a fix, a command, a
/// status read), so events are handled in the order they arrived relative to those.
///
/// Bounded: at ``capacity`` batches the feeder waits for the pipeline to take them (a commit
/// stuck on a slow disk), and the boards' own streams fill behind it, where their gauges see it.
final class HeldBoardEvents: Sendable {
    /// What the feeder should do after ``hold(_:)``.
    enum Hand: Equatable, Sendable {
        /// Nothing: a tick, or a wake already asked for, takes the batch.
        case held
        /// Wake the pipeline to take what is held (nothing ticks at the recording pace).
        case wake
        /// Wait until the pipeline has taken what is held: ``capacity`` batches wait.
        case full
    }

    /// The most batches held before the feeder waits for the pipeline: about 16 s of four
    /// boards' batches at the default 250 ms notification grouping, 640 ms of ungrouped ones.
    static let capacity = 256

    private struct State {
        var batches: [[BoardEvent]] = []
        var takenByTicks = false
        var wakeAsked = false
        /// A board was reported streaming: the next batch with samples wakes.
        var wakeForSamples = false
    }

    private let state = Mutex(State())

    /// Holds `batch`; says whether the pipeline must be woken or waited for.
    func hold(_ batch: [BoardEvent]) -> Hand {
        state.withLock { state in
            state.batches.append(batch)
            if state.batches.count >= Self.capacity { return .full }
            let samples = batch.contains(where: \.isSample)
            let urgent = batch.contains(where: \.isStateChange) || (state.wakeForSamples && samples)
                || batch.contains(where: \.awaitsAnswer)
            state.wakeForSamples = batch.contains(where: \.isStreamingState) || (state.wakeForSamples && !samples)
            if state.wakeAsked || (state.takenByTicks && !urgent) { return .held }
            state.wakeAsked = true
            return .wake
        }
    }

    /// Everything held, oldest first; nothing is held afterwards.
    func takeAll() -> [[BoardEvent]] {
        state.withLock { state in
            state.wakeAsked = false
            return Self.removeAll(&state.batches)
        }
    }

    /// Whether the pipeline's ticks take the events (no wake-up per event). Turning it off
    /// returns what is held, for the caller to take now: no event is left waiting for a tick
    /// that will not come.
    func setTakenByTicks(_ taken: Bool) -> [[BoardEvent]] {
        state.withLock { state in
            state.takenByTicks = taken
            guard !taken else { return [] }
            state.wakeAsked = false
            return Self.removeAll(&state.batches)
        }
    }

    private static func removeAll(_ batches: inout [[BoardEvent]]) -> [[BoardEvent]] {
        var taken: [[BoardEvent]] = []
        swap(&taken, &batches)
        return taken
    }
}

private extension BoardEvent {
    var isSample: Bool {
        if case .sample = kind { return true }
        return false
    }

    var isStateChange: Bool {
        if case .state = kind { return true }
        return false
    }

    var isStreamingState: Bool {
        if case .state(.streaming) = kind { return true }
        return false
    }

    /// Whether the board waits for the pipeline's answer to it (a flash-log page).
    var awaitsAnswer: Bool {
        if case .flashLogDownloaded = kind { return true }
        return false
    }
}
