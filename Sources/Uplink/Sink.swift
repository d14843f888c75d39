import Foundation

/// An upstream that stores documents idempotently under their fixed names.
///
/// `write` stores a batch of documents of one session, in order. Writing a document that is
/// already stored (a retry after an unknown outcome) must succeed without creating a
/// duplicate. Failures are thrown as `SinkError` so the sync service can tell a pause from
/// a dead letter.
public protocol Sink: Sendable {
    /// Short name for logs and status ("firestore", "postgresql", "directory").
    var name: String { get }
    /// Stores `documents` (one session's, in seal order). All or nothing is not required,
    /// but on return every document is stored.
    func write(_ documents: [SinkDocument]) async throws(SinkError)
    /// Releases connections. The sink is not used afterwards.
    func close() async
    /// A hint that `documents` are the next to be written: a sink may encode them now, while
    /// the previous commit is in flight. Optional; the default does nothing.
    func prepare(_ documents: [SinkDocument]) async
}

extension Sink {
    public func prepare(_ documents: [SinkDocument]) async {}
}

/// Encoded documents waiting for their write, by document name; bounded, oldest dropped
/// first (a document prepared but written later is simply encoded again).
final class EncodingCache: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [String: [UInt8]] = [:]
    private var order: [String] = []
    private let capacity: Int

    init(capacity: Int = 16) { self.capacity = capacity }

    func put(_ name: String, _ bytes: [UInt8]) {
        lock.withLock {
            if entries.updateValue(bytes, forKey: name) == nil { order.append(name) }
            while order.count > capacity { entries[order.removeFirst()] = nil }
        }
    }

    func take(_ name: String) -> [UInt8]? {
        lock.withLock {
            guard let bytes = entries.removeValue(forKey: name) else { return nil }
            order.removeAll { $0 == name }
            return bytes
        }
    }
}

/// Why a sink write failed, classed by what the sync service should do.
public enum SinkError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Retry after backoff: the upstream is unreachable, overloaded or briefly failing.
    /// `retryAfter` is the upstream's own hint (seconds), if it gave one.
    case transient(reason: String, retryAfter: Double?)
    /// The upstream asks us to slow down (HTTP 429, RESOURCE_EXHAUSTED): retry after
    /// backoff and halve the drain rate.
    case rateLimited(reason: String, retryAfter: Double?)
    /// Retrying the same documents can never succeed (invalid document, permission
    /// denied, missing database): dead-letter them.
    case permanent(reason: String)

    /// Human-readable reason (never contains credentials).
    public var reason: String {
        switch self {
        case let .transient(r, _), let .rateLimited(r, _), let .permanent(r): r
        }
    }

    /// The upstream's retry hint, seconds.
    public var retryAfter: Double? {
        switch self {
        case let .transient(_, a), let .rateLimited(_, a): a
        case .permanent: nil
        }
    }

    public var description: String {
        switch self {
        case let .transient(r, a): "transient: \(r)" + (a.map { " (retry after \($0) s)" } ?? "")
        case let .rateLimited(r, a): "rate limited: \(r)" + (a.map { " (retry after \($0) s)" } ?? "")
        case let .permanent(r): "permanent: \(r)"
        }
    }
}

/// Writes every document to several sinks in turn (for example the directory for field
/// work and Firestore for the app). Each sink is idempotent, so a retry after one sink
/// failed rewrites the others harmlessly. One sink down pauses all of them.
public struct FanOutSink: Sink {
    public let sinks: [any Sink]
    public var name: String { sinks.map(\.name).joined(separator: "+") }

    /// Sinks written in this order.
    public init(_ sinks: [any Sink]) { self.sinks = sinks }

    public func write(_ documents: [SinkDocument]) async throws(SinkError) {
        for sink in sinks {
            do { try await sink.write(documents) } catch {
                throw Self.prefixed(error, sink.name)
            }
        }
    }

    public func close() async {
        for sink in sinks { await sink.close() }
    }

    public func prepare(_ documents: [SinkDocument]) async {
        for sink in sinks { await sink.prepare(documents) }
    }

    static func prefixed(_ error: SinkError, _ name: String) -> SinkError {
        switch error {
        case let .transient(r, a): .transient(reason: "\(name): \(r)", retryAfter: a)
        case let .rateLimited(r, a): .rateLimited(reason: "\(name): \(r)", retryAfter: a)
        case let .permanent(r): .permanent(reason: "\(name): \(r)")
        }
    }
}
