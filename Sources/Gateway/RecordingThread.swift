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
/// thread of a NIO group (already in the daemon for the uplink) is that thread, for the
/// process's lifetime; pipelines in one process (tests) share it.
enum RecordingThread {
    private static let group = MultiThreadedEventLoopGroup._makePerpetualGroup(threadNamePrefix: "mwgate-recording-", numberOfThreads: 1)

    /// The executor of every ``RecordingPipeline``.
    static let executor: any SerialExecutor = group.next().executor
}
