import Synchronization

/// How full one bounded stream of the data path has been (or every stream of one kind, one
/// per board): the most it ever held, its high-water mark, and how many elements it dropped
/// because it was full. Shown in the status (`streams`), so a consumer that falls behind is
/// seen long before the bound costs data.
///
/// The depth comes from what `yield` answers (`enqueued(remaining:)` of a stream buffering at
/// most ``capacity``), so recording costs no extra bookkeeping on the consumer's side.
public final class StreamGauge: Sendable {
    /// The stream's name in the status (`board_events`…).
    public let name: String
    /// The bound every stream of this gauge is made with.
    public let capacity: Int
    private let marks = Mutex(Reading(highWater: 0, dropped: 0))

    /// What the gauge has seen.
    public struct Reading: Sendable, Equatable {
        /// The most elements a stream held after a yield.
        public var highWater: Int
        /// Elements refused because the stream was full.
        public var dropped: Int

        /// A reading of these marks.
        public init(highWater: Int, dropped: Int) {
            self.highWater = highWater
            self.dropped = dropped
        }
    }

    /// A gauge for streams bounded at `capacity` elements.
    public init(name: String, capacity: Int) {
        self.name = name
        self.capacity = capacity
    }

    /// What the gauge has seen so far.
    public var reading: Reading { marks.withLock { $0 } }

    /// Notes the answer of one `yield` into a stream of this gauge.
    public func record<Element>(_ result: AsyncStream<Element>.Continuation.YieldResult) {
        switch result {
        case .enqueued(let remaining): note(depth: capacity - remaining)
        case .dropped: marks.withLock { $0.dropped += 1 }
        case .terminated: break
        @unknown default: break
        }
    }

    /// Notes the answer of one `yield` into a throwing stream of this gauge.
    public func record<Element>(_ result: AsyncThrowingStream<Element, any Error>.Continuation.YieldResult) {
        switch result {
        case .enqueued(let remaining): note(depth: capacity - remaining)
        case .dropped: marks.withLock { $0.dropped += 1 }
        case .terminated: break
        @unknown default: break
        }
    }

    private func note(depth: Int) {
        marks.withLock { $0.highWater = max($0.highWater, depth) }
    }
}
