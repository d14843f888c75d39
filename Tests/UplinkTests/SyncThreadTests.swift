import Buffer
import Foundation
import Testing
import TestSupport
import UpstreamFixtures
@testable import Uplink

/// The uploader's synchronous SQLite waits on the uploader's own thread: while sync services
/// wait for the database (another writer holds it, as a slow disk or a long checkpoint would
/// hold their FULL-synchronous writes), the rest of the process (board sessions, GNSS, the
/// control API, all on the shared cooperative pool) still runs.
@Suite("The sync service's own thread")
struct SyncThreadTests {
    /// Another process (python3's sqlite3) holding the buffer's write lock until told to let go.
    final class LockHolder: @unchecked Sendable {
        private let process = Process()
        private let input = Pipe()

        init(database path: String) throws {
            let output = Pipe()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
            process.arguments = ["-c", """
                import sqlite3, sys
                db = sqlite3.connect(sys.argv[1], isolation_level=None)
                db.execute("BEGIN IMMEDIATE")
                print("locked", flush=True)
                sys.stdin.readline()
                db.execute("COMMIT")
                """, path]
            process.standardInput = input
            process.standardOutput = output
            try process.run()
            let line = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
            guard line.hasPrefix("locked") else { throw HolderFailed(said: line) }
        }

        struct HolderFailed: Error { var said: String }

        /// Commits the holder's transaction and waits for it to exit.
        func release() {
            try? input.fileHandleForWriting.write(contentsOf: Data("go\n".utf8))
            process.waitForExit()
        }
    }

    @Test func servicesWaitingOnTheDatabaseLeaveTheCooperativePoolFree() async throws {
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try openStore(dir)
        try fillStore(store, sessions: 1, chunks: 3, size: 10)
        let holder = try LockHolder(database: BufferStore.path(inStateDirectory: dir))
        // More services waiting than the pool has threads: on the pool they would hold every one
        // until the store's busy timeout (10 s) failed their writes.
        let count = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let services = (0..<count).map { _ in SyncService(store: store, sink: FakeSink(clock: VirtualClock())) }
        let failures = await withTaskGroup(of: String?.self) { group in
            for service in services {
                group.addTask {
                    do { _ = try await service.drain() } catch { return "\(error)" }
                    return nil
                }
            }
            // Runs on the pool: only if the waiting services left it a thread.
            group.addTask {
                try? await Task.sleep(for: .milliseconds(200))
                holder.release()
                return nil
            }
            return await group.reduce(into: [String]()) { if let failure = $1 { $0.append(failure) } }
        }
        #expect(failures.isEmpty, "\(failures.count) of \(count) drains failed: the pool was blocked (\(failures.first ?? ""))")
        let stats = try store.backlogStats()
        #expect(stats.count == 0 && stats.inFlight == 0, "backlog \(stats.count)")
    }
}
