import Foundation
import Gateway
import Recording
import Testing
import TestSupport

/// A board's stream stalled when the session stops, end to end through dbus-daemon and the
/// simulated BlueZ (issue 21): the board's link is up, it withholds its notifications and goes on
/// measuring and logging. Nothing streamed shows the stall before the stop, yet every sample the
/// board took up to the stop is in the session once, in order, the stall's backfilled from its
/// flash log (sealed as correction chunks the records document names), none marked missing.
@Suite("Backfill end to end: a stream stalled at the stop")
struct StallAtStopEndToEndTests {
    /// The stop 0.9 s after the stall began: the board is linked and silent, the stream
    /// watchdog (1 s from the last notification, which the link delivers a few hundred ms after
    /// the stall began: what the board queued before it) most likely has not acted yet.
    @Test func aStallOfUnderASecondIsFilled() async throws {
        try await run { _ in try await Task.sleep(for: .milliseconds(900)) }
    }

    /// The stop after the watchdog restarted the stream (the board's stream starts again on the
    /// same link, still silent): a new stream of the board, with nothing streamed on it.
    @Test func aStallAfterTheWatchdogsStreamRestartIsFilled() async throws {
        try await run { h in
            // The watchdog's restart writes the gyro's stop and start again (module 0x13).
            func gyroWrites() async throws -> Int { try await h.simulator.commandLog(0).filter { $0.first == 0x13 }.count }
            let before = try await gyroWrites()
            var waited = 0
            while try await gyroWrites() == before, waited < 100 {
                try await Task.sleep(for: .milliseconds(50))
                waited += 1
            }
            #expect(try await gyroWrites() > before, "the watchdog restarted the stream during the stall")
            try await Task.sleep(for: .milliseconds(300))
        }
    }

    /// Stalls board 0 for 6 s once it streamed 3 s into a session, runs `untilTheStop`, stops
    /// the session and checks the board's points once its log is read.
    func run(untilTheStop: (GatewayHarness) async throws -> Void) async throws {
        try await BackfillEndToEndTests.recording { h, pipeline, sessionID in
            let board = h.addresses[0].rawValue
            try await h.eventually("samples before the stall") { s in s.boards.allSatisfy { $0.gyroSamplesInSession >= 300 } }
            try await h.simulator.stall(0, seconds: 6)
            try await untilTheStop(h)
            let before = try await h.simulator.measuredRuns(0, sensor: .gyro).last.map { Int($0.last) } ?? 0
            try await pipeline.stopSession()
            let after = try await h.simulator.measuredRuns(0, sensor: .gyro).last.map { Int($0.last) } ?? 0
            let record = try await pipeline.submitSurvey(.noHazard, sessionID: sessionID, waitingForBackfillAtMost: .seconds(60))
            let dataset = try h.gateway.store.dataset(sessionID: sessionID)
            let points = dataset.points.filter { $0.board == board }.map(\.point)
            let indices = points.map(BackfillEndToEndTests.index)
            let holes = BackfillEndToEndTests.holes(points)
            let backfilled = points.filter(\.backfilled)
            let missed = points.reduce(0) { $0 + $1.missedBefore }
            let last = indices.last ?? -1
            print("stall at the stop: \(points.count) points (\(backfilled.count) backfilled), last \(last) "
                  + "(the board at \(before)-\(after) at the stop), holes \(holes), missed \(missed)")
            #expect(Set(indices).count == indices.count, "no sample twice")
            #expect(zip(points, points.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp }, "time order")
            #expect(holes.isEmpty, "every sample the board took is in the session: \(holes)")
            #expect(last >= before - 2, "up to the stop: \(last), the board at \(before) when it was asked for")
            #expect(last <= after + 1, "nothing the board took after the stop: \(last), the board at \(after) when it returned")
            // The stall is the session's tail: what the stream did not bring came from the log.
            let streamedLast = points.last { !$0.backfilled }.map(BackfillEndToEndTests.index) ?? 0
            #expect(!backfilled.isEmpty && backfilled.allSatisfy { BackfillEndToEndTests.index($0) > streamedLast },
                    "the stall after the last streamed point (\(streamedLast)) came from the log: \(backfilled.count) backfilled")
            #expect(missed == 0, "nothing marked missing: \(missed)")
            #expect(Set(record.gscopeData) == Set(dataset.chunkNames), "the records document names every chunk, the corrections too")
        }
    }
}
