import ThreadExecutor

/// The thread the recording pipeline runs on, its own rather than one of the shared
/// cooperative pool's.
///
/// The pipeline's work is mostly synchronous SQLite through the session controller: the
/// once-a-second segment commit and the seals, FULL-synchronous, so each waits for the disk
/// to flush (milliseconds on an SD card, far more on a tired one). On the cooperative pool,
/// which has one thread per core (two on the gateway's board), every such wait would hold a
/// thread the board sessions, GNSS, the uplink and the control API need. On a thread of its
/// own the wait holds only the pipeline; whoever awaits it suspends meanwhile. Pipelines in
/// one process (tests) share it.
///
/// Every hand-over between the pool and this thread wakes a thread, and at the pipeline's
/// pace (a tick every 250 ms, the boards' event batches) that cost about 13 % more CPU per
/// sample than the same pipeline on the pool. So the steady path stays on this thread: the
/// board events wait for the tick (``HeldBoardEvents``), the tick sleeps on this thread's
/// timer (`EventLoopThreadExecutor.sleep(until:)`), and the pipeline's long-running loops
/// prefer this thread as their task executor, so the nonisolated code they await (stream
/// iteration, continuations) runs here instead of waking a pool thread.
enum RecordingThread {
    /// The one thread: the executor of every ``RecordingPipeline`` and of ``BufferWork``.
    static let shared = EventLoopThreadExecutor(name: "mwgate-recording-")
}
