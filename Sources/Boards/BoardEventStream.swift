/// The events of a board session (or of every board of a ``BoardManager``), in order.
///
/// Events travel in batches, one element of ``batches`` per group of notifications the link
/// handed on (see ``BoardSessionOptions/notificationCoalescing``), so a stream at hundreds
/// of notifications a second wakes its consumer a few times a second rather than once per
/// notification. Iterating the stream itself yields the events one by one from those
/// batches; a consumer that handles many events at once can iterate ``batches`` instead.
public struct BoardEventStream: AsyncSequence, Sendable {
    public typealias Element = BoardEvent
    public typealias Failure = Never

    /// The events in the groups they arrived in; never an empty group.
    public let batches: AsyncStream<[BoardEvent]>

    /// A stream over `batches`.
    public init(batches: AsyncStream<[BoardEvent]>) {
        self.batches = batches
    }

    /// A stream and the continuation that feeds it (unbounded buffer).
    public static func makeStream() -> (stream: BoardEventStream, continuation: AsyncStream<[BoardEvent]>.Continuation) {
        let (batches, continuation) = AsyncStream.makeStream(of: [BoardEvent].self, bufferingPolicy: .unbounded)
        return (BoardEventStream(batches: batches), continuation)
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(batches: batches.makeAsyncIterator())
    }

    /// Yields the events of each batch in turn, waiting only when a batch is used up.
    public struct Iterator: AsyncIteratorProtocol {
        private var batches: AsyncStream<[BoardEvent]>.Iterator
        private var current: [BoardEvent] = []
        private var index = 0

        init(batches: AsyncStream<[BoardEvent]>.Iterator) {
            self.batches = batches
        }

        public mutating func next() async -> BoardEvent? {
            while index >= current.count {
                guard let batch = await batches.next() else { return nil }
                current = batch
                index = 0
            }
            defer { index += 1 }
            return current[index]
        }

        public mutating func next(isolation actor: isolated (any Actor)?) async -> BoardEvent? {
            while index >= current.count {
                guard let batch = await batches.next(isolation: actor) else { return nil }
                current = batch
                index = 0
            }
            defer { index += 1 }
            return current[index]
        }
    }
}
