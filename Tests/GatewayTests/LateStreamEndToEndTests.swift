import BlueZ
import Foundation
import Gateway
import Recording
import Testing
import TestSupport

/// A board's notifications held by the host for 3 s and then handed on, nothing lost (issues
/// 18 §2.5/§2.6, 21: the real-BlueZ VM's startnotify group, bluetoothd slow to hand on), end to
/// end through dbus-daemon and the simulated BlueZ, backfill off (no readout corrects anything
/// afterwards). The stream watchdog restarted such a stream and then gave its link up: the
/// restart turned the gyro off until its start arrived, the new link's timestamper began on
/// late arrivals, and what bluetoothd held went with the link.
@Suite("A late stream end to end")
struct LateStreamEndToEndTests {
    @Test func aStreamLateByThreeSecondsIsRecordedWholeWithoutAMark() async throws {
        // StartNotify, as in the VM (D-Bus signals: a late lump waits in the bus, where an
        // AcquireNotify socket takes only so much).
        try await GatewayHarness.with(mode: .manual, gnss: false, delivery: .propertiesChanged) { h in
            try await h.eventually("both boards connected") { s in s.boards.count == 2 && s.boards.allSatisfy { $0.isConnected } }
            let pipeline = h.gateway.pipeline
            let sessionID = try await pipeline.startSession()
            let board = h.addresses[0].rawValue
            try await h.eventually("samples before the delay") { s in s.boards.allSatisfy { $0.gyroSamplesInSession >= 300 } }
            let gyroStart: [UInt8] = [0x13, 0x01, 0x01]
            let startsBefore = try await h.simulator.commandLog(0).filter { $0 == gyroStart }.count
            try await h.simulator.delay(0, seconds: 3)
            try await Task.sleep(for: .seconds(3))
            let afterDelay = await pipeline.status.boards.first { $0.address == board }?.gyroSamplesInSession ?? 0
            try await h.eventually("samples after the delay") { s in
                (s.boards.first { $0.address == board }?.gyroSamplesInSession ?? 0) >= afterDelay + 300
            }
            try await pipeline.stopSession()
            let startsAfter = try await h.simulator.commandLog(0).filter { $0 == gyroStart }.count
            let points = try h.gateway.store.dataset(sessionID: sessionID).points.filter { $0.board == board }.map(\.point)
            let indices = points.map(BackfillEndToEndTests.index)
            let holes = BackfillEndToEndTests.holes(points)
            let marks = points.filter { $0.missedBefore > 0 }.map { "\(BackfillEndToEndTests.index($0)): \($0.missedBefore)" }
            // Each stamp less the board's sampling time (50 Hz: 20 ms a sample from the first point):
            // constant up to the timestamper's accuracy when nothing was lost.
            let first = try #require(points.first)
            let offsets = points.map { p in
                p.gyroscope.timestamp - first.gyroscope.timestamp - Double(BackfillEndToEndTests.index(p) - indices[0]) * 20
            }
            let (beforeDelay, afterIt) = (offsets.prefix(200), offsets.suffix(200))
            let spread = { (o: ArraySlice<Double>) in (o.max() ?? 0) - (o.min() ?? 0) }
            let step = abs(afterIt.sorted()[afterIt.count / 2] - beforeDelay.sorted()[beforeDelay.count / 2])
            let stats = try await h.simulator.stats(0)
            let delivered = try await h.simulator.deliveredRuns(0, sensor: .gyro)
            print("late stream: board delivered \(delivered), dropped \(stats.droppedByRateCap) + \(stats.droppedByFault)")
            print("late stream: \(points.count) points, holes \(holes), marks \(marks), gyro starts \(startsBefore)->\(startsAfter), "
                  + "stamp offset spread before \(spread(beforeDelay)) ms, after \(spread(afterIt)) ms, median step \(step) ms")
            #expect(startsAfter == startsBefore, "the late stream was restarted")
            #expect(Set(indices).count == indices.count && holes.isEmpty, "every sample once: holes \(holes)")
            #expect(marks.isEmpty, "false gap marks: \(marks)")
            #expect(step <= 5, "the stamps after the delay moved by \(step) ms")
        }
    }
}
