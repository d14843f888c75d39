/// Work its owner's `run()` runs as child tasks of one task group: the structured form of
/// "start this and carry on" for actors that react to events (a D-Bus call per reconnection
/// step, a timer per wake-up). Each piece ends with the scope: when ``run()`` is cancelled,
/// or when ``finish()`` is called (outstanding work is then cancelled, not awaited).
public struct ChildTaskQueue: Sendable {
    /// One piece of work.
    public typealias Work = @Sendable () async -> Void

    private let work: AsyncStream<Work>
    private let continuation: AsyncStream<Work>.Continuation

    /// A queue holding at most `limit` pieces not yet started.
    public init(limit: Int = 256) {
        (work, continuation) = AsyncStream.makeStream(of: Work.self, bufferingPolicy: .bufferingOldest(limit))
    }

    /// Queues `work` to run as a child of ``run()``; false once the queue is finished or full.
    @discardableResult
    public func spawn(_ work: @escaping Work) -> Bool {
        if case .enqueued = continuation.yield(work) { return true }
        return false
    }

    /// Ends ``run()``: nothing more is accepted, and work still running is cancelled.
    public func finish() { continuation.finish() }

    /// Runs every queued piece of work as a child task until ``finish()`` or cancellation.
    /// Call once.
    public func run() async {
        await withDiscardingTaskGroup { group in
            for await piece in work { group.addTask { await piece() } }
            group.cancelAll()
        }
    }
}
