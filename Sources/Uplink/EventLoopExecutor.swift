import NIOCore

/// Runs a task's nonisolated code on one NIO event loop.
///
/// PostgresNIO hands a statement to its connection from whatever thread calls `query`, by
/// queueing the write on the event loop. If the server's close is handled first, the channel
/// removes its handlers before that write runs, and the statement reaches no handler: its
/// answer is never given and the caller waits for ever (closing the connection again, or
/// cancelling, cannot end that wait). Checking the connection and writing the statement on
/// the event loop itself makes the two one step: nothing can close the channel in between.
final class EventLoopExecutor: TaskExecutor {
    private let loop: any EventLoop

    init(_ loop: any EventLoop) {
        self.loop = loop
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
