/// A call that did not finish within its time limit.
struct DeadlineExceeded: Error, CustomStringConvertible {
    /// What was being done ("query", "connect").
    var operation: String
    var limit: Duration

    var description: String { "\(operation) got no answer within \(limit.components.seconds) s" }
}

/// Runs `body` with a time limit. When the limit passes, or the calling task is cancelled,
/// `interrupt` is called: it must make `body` return (closing the connection `body` waits
/// on), because a call such as PostgresNIO's `query` ignores task cancellation and would
/// otherwise wait for a dead server forever. A passed limit throws ``DeadlineExceeded``
/// even if `body` fails first from the interruption, so the error names the real cause.
func withDeadline<T: Sendable>(_ limit: Duration, operation: String, interrupt: @escaping @Sendable () -> Void,
                               _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withTaskCancellationHandler {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                interrupt()
                throw DeadlineExceeded(operation: operation, limit: limit)
            }
            var value: T?
            var failure: (any Error)?
            // The first child to finish decides and the other is cancelled; both are awaited,
            // so a timeout that raced with the failure it caused is still named as the cause.
            while let result = await group.nextResult() {
                group.cancelAll()
                switch result {
                case let .success(v): if let v { value = v }
                case let .failure(error as DeadlineExceeded): failure = error
                case let .failure(error): if failure == nil { failure = error }
                }
            }
            if let value { return value }
            throw failure ?? CancellationError()
        }
    } onCancel: {
        interrupt()
    }
}
