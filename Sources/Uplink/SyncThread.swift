import ThreadExecutor

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
/// batch loaded ahead) and of the sinks' own code between their network waits. Services in
/// one process (tests) share it.
enum SyncThread {
    /// The one thread.
    static let shared = EventLoopThreadExecutor(name: "mwgate-sync-")
}
