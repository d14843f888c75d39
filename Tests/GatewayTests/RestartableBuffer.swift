import Buffer
import Foundation
import Recording

/// A real buffer (SQLite and segment journal) in a temporary state directory that a test can
/// open again as a new process would after a kill -9: the old store is simply dropped.
struct RestartableBuffer {
    let directory: String
    let path: String
    let configuration = BufferStore.Configuration(userID: "00000000-0000-4000-8000-000000000001")
    /// CLOCK_MONOTONIC and the wall clock go on through a process restart: one time base.
    static let timeBase = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)

    /// A fresh directory named after `label`.
    init(label: String) throws {
        directory = NSTemporaryDirectory() + "mwgate-\(label)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        path = BufferStore.path(inStateDirectory: directory)
    }

    /// The store, as a (new) process opens it.
    func open() throws -> BufferStore { try BufferStore(path: path, configuration: configuration) }

    /// Removes the directory.
    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

extension RestartableBuffer {
    /// A recorder on the buffer as a (new) process opens it: the sessions awaiting their survey
    /// adopted, the gaps kept for the boards' logs expected, and `board`'s flash log filling its
    /// gaps (after a kill -9 or a shutdown, the restarted gateway).
    func openRecorder(backfilling board: String) throws -> (BufferStore, SessionController) {
        let store = try open()
        let controller = SessionController(store: store, timeBase: Self.timeBase)
        try controller.adoptAwaitingSurveyFromStore()
        controller.expectRestartBackfill(try store.restartGaps())
        controller.expectBackfill(board: board, true)
        return (store, controller)
    }
}
