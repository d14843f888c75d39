import Synchronization

/// What the boards' flash logs should do, from the ``RecordingPipeline`` to the boards (one
/// reader: ``BoardService``), in the order asked, with nothing dropped.
///
/// A stream that kept only the newest 64 dropped the oldest in a burst, and no demand can be
/// lost: without its `download` a gap's points waited until their wait ran out and were
/// committed unfilled, without its `confirmPage` a readout waited for the confirm for the rest
/// of the link, without its `finishFlashLog` a logged session's stop waited for a log never read
/// to the end. Instead, what waits is kept per board, one of each kind (a second `download`
/// while one waits asks for nothing more; a newer mark replaces the waiting one), so it is
/// bounded by the boards, not by the burst.
///
/// A board's waiting demands are taken page answer first (its confirm or decline: the board
/// waits on it; a decline must end the readout before a `download` can start the next), then
/// the session's finish, a drain, a download, a read of the streamed part, a trim, a mark. A
/// trim goes before a waiting mark:
/// it drops what the board's earlier mark counted, which the recorder had stored when it asked;
/// after the newer mark it would drop entries the recorder has not stored yet.
public final class BackfillDemands: AsyncSequence, Sendable {
    public typealias Element = BackfillDemand
    public typealias Failure = Never

    private struct Waiting {
        /// The answer to the page the board waits on: true confirms it, false declines it (the
        /// newer answer stands; the board sends no page before the last one is answered).
        var pageStored: Bool?
        var finish = false
        var drain = false
        var download = false
        var readStreamed = false
        var trim = false
        var mark: ContinuousClock.Instant?

        var isEmpty: Bool { pageStored == nil && !finish && !drain && !download && !readStreamed && !trim && mark == nil }

        /// Takes the first waiting demand of `board`.
        mutating func take(_ board: String) -> BackfillDemand? {
            if let stored = pageStored {
                pageStored = nil
                return stored ? .confirmPage(board) : .declinePage(board)
            }
            if finish { finish = false; return .finishFlashLog(board) }
            if drain { drain = false; return .drainFlashLog(board) }
            if download { download = false; return .download(board) }
            if readStreamed { readStreamed = false; return .readStreamedLog(board) }
            if trim { trim = false; return .trimFlashLog(board) }
            if let askedAt = mark { mark = nil; return .markFlashLog(board, askedAt: askedAt) }
            return nil
        }
    }

    private struct State {
        var waiting: [String: Waiting] = [:]
        /// Boards with demands waiting, the longest waiting first.
        var order: [String] = []
        var finished = false
    }

    private let state = Mutex(State())
    private let wakes: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation

    init() {
        (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for `demand` (nothing once ``finish()`` was called).
    func send(_ demand: BackfillDemand) {
        let added = state.withLock { state -> Bool in
            guard !state.finished else { return false }
            let board = demand.board
            var waiting = state.waiting[board] ?? Waiting()
            if waiting.isEmpty { state.order.append(board) }
            switch demand {
            case .confirmPage: waiting.pageStored = true
            case .declinePage: waiting.pageStored = false
            case .finishFlashLog: waiting.finish = true
            case .drainFlashLog: waiting.drain = true
            case .download: waiting.download = true
            case .readStreamedLog: waiting.readStreamed = true
            case .trimFlashLog: waiting.trim = true
            case .markFlashLog(_, let askedAt): waiting.mark = askedAt
            }
            state.waiting[board] = waiting
            return true
        }
        if added { wake.yield() }
    }

    /// No more demands: the reader gets those waiting, then the end.
    func finish() {
        state.withLock { $0.finished = true }
        wake.finish()
    }

    /// The next waiting demand: the first of the board that waits longest, which then goes
    /// behind the others (a board's burst does not hold up another's).
    private func take() -> BackfillDemand? {
        state.withLock { state in
            guard let board = state.order.first, var waiting = state.waiting[board], let demand = waiting.take(board) else { return nil }
            state.order.removeFirst()
            if waiting.isEmpty {
                state.waiting[board] = nil
            } else {
                state.waiting[board] = waiting
                state.order.append(board)
            }
            return demand
        }
    }

    /// Waits for the demands; ends after ``finish()`` once none waits.
    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Failure = Never
        let demands: BackfillDemands
        var wakes: AsyncStream<Void>.AsyncIterator

        public mutating func next() async -> BackfillDemand? {
            while true {
                if let demand = demands.take() { return demand }
                guard await wakes.next() != nil else { return demands.take() }
            }
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(demands: self, wakes: wakes.makeAsyncIterator())
    }
}

/// What a board's flash log should do (``RecordingPipeline/backfillDemand``).
public enum BackfillDemand: Hashable, Sendable {
    /// Download it: the board's points wait for a backfill.
    case download(String)
    /// Read the part of it the stream has stored (the newest entries stay): its log stays
    /// short while the stream is healthy (``SessionController/streamedLogReads(now:)``).
    case readStreamedLog(String)
    /// Delete the page it last reported: what the page holds is stored.
    case confirmPage(String)
    /// Keep the page it last reported: what the page holds is not stored (the store refused
    /// it). Its readout ends unconfirmed; the next `download` reads the page again.
    case declinePage(String)
    /// Note how many entries it holds (the recorder measures the stored stretch from `askedAt`).
    case markFlashLog(String, askedAt: ContinuousClock.Instant)
    /// Drop what the last mark counted: it is stored.
    case trimFlashLog(String)
    /// The session ends: stop its logged sensors and its log, and download the rest.
    case finishFlashLog(String)
    /// A stopped session waits for what the board logged while away: stop its log and read it
    /// out (also on a link where the flash log does not run).
    case drainFlashLog(String)

    /// The board it is for.
    public var board: String {
        switch self {
        case .download(let board), .readStreamedLog(let board), .confirmPage(let board), .declinePage(let board), .markFlashLog(let board, _), .trimFlashLog(let board),
             .finishFlashLog(let board), .drainFlashLog(let board):
            board
        }
    }
}
