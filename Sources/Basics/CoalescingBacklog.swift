import Synchronization

/// A bounded queue of changes from one producer to one reader, for changes whose result the
/// producer also keeps (a mirror's objects): a reader that falls behind is not given more and
/// more to hold, and loses no result either.
///
/// At most ``limit`` changes wait unread. The change that would exceed it is replaced by
/// `mark` after the waiting ones, and every later change is left out until the reader takes
/// the mark; at the mark the reader re-reads the kept state, which holds the result of every
/// change left out (only the intermediate steps are gone). `onLapse` hears when the reader
/// falls behind (nil) and, once it took the mark, how many changes were left out, so the
/// owner can say so. The stream itself never drops.
public final class CoalescingBacklog<Element: Sendable & Equatable>: Sendable {
    /// How many changes may wait unread.
    public let limit: Int
    private let mark: Element
    private let stream: AsyncStream<Element>
    private let continuation: AsyncStream<Element>.Continuation
    private let onLapse: @Sendable (_ leftOut: Int?) -> Void
    private let state = Mutex(State())

    private struct State {
        /// Changes yielded and not yet taken, the mark included.
        var waiting = 0
        /// The mark waits: everything offered is left out until it is taken.
        var behind = false
        var leftOut = 0
    }

    /// What became of an offered change.
    public enum Outcome: Equatable, Sendable {
        case delivered
        /// The reader fell behind with this change: the mark was queued in its place.
        case fellBehind
        /// A mark already waits: the change was left out.
        case leftOut
    }

    /// A backlog of at most `limit` (at least 1) unread changes, `mark` standing for the ones left out.
    public init(limit: Int, mark: Element, onLapse: @escaping @Sendable (_ leftOut: Int?) -> Void = { _ in }) {
        self.limit = max(limit, 1)
        self.mark = mark
        self.onLapse = onLapse
        // One place more than the limit, for the mark.
        (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: .bufferingOldest(self.limit + 1))
    }

    /// The reader's side (one reader).
    public var changes: CoalescedChanges<Element> { CoalescedChanges(stream: stream, backlog: self) }

    /// Queues `change`, or the mark in its place, or leaves it out. One producer.
    @discardableResult
    public func offer(_ change: Element) -> Outcome {
        let outcome = state.withLock { state -> Outcome in
            if state.behind {
                state.leftOut += 1
                return .leftOut
            }
            state.waiting += 1
            guard state.waiting > limit else { return .delivered }
            state.behind = true
            state.leftOut = 1
            return .fellBehind
        }
        // Yielded outside the lock: the stream's termination handler may run in the yield.
        switch outcome {
        case .delivered: continuation.yield(change)
        case .fellBehind:
            continuation.yield(mark)
            onLapse(nil)
        case .leftOut: break
        }
        return outcome
    }

    /// The reader took `change`.
    fileprivate func taken(_ change: Element) {
        let caughtUp = state.withLock { state -> Int? in
            state.waiting -= 1
            guard state.behind, change == mark else { return nil }
            state.behind = false
            defer { state.leftOut = 0 }
            return state.leftOut
        }
        if let caughtUp { onLapse(caughtUp) }
    }

    /// Ends the reader's stream after what waits.
    public func finish() { continuation.finish() }

    /// Runs `handler` when the reader's stream ends (dropped or finished).
    public func onTermination(_ handler: @escaping @Sendable () -> Void) {
        continuation.onTermination = { _ in handler() }
    }
}

/// The reader's side of a ``CoalescingBacklog``: its changes in order, telling the backlog
/// each one taken, so it knows what waits.
public struct CoalescedChanges<Element: Sendable & Equatable>: AsyncSequence, Sendable {
    public typealias Failure = Never

    private let stream: AsyncStream<Element>
    private let backlog: CoalescingBacklog<Element>

    fileprivate init(stream: AsyncStream<Element>, backlog: CoalescingBacklog<Element>) {
        self.stream = stream
        self.backlog = backlog
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(changes: stream.makeAsyncIterator(), backlog: backlog)
    }

    /// Takes the changes one by one.
    public struct Iterator: AsyncIteratorProtocol {
        private var changes: AsyncStream<Element>.Iterator
        private let backlog: CoalescingBacklog<Element>

        fileprivate init(changes: AsyncStream<Element>.Iterator, backlog: CoalescingBacklog<Element>) {
            self.changes = changes
            self.backlog = backlog
        }

        public mutating func next() async -> Element? {
            guard let change = await changes.next() else { return nil }
            backlog.taken(change)
            return change
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> Element? {
            guard let change = await changes.next(isolation: actor) else { return nil }
            backlog.taken(change)
            return change
        }
    }
}
