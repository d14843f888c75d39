import NIOCore
import NIOPosix

/// The thread the recording pipeline runs on, its own rather than one of the shared
/// cooperative pool's.
///
/// The pipeline's work is mostly synchronous SQLite through the session controller: the
/// once-a-second segment commit and the seals, FULL-synchronous, so each waits for the disk
/// to flush (milliseconds on an SD card, far more on a tired one). On the cooperative pool,
/// which has one thread per core (two on the gateway's board), every such wait would hold a
/// thread the board sessions, GNSS, the uplink and the control API need. On a thread of its
/// own the wait holds only the pipeline; whoever awaits it suspends meanwhile. One event loop
/// thread of a NIO group is that thread, for the process's lifetime; pipelines in one process
/// (tests) share it.
///
/// Every hand-over between the pool and this thread wakes a thread, and at the pipeline's
/// pace (a tick every 250 ms, the boards' event batches) that cost about 13 % more CPU per
/// sample than the same pipeline on the pool. So the steady path stays on this thread: the
/// board events wait for the tick (``HeldBoardEvents``), the tick sleeps on this thread's
/// timer (``sleep(until:isolation:)``), and the pipeline's long-running loops prefer this
/// thread as their task executor, so the nonisolated code they await (stream iteration,
/// continuations) runs here instead of waking a pool thread.
final class RecordingThread: SerialExecutor, TaskExecutor {
    /// The one thread: the executor of every ``RecordingPipeline``.
    static let shared = RecordingThread()

    private let loop: any EventLoop

    private init() {
        loop = MultiThreadedEventLoopGroup._makePerpetualGroup(threadNamePrefix: "mwgate-recording-", numberOfThreads: 1).next()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // One executor for both roles: a job runs isolated to it and preferring it, so the
        // pipeline and the nonisolated code its loops await switch without a hop.
        loop.execute { job.runSynchronously(isolatedTo: self.asUnownedSerialExecutor(), taskExecutor: self.asUnownedTaskExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func checkIsolated() {
        loop.preconditionInEventLoop()
    }

    /// Sleeps until `deadline` on this thread's timer. A caller isolated to a pipeline resumes
    /// on this thread: `ContinuousClock.sleep` would sleep on the pool's timer and wake a pool
    /// thread to hand the caller back. Throws `CancellationError` when the task is cancelled.
    static func sleep(until deadline: ContinuousClock.Instant, isolation: isolated (any Actor)? = #isolation) async throws {
        let (seconds, attoseconds) = ContinuousClock.now.duration(to: deadline).components
        let nanoseconds = max(0, seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000)
        let scheduled = shared.loop.scheduleTask(in: .nanoseconds(nanoseconds)) {}
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
