import NIOCore
import NIOPosix

/// The thread the sync service runs on, its own rather than one of the shared cooperative
/// pool's.
///
/// The uploader's buffer work is synchronous SQLite: the outbox reads, the chunk loads, and
/// the `sent` marks, FULL-synchronous, so each waits for the disk to flush (milliseconds on
/// an SD card, far more on a tired one, and up to the busy timeout while another writer holds
/// the database). On the cooperative pool, which has one thread per core (two on the
/// gateway's board), every such wait would hold a thread the board sessions, GNSS, the
/// recording pipeline's callers and the control API need. On a thread of its own the wait
/// holds only the uploader.
///
/// It is the executor of every ``SyncService`` (their state) and, as the task executor its
/// `run` and `drain` prefer, of their child tasks (the marks written beside a commit, the next
/// batch loaded ahead) and of the sinks' own code between their network waits. One event loop
/// thread of a NIO group is that thread, for the process's lifetime; services in one process
/// (tests) share it.
final class SyncThread: SerialExecutor, TaskExecutor {
    /// The one thread.
    static let shared = SyncThread()

    private let loop: any EventLoop

    private init() {
        loop = MultiThreadedEventLoopGroup._makePerpetualGroup(threadNamePrefix: "mwgate-sync-", numberOfThreads: 1).next()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        // One executor for both roles: a job runs isolated to it and preferring it, so an
        // actor of the service and a nonisolated child of it switch without a hop.
        loop.execute { job.runSynchronously(isolatedTo: self.asUnownedSerialExecutor(), taskExecutor: self.asUnownedTaskExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    func checkIsolated() {
        loop.preconditionInEventLoop()
    }
}
