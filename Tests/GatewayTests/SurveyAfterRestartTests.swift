import BlueZ
import Buffer
import Foundation
import Gateway
import GatewayTestSupport
import Logging
import Recording
import Testing

/// A session stopped before the gateway started (recovered after a crash, or ended at
/// shutdown) still waits for its survey: the new pipeline lists it first and takes the survey
/// through the session controller like one of its own.
@Suite("Surveys of sessions stopped before the gateway started")
struct SurveyAfterRestartTests {
    @Test func aSessionStoppedBeforeStartIsListedAndSurveyedOnce() async throws {
        let dir = NSTemporaryDirectory() + "mwgate-survey-restart-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try BufferStore(path: BufferStore.path(inStateDirectory: dir),
                                    configuration: .init(userID: "00000000-0000-4000-8000-000000000001"))
        let id = "EARLIER"
        let t0 = 1_800_000_000_000.0
        try store.beginSession(SessionStart(sessionID: id, startedAt: t0, trigger: .controlAPI))
        let points = (0..<10).map { i in
            RecordedPoint(gyroscope: GyroReading(x: Float(i), y: 1, z: 2, timestamp: t0 + Double(i) * 10), location: nil,
                          missingLocation: .noFix)
        }
        try store.seal(ChunkToSeal(sessionID: id, board: "B1", seq: 0, bytes: PointCodec.encode(points), pointCount: points.count,
                                   firstTimestamp: t0, lastTimestamp: t0 + 90, timeSource: .systemClockSynchronised, missedSamples: 0))
        try store.endSession(SessionEnd(sessionID: id, endedAt: t0 + 100, trigger: .controlAPI, boards: ["B1"], pointCount: 10,
                                        distance: 0, timeSource: .systemClockSynchronised))

        let settings = GatewaySettings(boards: .addresses([try #require(BluetoothAddress("C4:5A:2B:00:00:01"))]),
                                       streaming: SimulatedGatewayRig.streaming, stateDirectory: dir)
        let pipeline = RecordingPipeline(settings: settings, store: store, logger: Logger(label: "test"))
        #expect(await pipeline.awaitingSurvey == [id])
        #expect(await pipeline.status.session.awaitingSurvey == [id])

        await #expect(throws: RecordingPipeline.CommandError("invalid survey: empty hazard list: submit \"no hazard\" instead")) {
            try await pipeline.submitSurvey(.hazards([:]))
        }
        let record = try await pipeline.submitSurvey(.noHazard)
        #expect(record.sessionID == id)
        #expect(await pipeline.awaitingSurvey.isEmpty)
        #expect(try store.sessionsAwaitingSurvey().isEmpty)
        await #expect(throws: RecordingPipeline.CommandError("session \(id) is not awaiting a survey")) {
            try await pipeline.submitSurvey(.noHazard, sessionID: id)
        }
    }
}
