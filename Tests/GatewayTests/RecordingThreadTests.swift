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
        let releasedInTime = await Self.releasedInTime(count) { index, release in
            await Self.block(pipelines[index], until: release, limit: 20)
        }
        #expect(releasedInTime.allSatisfy { $0 }, "\(releasedInTime.filter { !$0 }.count) of \(count) pipelines waited 20 s: the pool was blocked")
    }

    /// The control API's blocking buffer work (a requeue with no uploader) waits on the same
    /// thread, not on the pool.
    @Test func blockingBufferWorkLeavesTheCooperativePoolFree() async throws {
        let count = ProcessInfo.processInfo.activeProcessorCount * 2 + 2
        let releasedInTime = await Self.releasedInTime(count) { _, release in
            (try? await BufferWork.run { release.wait(timeout: .now() + 20) == .success }) ?? false
        }
        #expect(releasedInTime.allSatisfy { $0 }, "\(releasedInTime.filter { !$0 }.count) of \(count) pieces of buffer work waited 20 s: the pool was blocked")
    }

    /// Runs `count` pieces of `work` that each wait for one signal of a semaphore, and beside
    /// them a task on the pool that signals it `count` times after 200 ms: it runs only if the
    /// waiting work left the pool a thread. Whether each piece was released in time.
    static func releasedInTime(_ count: Int, _ work: @escaping @Sendable (Int, DispatchSemaphore) async -> Bool) async -> [Bool] {
        let release = DispatchSemaphore(value: 0)
        return await withTaskGroup(of: Bool.self) { group in
            for index in 0..<count {
                group.addTask { await work(index, release) }
            }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(200))
                for _ in 0..<count { release.signal() }
                return true
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
    }
}
