/// Blocking buffer work for callers outside the pipeline (the control API requeueing dead
/// documents when no uploader is configured): it runs on ``RecordingThread``, as the
/// pipeline's own commits do, so a FULL-synchronous SQLite write never holds a thread of the
/// cooperative pool.
public enum BufferWork {
    /// Runs `work` on the recording thread and returns its result (or throws its error).
    public static func run<T: Sendable>(_ work: @Sendable () throws -> T) async throws -> T {
        try await runner.run(work)
    }

    private static let runner = Runner()

    private actor Runner {
        nonisolated var unownedExecutor: UnownedSerialExecutor { RecordingThread.shared.asUnownedSerialExecutor() }

        func run<T: Sendable>(_ work: @Sendable () throws -> T) throws -> T {
            try work()
        }
    }
}
