import Foundation
import Gateway
import Recording
import Testing
import TestSupport

/// A board stalled through a whole session, end to end through dbus-daemon and the simulated
/// BlueZ (issue 21): its link is up (or being brought back by the stream watchdog, which restarts
/// a silent stream after 1 s and drops its link a second later), it withholds its notifications
/// from before the session's start until after its stop, and goes on measuring and logging. The
/// session has no streamed point of it, yet every sample it took in the session is in it once, in
/// order, from its flash log, none marked missing.
@Suite("Backfill end to end: a board stalled through a whole session")
struct WholeSessionStallEndToEndTests {
    /// The sensors off between sessions (the default): the stall begins between sessions, when
    /// nothing is sampled; the start turns the sensors on while the notifications are withheld.
    @Test func sensorsOffBetweenSessions() async throws {
        try await BackfillEndToEndTests.recording { h, pipeline, first in try await run(h, pipeline, first) }
    }

    /// The board streams between sessions: the stall begins then, and the start finds it silent.
    @Test func streamingBetweenSessions() async throws {
        try await GatewayHarness.with(mode: .manual, gnss: false, streamBetweenSessions: true, backfill: true) { h in
            try await h.eventually("both boards connected and logging") { s in s.boards.count == 2 && s.boards.allSatisfy { $0.isConnected } }
            let pipeline = h.gateway.pipeline
            try await run(h, pipeline, try await pipeline.startSession())
        }
    }

    /// Records 3 s, stops, stalls board 0 for 7 s from 0.5 s after the stop, records a second
    /// session from 1 s after the stop for 4 s, and checks that session's points of board 0.
    func run(_ h: GatewayHarness, _ pipeline: RecordingPipeline, _ first: String) async throws {
        let board = h.addresses[0].rawValue
        try await h.eventually("samples in the first session") { s in s.boards.allSatisfy { $0.gyroSamplesInSession >= 300 } }
        _ = try await pipeline.stopSession()
        try await Task.sleep(for: .milliseconds(500))
        try await h.simulator.stall(0, seconds: 7)
        try await Task.sleep(for: .milliseconds(500))
        let second = try await pipeline.startSession()
        // The board's newest sample when the session started (with its sensors off between
        // sessions, the last before they stopped: the session's first comes next).
        let indexAtStart = Int(try await h.simulator.measuredRuns(0, sensor: .gyro).last?.last ?? 0)
        try await Task.sleep(for: .seconds(4))
        let before = Int(try await h.simulator.measuredRuns(0, sensor: .gyro).last?.last ?? 0)
        _ = try await pipeline.stopSession()
        let after = Int(try await h.simulator.measuredRuns(0, sensor: .gyro).last?.last ?? 0)
        _ = try await pipeline.submitSurvey(.noHazard, sessionID: first, waitingForBackfillAtMost: .seconds(60))
        let record = try await pipeline.submitSurvey(.noHazard, sessionID: second, waitingForBackfillAtMost: .seconds(60))
        let dataset = try h.gateway.store.dataset(sessionID: second)
        let points = dataset.points.filter { $0.board == board }.map(\.point).sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp }
        let indices = points.map(BackfillEndToEndTests.index)
        let backfilled = points.filter(\.backfilled)
        let missed = points.reduce(0) { $0 + $1.missedBefore }
        print("whole-session stall: \(points.count) points (\(backfilled.count) backfilled), \(indices.first ?? -1)...\(indices.last ?? -1), "
              + "the board at \(indexAtStart) at the start, \(before)-\(after) at the stop, "
              + "holes \(BackfillEndToEndTests.holes(points)), missed \(missed)")
        #expect(!points.isEmpty && backfilled.count == points.count, "the session has the board's samples, from its log: \(points.count)")
        #expect(Set(indices).count == indices.count, "no sample twice")
        #expect(BackfillEndToEndTests.holes(points).isEmpty, "every sample from the first on")
        #expect((indexAtStart - 2...indexAtStart + 3).contains(indices.first ?? -1),
                "from the start: \(indices.first ?? -1), the board at \(indexAtStart)")
        #expect((indices.last ?? -1) >= before - 2, "up to the stop: \(indices.last ?? -1), the board at \(before) when it was asked for")
        #expect((indices.last ?? .max) <= after + 1, "nothing the board took after the stop: \(indices.last ?? -1), the board at \(after)")
        #expect(missed == 0, "nothing marked missing: \(missed)")
        #expect(Set(record.gscopeData) == Set(dataset.chunkNames), "the records document names the correction chunks")
    }
}
