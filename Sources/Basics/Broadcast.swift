import Synchronization

/// The readers of a value that changes (a status): each gets every new value, and a slow
/// reader only the newest ones it has not read (at most `keeping` of them).
///
/// A reader that goes away is removed at once under the lock, from its stream's termination
/// handler, rather than by a task sent back to the owner to do it later.
public final class Broadcast<Value: Sendable>: Sendable {
    private struct Readers {
        var next: UInt64 = 0
        var continuations: [UInt64: AsyncStream<Value>.Continuation] = [:]
    }

    private let readers = Mutex(Readers())
    private let keeping: Int

    /// Readers that each hold at most `keeping` unread values (the newest).
    public init(keeping: Int = 1) {
        self.keeping = keeping
    }

    /// True while nobody reads (the owner may then skip building a value to send).
    public var isEmpty: Bool { readers.withLock { $0.continuations.isEmpty } }

    /// A new reader's stream, starting with `current`.
    public func subscribe(current: Value) -> AsyncStream<Value> {
        let (stream, continuation) = AsyncStream.makeStream(of: Value.self, bufferingPolicy: .bufferingNewest(keeping))
        let id = readers.withLock { readers in
            defer { readers.next += 1 }
            readers.continuations[readers.next] = continuation
            return readers.next
        }
        continuation.yield(current)
        continuation.onTermination = { [weak self] _ in
            _ = self?.readers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Sends `value` to every reader.
    public func publish(_ value: Value) {
        // Yielded outside the lock: a reader's termination handler takes it.
        for continuation in readers.withLock({ Array($0.continuations.values) }) { continuation.yield(value) }
    }

    /// Ends every reader's stream (the owner stops).
    public func finishAll() {
        let ending = readers.withLock { readers in
            defer { readers.continuations.removeAll() }
            return Array(readers.continuations.values)
        }
        for continuation in ending { continuation.finish() }
    }
}
