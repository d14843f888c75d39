import BlueZ
import Buffer
import Dispatch
import Foundation
import Gateway
import GatewayTestSupport
import Logging
import Testing

/// The pipeline's synchronous SQLite commits wait on the pipeline's own thread: while
/// pipelines are stuck in a slow commit, the rest of the process (board sessions, GNSS, the
/// uplink, the control API, all on the shared cooperative pool) still runs.
@Suite("The recording pipeline's own thread")
struct RecordingThreadTests {
    /// Holds `pipeline`'s executor until `release` is signalled (at most `limit`), as a
    /// FULL-synchronous commit on a slow disk would; true when released in time.
    static func block(_ pipeline: isolated RecordingPipeline, until release: DispatchSemaphore, limit: Double) -> Bool {
        release.wait(timeout: .now() + limit) == .success
    }

    @Test func pipelinesWaitingOnTheDiskLeaveTheCooperativePoolFree() async throws {
        let dir = NSTemporaryDirectory() + "mwgate-recording-thread-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try BufferStore(path: BufferStore.path(inStateDirectory: dir),
                                    configuration: .init(userID: "00000000-0000-4000-8000-000000000001"))
        let settings = GatewaySettings(boards: .addresses([try #require(BluetoothAddress("C4:5A:2B:00:00:01"))]),
                                       streaming: SimulatedGatewayRig.streaming, stateDirectory: dir)
        // More blocked pipelines than the pool has threads: on the pool they would hold every one.
        let count = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let pipelines = (0..<count).map { _ in RecordingPipeline(settings: settings, store: store, logger: Logger(label: "test")) }
        let release = DispatchSemaphore(value: 0)
        let releasedInTime = await withTaskGroup(of: Bool.self) { group in
            for pipeline in pipelines {
                group.addTask { await Self.block(pipeline, until: release, limit: 20) }
            }
            // Runs on the pool: only if the blocked pipelines left it a thread.
            group.addTask {
                try? await Task.sleep(for: .milliseconds(200))
                for _ in 0..<count { release.signal() }
                return true
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(releasedInTime.allSatisfy { $0 }, "\(releasedInTime.filter { !$0 }.count) of \(count) pipelines waited 20 s: the pool was blocked")
    }
}
