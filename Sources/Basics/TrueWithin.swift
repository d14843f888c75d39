/// Whether `condition` returns true within `limit`: it runs as a child task beside a timer, and
/// whichever ends first cancels the other. False when the limit passes first, when `condition`
/// returns false, or when the calling task is cancelled (the condition then sees the
/// cancellation too).
public func trueWithin(_ limit: Duration, _ condition: @escaping @Sendable () async -> Bool) async -> Bool {
    await withTaskGroup(of: Bool.self) { group in
        group.addTask { await condition() }
        group.addTask {
            try? await Task.sleep(for: limit)
            return false
        }
        let first = await group.next() ?? false
        group.cancelAll()
        return first
    }
}
