import Basics

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

    /// A stream and the continuation that feeds it, bounded at `gauge`'s capacity (the feeder
    /// records each yield's answer in it).
    public static func makeStream(gauge: StreamGauge)
        -> (stream: BoardEventStream, continuation: AsyncStream<[BoardEvent]>.Continuation) {
        let (batches, continuation) = AsyncStream.makeStream(
            of: [BoardEvent].self, bufferingPolicy: .bufferingOldest(gauge.capacity))
        return (BoardEventStream(batches: batches), continuation)
    }

    /// Each board session's events (every session's stream counts here): 4,096 batches, about
    /// 20 s of a board's notifications handed on one by one.
    public static let sessionGauge = StreamGauge(name: "board_session_events", capacity: 4096)
    /// The fleet's merged events, which the recording pipeline reads: 16,384 batches, about
    /// 20 s of four boards' notifications handed on one by one.
    public static let fleetGauge = StreamGauge(name: "board_events", capacity: 16384)
    /// The gauges of the boards' data path, from the links to the fleet's stream.
    public static var dataPathGauges: [StreamGauge] { [GattBoardLink.notificationGauge, sessionGauge, fleetGauge] }

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
