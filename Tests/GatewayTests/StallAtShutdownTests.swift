import Boards
import Buffer
import Foundation
import Gateway
import GatewayTestSupport
import MetaWear
import Testing
import TestSupport

/// A SIGTERM stops every board first (sensors and log off) and seals the session only once the
/// boards have stopped: in a loaded real-BlueZ VM 0.5-1.8 s after the signal. A board is
/// stalled at the stop (issue 21: a gap kept from its newest point, for its log to fill) only if
/// it was silent when its stop began; judged at the seal, every streaming board looked stalled,
/// and its log, stopped with its sensors, never filled the gap (the next run's readout: "0
/// filled a gap, 28-55 still missing").
@Suite("A stall at a shutdown, judged when the boards' stop began")
struct StallAtShutdownTests {
    typealias Rig = SamplesAfterShutdownTests
    /// Longer than ``SessionController/stopArrivalSlack`` (400 ms) and 1.5 periods of the 50 Hz
    /// gyro: a stream silent this long is stalled, by the rule under test.
    static let silence: Duration = .milliseconds(1000)

    /// A pipeline on a fresh buffer, a backfill board (its log fills gaps) recording into a
    /// session; `body` gets the pipeline and the store, the session's ID.
    static func withRecordingBackfillBoard(_ body: (RecordingPipeline, BufferStore, String) async throws -> Void) async throws {
        let directory = NSTemporaryDirectory() + "mwgate-stall-at-shutdown-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try BufferStore(path: BufferStore.path(inStateDirectory: directory),
                                    configuration: .init(userID: "00000000-0000-4000-8000-000000000001"))
        let settings = GatewaySettings(boards: .addresses([Rig.board]), streaming: SimulatedGatewayRig.streaming, stateDirectory: directory)
        let pipeline = RecordingPipeline(settings: settings, store: store, logger: LogCapture().logger())
        let description = BoardDescription(model: .metaMotionR, chip: .bmi160, firmwareRevision: nil, modelNumber: nil,
                                           hardwareRevision: nil, manufacturer: nil, serialNumber: nil,
                                           modules: ModuleTable([ModuleInfo(module: .gyro, implementation: 0, revision: 1)]),
                                           battery: nil, boardClock: nil)
        await pipeline.handle(Rig.event(.state(.streaming(description))))
        await pipeline.handle(Rig.event(.flashLog(.logging(loggers: [:], capacityEntries: nil, secondsToFull: nil))))
        let sessionID = try await pipeline.startSession()
        try await body(pipeline, store, sessionID)
    }

    /// The board streams until the signal and its stop takes longer than the slack. With
    /// `stopSeen` false the boards' events end before its stop is seen: still linked at the
    /// seal, it is judged when its stop began too.
    @Test("a board streaming until the signal whose stop takes 1 s keeps no stall gap, nothing missed",
          arguments: [true, false])
    func streamingUntilTheSignal(stopSeen: Bool) async throws {
        try await Self.withRecordingBackfillBoard { pipeline, store, sessionID in
            await Rig.samples(pipeline)
            await pipeline.sealOnceBoardsStop()
            // The board's last samples, then its stop.
            await Rig.samples(pipeline)
            try await Task.sleep(for: Self.silence)
            if stopSeen { await pipeline.handle(Rig.event(.state(.stopped))) } else { await Rig.boardEventsEnd(pipeline) }
            #expect(await pipeline.health.isShutDown)
            let gaps = try store.restartGaps().filter { $0.sessionID == sessionID }
            #expect(gaps.isEmpty, "a stall gap kept for a board that streamed until its stop began: \(gaps.map(\.board))")
            let points = try store.dataset(sessionID: sessionID).points.map(\.point)
            #expect(points.count == 20)
            #expect(points.reduce(0) { $0 + $1.missedBefore } == 0, "samples marked missing")
        }
    }

    /// stalltail's rule still holds at a shutdown: silent for a second before the signal, the
    /// board's log holds the stall (logging stopped only with the board's stop).
    @Test("a board silent 1 s before the signal keeps its stall gap")
    func silentBeforeTheSignal() async throws {
        try await Self.withRecordingBackfillBoard { pipeline, store, sessionID in
            await Rig.samples(pipeline)
            try await Task.sleep(for: Self.silence)
            await pipeline.sealOnceBoardsStop()
            await pipeline.handle(Rig.event(.state(.stopped)))
            #expect(await pipeline.health.isShutDown)
            let gaps = try store.restartGaps().filter { $0.sessionID == sessionID }
            #expect(gaps.map(\.board) == [Rig.board.rawValue], "the stall's gap kept for the board's log")
        }
    }
}
