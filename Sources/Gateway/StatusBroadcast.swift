import StatusModel
import Synchronization

/// The readers of the gateway's status (the control API's property signals, the daemon's
/// status log): each gets every new snapshot, and a slow reader only the newest one it has
/// not read.
///
/// A reader that goes away is removed at once under the lock, from its stream's termination
/// handler, rather than by a task sent back to the pipeline actor to do it later.
final class StatusBroadcast: Sendable {
    private struct Readers {
        var next: UInt64 = 0
        var continuations: [UInt64: AsyncStream<GatewayStatus>.Continuation] = [:]
    }

    private let readers = Mutex(Readers())

    /// True while nobody reads (the pipeline then builds no snapshot to send).
    var isEmpty: Bool { readers.withLock { $0.continuations.isEmpty } }

    /// A new reader's stream, starting with `current`.
    func subscribe(current: GatewayStatus) -> AsyncStream<GatewayStatus> {
        let (stream, continuation) = AsyncStream.makeStream(of: GatewayStatus.self, bufferingPolicy: .bufferingNewest(1))
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

    /// Sends `status` to every reader.
    func publish(_ status: GatewayStatus) {
        // Yielded outside the lock: a reader's termination handler takes it.
        for continuation in readers.withLock({ Array($0.continuations.values) }) { continuation.yield(status) }
    }

    /// Ends every reader's stream (shutdown).
    func finishAll() {
        let ending = readers.withLock { readers in
            defer { readers.continuations.removeAll() }
            return Array(readers.continuations.values)
        }
        for continuation in ending { continuation.finish() }
    }
}
