import Buffer
import Logging

/// The `sent` marks of documents the upstream confirmed, written late on purpose: the next
/// round writes them while its own commit is in flight (a FULL-synchronous write between two
/// commits would add a disk flush to every round), or the service settles them before it
/// goes idle, backs off or ends.
///
/// Until its mark is written a confirmed document is left out of the outbox reads, so none
/// is sent twice. If the process dies before a mark lands, the documents go again after
/// restart, and their fixed names make that harmless.
struct SentMarks {
    /// Confirmed documents whose mark is not written yet.
    private var unmarked: Set<Int64> = []
    /// The part of `unmarked` no round has started to mark yet, in confirmation order.
    private var toWrite: [Int64] = []

    /// How many confirmed documents still wait for their mark.
    var unmarkedCount: Int { unmarked.count }

    /// True while `id`'s document is confirmed but not yet marked.
    func isUnmarked(_ id: Int64) -> Bool { unmarked.contains(id) }

    /// Books the marks of `items`, confirmed by the upstream.
    mutating func book(_ items: [OutboxItem]) {
        unmarked.formUnion(items.map(\.id))
        toWrite += items.map(\.id)
    }

    /// Hands the booked marks to whoever writes them now.
    mutating func take() -> [Int64] {
        defer { toWrite = [] }
        return toWrite
    }

    /// Records that marks taken earlier are written (or failed: logged, harmless).
    mutating func written(_ ids: [Int64]) {
        unmarked.subtract(ids)
    }

    /// Writes `sent` marks; a failure is logged (the documents are stored upstream: they go
    /// again after restart, harmlessly).
    static func write(_ ids: [Int64], store: BufferStore, logger: Logger) {
        guard !ids.isEmpty else { return }
        do { try store.markSent(ids) } catch {
            logger.error("cannot mark documents sent: \(error)")
        }
    }
}
