import Synchronization

/// One subscriber's changes from ``BlueZClient/changes(for:backlogLimit:)``, in order, with at
/// most `backlogLimit` of them waiting unread.
///
/// A reader that falls further behind does not make the client hold more: the change that
/// would exceed the limit is replaced by one ``BlueZChange/missedChanges`` after the waiting
/// ones, and every later change is left out until the reader takes that mark. Nothing a board
/// depends on is lost that way, because each change only announces what the client's mirror
/// already holds: at the mark the reader re-reads what it follows (``BlueZClient/facts(for:preferredAdapter:)``,
/// ``BlueZClient/devices()``) and so sees the result of every change left out. Only the
/// intermediate steps are gone (a link that dropped and came back meanwhile reads as up), and
/// the client says so on ``BlueZClient/lapses`` when the reader falls behind and again when it
/// has caught up, with how many changes were left out.
public struct BlueZChanges: AsyncSequence, Sendable {
    public typealias Element = BlueZChange
    public typealias Failure = Never

    private let changes: AsyncStream<BlueZChange>
    private let backlog: ChangeBacklog

    init(changes: AsyncStream<BlueZChange>, backlog: ChangeBacklog) {
        self.changes = changes
        self.backlog = backlog
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(changes: changes.makeAsyncIterator(), backlog: backlog)
    }

    /// Takes the changes one by one, telling the backlog each time, so it knows what waits.
    public struct Iterator: AsyncIteratorProtocol {
        private var changes: AsyncStream<BlueZChange>.Iterator
        private let backlog: ChangeBacklog

        init(changes: AsyncStream<BlueZChange>.Iterator, backlog: ChangeBacklog) {
            self.changes = changes
            self.backlog = backlog
        }

        public mutating func next() async -> BlueZChange? {
            guard let change = await changes.next() else { return nil }
            backlog.taken(change)
            return change
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> BlueZChange? {
            guard let change = await changes.next(isolation: actor) else { return nil }
            backlog.taken(change)
            return change
        }
    }
}

/// A reader of ``BlueZClient/changes(for:backlogLimit:)`` fell behind, or caught up after it had.
public struct BlueZChangesLapse: Sendable, Hashable, CustomStringConvertible {
    /// Who reads the changes (as the reader named itself, e.g. "board D1:5E:AA:01:02:03").
    public let subscriber: String
    /// How many changes may wait unread.
    public let limit: Int
    /// Nil when the reader has just fallen behind; when it has caught up, how many changes
    /// were left out meanwhile.
    public let leftOut: Int?

    public init(subscriber: String, limit: Int, leftOut: Int?) {
        self.subscriber = subscriber
        self.limit = limit
        self.leftOut = leftOut
    }

    public var description: String {
        if let leftOut {
            return "\(subscriber) caught up with BlueZ: \(leftOut) change(s) were left out while it was behind; it re-read BlueZ's state, which holds their result"
        }
        return "\(subscriber) fell behind BlueZ's changes: \(limit) waited unread; the later ones are left out until it re-reads BlueZ's state (its result is kept, intermediate steps are not)"
    }
}

/// What one subscriber has waiting: the changes it has not read and whether the
/// ``BlueZChange/missedChanges`` mark is among them. One producer (the client) offers changes;
/// the subscriber's iterator reports what it took.
final class ChangeBacklog: Sendable {
    let subscriber: String
    let limit: Int
    let stream: AsyncStream<BlueZChange>
    private let continuation: AsyncStream<BlueZChange>.Continuation
    private let lapses: AsyncStream<BlueZChangesLapse>.Continuation
    private let state = Mutex(State())

    private struct State {
        /// Changes yielded and not yet taken, the mark included.
        var waiting = 0
        /// The mark is waiting: everything offered is left out until it is taken.
        var behind = false
        var leftOut = 0
    }

    /// What became of an offered change.
    enum Outcome: Equatable {
        case delivered
        /// The reader fell behind with this change: the mark was queued in its place.
        case fellBehind
        case leftOut
    }

    init(subscriber: String, limit: Int, lapses: AsyncStream<BlueZChangesLapse>.Continuation) {
        self.subscriber = subscriber
        self.limit = max(limit, 1)
        self.lapses = lapses
        // One place more than the limit, for the mark: the stream itself never drops.
        (stream, continuation) = AsyncStream.makeStream(of: BlueZChange.self, bufferingPolicy: .bufferingOldest(self.limit + 1))
    }

    /// Queues `change`, or the mark in its place, or leaves it out (see ``BlueZChanges``).
    @discardableResult
    func offer(_ change: BlueZChange) -> Outcome {
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
            continuation.yield(.missedChanges)
            lapses.yield(BlueZChangesLapse(subscriber: subscriber, limit: limit, leftOut: nil))
        case .leftOut: break
        }
        return outcome
    }

    /// The reader took `change`.
    func taken(_ change: BlueZChange) {
        let caughtUp = state.withLock { state -> Int? in
            state.waiting -= 1
            guard change == .missedChanges, state.behind else { return nil }
            state.behind = false
            defer { state.leftOut = 0 }
            return state.leftOut
        }
        if let caughtUp { lapses.yield(BlueZChangesLapse(subscriber: subscriber, limit: limit, leftOut: caughtUp)) }
    }

    func finish() { continuation.finish() }

    /// Runs `handler` when the reader's stream ends (dropped or finished).
    func onTermination(_ handler: @escaping @Sendable () -> Void) {
        continuation.onTermination = { _ in handler() }
    }
}
