import BlueZ
import Boards
import Buffer
import Foundation
import Gateway
import GatewayTestSupport
import Logging
import MetaWear
import Testing
import TestSupport

/// What the pipeline says about gyro samples that reach it after the shutdown's seal: a loss
/// only when they belong to the sealed session (a board still streaming into it when the seal
/// gave up waiting); samples a board streams between sessions until its stop are no loss, and
/// every in-process gateway test logged them as one ("N gyro samples arrived after the
/// shutdown's seal and were not recorded", also in CI's log) although no session was open.
@Suite("Samples after the shutdown's seal")
struct SamplesAfterShutdownTests {
    static let board = BluetoothAddress("C4:5A:2B:00:00:01")!
    static let warning = "arrived after the shutdown's seal and were not recorded"

    /// A pipeline on a fresh buffer, the board streaming (between sessions), logging into `logs`.
    static func withStreamingBoard(_ body: (RecordingPipeline, LogCapture) async throws -> Void) async throws {
        try await withStreamingBoard { pipeline, logs, _ in try await body(pipeline, logs) }
    }

    /// The same, with the pipeline's buffer.
    static func withStreamingBoard(_ body: (RecordingPipeline, LogCapture, BufferStore) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "mwgate-after-seal-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try BufferStore(path: BufferStore.path(inStateDirectory: directory),
                                    configuration: .init(userID: "00000000-0000-4000-8000-000000000001"))
        var settings = GatewaySettings(boards: .addresses([board]), streaming: SimulatedGatewayRig.streaming, stateDirectory: directory)
        settings.streamBetweenSessions = true
        let logs = LogCapture()
        let pipeline = RecordingPipeline(settings: settings, store: store, logger: logs.logger())
        let description = BoardDescription(model: .metaMotionR, chip: .bmi160, firmwareRevision: nil, modelNumber: nil,
                                           hardwareRevision: nil, manufacturer: nil, serialNumber: nil,
                                           modules: ModuleTable([ModuleInfo(module: .gyro, implementation: 0, revision: 1)]),
                                           battery: nil, boardClock: nil)
        await pipeline.handle(event(.state(.streaming(description))))
        try await body(pipeline, logs, store)
    }

    static func event(_ kind: BoardEvent.Kind) -> BoardEvent {
        BoardEvent(board: board, kind: kind, receivedAt: .now, wallClock: Date())
    }

    /// Ten gyro samples, one event each.
    static func samples(_ pipeline: RecordingPipeline) async {
        for x in 0..<10 {
            await pipeline.handle(event(.sample(.gyro(MotionSamples(single: RawVector(x: Int16(x), y: 0, z: 0), scale: 16.4)))))
        }
    }

    /// The boards' events end (the board manager shut down): the pipeline says what came late.
    static func boardEventsEnd(_ pipeline: RecordingPipeline) async {
        let (batches, end) = AsyncStream.makeStream(of: [BoardEvent].self)
        end.finish()
        await pipeline.consume(boardEvents: BoardEventStream(batches: batches))
    }

    @Test func samplesStreamedBetweenSessionsAfterTheShutdownAreNoLoss() async throws {
        try await Self.withStreamingBoard { pipeline, logs in
            await Self.samples(pipeline)
            await pipeline.shutdown()
            await Self.samples(pipeline)
            await Self.boardEventsEnd(pipeline)
            #expect(!logs.text.contains(Self.warning), "\(logs.text)")
            #expect(logs.text.contains("10 gyro samples streamed outside a session arrived after the shutdown"), "\(logs.text)")
        }
    }

    @Test func aSessionsSamplesAfterTheSealAreReportedLost() async throws {
        try await Self.withStreamingBoard { pipeline, logs in
            let sessionID = try await pipeline.startSession()
            await Self.samples(pipeline)
            // Sealed while the board still streams into the session (the wait for its stop gave up).
            await pipeline.shutdown()
            #expect(logs.text.contains("session \(sessionID) stopped with"), "\(logs.text)")
            await Self.samples(pipeline)
            await Self.boardEventsEnd(pipeline)
            #expect(logs.text.contains("10 gyro samples of the sealed session \(Self.warning)"), "\(logs.text)")
        }
    }
}
