import Synchronization
import Testing

/// A gateway's services (its service group's `run()`) running beside a test's body as a child
/// task of the test's scope, not a stored task: the body may shut them down and wait for their
/// end, and the scope does so when the body has not.
public final class RunningServices: Sendable {
    private let triggerShutdown: @Sendable () async -> Void
    private let ends: AsyncStream<Result<Void, any Error>>
    private let outcome = Mutex<Result<Void, any Error>?>(nil)

    private init(triggerShutdown: @escaping @Sendable () async -> Void, ends: AsyncStream<Result<Void, any Error>>) {
        self.triggerShutdown = triggerShutdown
        self.ends = ends
    }

    /// Runs `run` beside `body`, then shuts the services down with `shutDown` unless `body`
    /// did, and waits for them. Throws what `body` throws, else what the services' run threw
    /// (a shutdown that fails fails the test, as it fails the daemon); when both fail, the
    /// services' failure is recorded as an issue beside the body's error.
    public static func with<Value>(
        run: @escaping @Sendable () async throws -> Void, shutDown: @escaping @Sendable () async -> Void,
        isolation: isolated (any Actor)? = #isolation,
        _ body: (RunningServices) async throws -> Value
    ) async throws -> Value {
        let (ends, end) = AsyncStream.makeStream(of: Result<Void, any Error>.self, bufferingPolicy: .bufferingNewest(1))
        let services = RunningServices(triggerShutdown: shutDown, ends: ends)
        return try await withThrowingTaskGroup(of: Void.self, returning: Value.self, isolation: isolation) { group in
            group.addTask {
                do { try await run(); end.yield(.success(())) } catch { end.yield(.failure(error)) }
                end.finish()
            }
            let value: Value
            do { value = try await body(services) } catch {
                // A body that shut the services down itself saw their outcome already.
                if !services.hasEnded {
                    do { try await services.shutDown() } catch let failure {
                        Issue.record("the services' shutdown failed too: \(failure)")
                    }
                }
                throw error
            }
            try await services.shutDown()
            return value
        }
    }

    /// Whether the services have ended and that was seen (by ``shutDown()``).
    public var hasEnded: Bool { outcome.withLock { $0 != nil } }

    /// Triggers a graceful shutdown (nothing if they have ended) and waits until the services
    /// have ended; throws what their run threw.
    public func shutDown() async throws {
        if let known = outcome.withLock({ $0 }) { return try known.get() }
        await triggerShutdown()
        var iterator = ends.makeAsyncIterator()
        let ended = await iterator.next() ?? .success(())
        outcome.withLock { $0 = ended }
        try ended.get()
    }
}
