import NIOCore
import NIOPosix

/// A thread of its own, for work that must not hold a thread of the shared cooperative pool
/// (synchronous SQLite that waits for the disk): one event loop of a NIO group, kept for the
/// process's lifetime.
///
/// It is both a serial executor (an actor whose `unownedExecutor` is this one runs here) and
/// a task executor (a task that prefers it runs its nonisolated code here). A job runs in both
/// roles at once, so an actor on this thread and the nonisolated code its loops await switch
/// without a hop to the pool and back, each of which would wake a thread.
public final class EventLoopThreadExecutor: SerialExecutor, TaskExecutor {
    private let loop: any EventLoop

    /// Starts the thread, named `name` followed by a number (what `top -H` and `perf` show).
    public init(name: String) {
        loop = MultiThreadedEventLoopGroup._makePerpetualGroup(threadNamePrefix: name, numberOfThreads: 1).next()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(isolatedTo: self.asUnownedSerialExecutor(), taskExecutor: self.asUnownedTaskExecutor()) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func checkIsolated() {
        loop.preconditionInEventLoop()
    }

    /// Sleeps until `deadline` on this thread's timer. A caller isolated to an actor on this
    /// thread resumes here: `ContinuousClock.sleep` would sleep on the pool's timer and wake a
    /// pool thread to hand the caller back. Throws `CancellationError` when the task is
    /// cancelled.
    public func sleep(until deadline: ContinuousClock.Instant, isolation: isolated (any Actor)? = #isolation) async throws {
        let (seconds, attoseconds) = ContinuousClock.now.duration(to: deadline).components
        let nanoseconds = max(0, seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000)
        let scheduled = loop.scheduleTask(in: .nanoseconds(nanoseconds)) {}
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    scheduled.futureResult.whenComplete { continuation.resume(with: $0) }
                }
            } onCancel: {
                scheduled.cancel()
            }
        } catch {
            throw CancellationError()
        }
    }
}
