import Foundation
import Gateway
import Recording
import Testing
import TestSupport

/// A board's stream stalled across a session's stop and the next start, end to end through
/// dbus-daemon and the simulated BlueZ (issue 21), with the sensors off between sessions (the
/// default, and the soak's). The stream watchdog drops the silent board's link before the stop
/// (no data 1 s after a stream restart), so it is away at the stop; it links again between
/// sessions with its sensors off, and the start turns them on while its notifications are still
/// withheld. Every sample it took from the new start is in the new session once, in order, what
/// the stall withheld backfilled from its flash log, none marked missing (not the 30-130 ms its
/// sensors took to start).
@Suite("Backfill end to end: a stream stalled at a session's start")
struct StallAtStartEndToEndTests {
    @Test func aStallAcrossTheNextStartIsFilled() async throws {
        try await BackfillEndToEndTests.recording { h, pipeline, first in
            let board = h.addresses[0].rawValue
            try await h.eventually("samples before the stall") { s in s.boards.allSatisfy { $0.gyroSamplesInSession >= 300 } }
            try await h.simulator.stall(0, seconds: 6)
            try await Task.sleep(for: .seconds(2))
            _ = try await pipeline.stopSession()
            try await Task.sleep(for: .milliseconds(500))
            let second = try await pipeline.startSession()
            // The board's newest sample once the session started (with its sensors off between
            // sessions, the last before they stopped: the session's first comes next).
            let indexAtStart = Int(try await h.simulator.measuredRuns(0, sensor: .gyro).last?.last ?? 0)
            // The stall ends 3.5 s after the start; the stream then runs a few seconds.
            try await Task.sleep(for: .seconds(8))
            _ = try await pipeline.stopSession()
            _ = try await pipeline.submitSurvey(.noHazard, sessionID: first, waitingForBackfillAtMost: .seconds(60))
            _ = try await pipeline.submitSurvey(.noHazard, sessionID: second, waitingForBackfillAtMost: .seconds(60))
            let points = try h.gateway.store.dataset(sessionID: second).points.filter { $0.board == board }.map(\.point)
                .sorted { $0.gyroscope.timestamp < $1.gyroscope.timestamp }
            let indices = points.map(BackfillEndToEndTests.index)
            let backfilled = points.filter(\.backfilled)
            let missed = points.reduce(0) { $0 + $1.missedBefore }
            let firstStreamed = points.first { !$0.backfilled }.map(BackfillEndToEndTests.index) ?? -1
            print("stall at the start: \(points.count) points (\(backfilled.count) backfilled), first \(indices.first ?? -1), "
                  + "first streamed \(firstStreamed), the board at \(indexAtStart) at the start, "
                  + "holes \(BackfillEndToEndTests.holes(points)), missed \(missed)")
            print("gap marks: \(points.filter { $0.missedBefore > 0 }.map { "\(BackfillEndToEndTests.index($0))\($0.backfilled ? "b" : "") missed \($0.missedBefore) gap \($0.gapMilliseconds) ms" })")
            #expect(Set(indices).count == indices.count, "no sample twice")
            #expect(BackfillEndToEndTests.holes(points).isEmpty, "every sample from the first on")
            #expect((indices.first ?? -1) <= indexAtStart + 2, "from the start: \(indices.first ?? -1), the board at \(indexAtStart)")
            #expect(!backfilled.isEmpty && backfilled.allSatisfy { BackfillEndToEndTests.index($0) < firstStreamed },
                    "what the stall withheld came from the log: \(backfilled.count) backfilled before \(firstStreamed)")
            #expect(missed == 0, "nothing marked missing: \(missed)")
        }
    }
}
