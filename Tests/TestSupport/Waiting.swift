import Foundation

/// Generous bound for "it eventually happens" on a loaded 2-core machine.
public let eventually: Duration = .seconds(30)

/// Polls `condition` until it holds, failing after `limit`.
public func waitUntil(_ what: String, within limit: Duration = eventually,
                      _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        guard ContinuousClock.now < deadline else { throw TestBusError(message: "timed out waiting for \(what)") }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// The first element of `stream` satisfying `predicate`, failing after `limit`.
public func first<S: AsyncSequence & Sendable>(_ stream: S, within limit: Duration = eventually,
                                        where predicate: @escaping @Sendable (S.Element) -> Bool = { _ in true })
    async throws -> S.Element where S.Element: Sendable
{
    try await withThrowingTaskGroup(of: S.Element?.self) { group in
        group.addTask {
            for try await element in stream where predicate(element) { return element }
            return nil
        }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let result = try await group.next(), let element = result else {
            throw TestBusError(message: "nothing arrived within \(limit)")
        }
        return element
    }
}
