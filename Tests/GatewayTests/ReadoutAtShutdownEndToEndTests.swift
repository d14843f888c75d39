import BlueZ
import Foundation
import Gateway
import GatewayTestSupport
import Logging
import Recording
import StatusModel
import Testing
import TestSupport

/// A graceful shutdown (SIGTERM) while a board's flash log is read out to fill a gap leaves
/// the readout where it is (issue 18 §2.7: the seal does not wait on its pages), and loses
/// nothing: the session's stop keeps the gap with its end, the board keeps every page not
/// confirmed, and the next run of the gateway on the same buffer reads them and fills the gap.
/// End to end through dbus-daemon and the simulated BlueZ: board 0 stalls for 3 s while it
/// logs on, the gateway shuts down as soon as the gap's readout is under way, a second gateway
/// starts on the same state directory, and the stopped session then holds every sample board 0
/// took for it once, in order, none marked missing. ``ReadoutsAtShutdownTests`` shows the
/// shutdown leaving a page unanswered instead of placing it, and `BackfillMergeTests`
/// (`aShutdownSealsTheSamplesOfThePagesConfirmedBeforeIt`) the pages confirmed before the
/// shutdown sealed by it (a SIGTERM 1.5 s into this gap's readout at 2,100 entries/s lost 68 or
/// all 150 of its samples before).
@Suite("A readout under way at the shutdown, filled by the next run")
struct ReadoutAtShutdownEndToEndTests {
    typealias Points = BackfillEndToEndTests

    static func settings(_ addresses: [BluetoothAddress], _ stateDirectory: String, _ busAddress: String) -> GatewaySettings {
        var settings = GatewaySettings(boards: .addresses(addresses), streaming: SimulatedGatewayRig.streaming, gnss: nil,
                                       sessionMode: .always, stateDirectory: stateDirectory, busAddress: busAddress,
                                       alwaysModeIdleStop: .seconds(30))
        settings.backfill = true
        return settings
    }

    @Test(.timeLimit(.minutes(4)))
    func theNextRunFillsTheGapWhoseReadoutTheShutdownLeft() async throws {
        let logs = LogCapture()
        try await SimulatedGatewayRig.with(label: "leftreadout", settings: Self.settings, logs: logs) { rig in
            let board = rig.addresses[0].rawValue
            let first = rig.gateway
            let group = first.serviceGroup(gracefulShutdownSignals: [])
            var readoutAtTheShutdown: String?
            try await RunningServices.with(run: { try await group.run() }, shutDown: { await group.triggerGracefulShutdown() }) { services in
                try await Self.eventually(first, "board 0 recording") { s in
                    let inSession: Int = s.boards.first { $0.address == board }?.gyroSamplesInSession ?? 0
                    return inSession >= 300
                }
                try await rig.simulator.stall(0, seconds: 3)
                let status = try await Self.eventually(first, "the gap's readout under way", timeout: .seconds(60)) { s in
                    let flashLog: String = s.boards.first { $0.address == board }?.flashLog ?? ""
                    return flashLog.contains("downloading")
                }
                // At once: the readout (the model's 400 entries/s) reaches the gap's entries only
                // after the 6 s logged before it, so the gap is still open at the shutdown.
                readoutAtTheShutdown = status.boards.first { $0.address == board }?.flashLog
                try await services.shutDown()
            }
            let sessionID = try #require(try first.store.sessionsAwaitingSurvey().last, "the shut-down session awaits its survey")
            let atTheShutdown = try first.store.dataset(sessionID: sessionID).points.filter { $0.board == board }.map(\.point)
            print("shutdown during the readout (\(readoutAtTheShutdown ?? "-")): \(atTheShutdown.count) points, "
                  + "holes \(Points.holes(atTheShutdown)); \(logs.text.split(separator: "\n").filter { $0.contains("left unanswered") })")

            // The next run, on the same buffer: the board's log fills the gap the shutdown kept.
            let second = try await Gateway.assemble(settings: Self.settings(rig.addresses, rig.stateDirectory.path, rig.bus.address),
                                                    logger: Logger(label: "mwgate.leftreadout.next"),
                                                    clockProbe: FixedClockSynchronisation(false))
            let nextGroup = second.serviceGroup(gracefulShutdownSignals: [])
            try await RunningServices.with(run: { try await nextGroup.run() },
                                           shutDown: { await nextGroup.triggerGracefulShutdown() }) { services in
                let deadline = ContinuousClock.now + .seconds(120)
                while ContinuousClock.now < deadline {
                    let points = try second.store.dataset(sessionID: sessionID).points.filter { $0.board == board }.map(\.point)
                    if Points.holes(points).isEmpty, points.allSatisfy({ $0.missedBefore == 0 }) { break }
                    try await Task.sleep(for: .milliseconds(250))
                }
                try await services.shutDown()
            }
            let points = try second.store.dataset(sessionID: sessionID).points.filter { $0.board == board }.map(\.point)
            let indices = points.map(Points.index)
            let missed = points.filter { $0.missedBefore > 0 }
            print("after the next run: \(points.count) points, \(points.filter(\.backfilled).count) backfilled, "
                  + "holes \(Points.holes(points)), marked missing \(missed.map { "\(Points.index($0)): \($0.missedBefore)" })")
            #expect(!atTheShutdown.isEmpty && !Points.holes(atTheShutdown).isEmpty, "the gap was open at the shutdown")
            #expect(Set(indices).count == indices.count, "no sample twice")
            #expect(zip(points, points.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp }, "time order")
            #expect(Points.holes(points).isEmpty, "every sample board 0 took for the session is in it: \(Points.holes(points))")
            #expect(missed.isEmpty, "none marked missing")
            #expect(points.filter(\.backfilled).count >= 100, "the 3 s gap came from the log")
        }
    }

    /// Polls `gateway`'s status until `condition` holds.
    @discardableResult
    static func eventually(_ gateway: Gateway, _ what: String, timeout: Duration = .seconds(60),
                           _ condition: (GatewayStatus) -> Bool) async throws -> GatewayStatus {
        let deadline = ContinuousClock.now + timeout
        while true {
            let status = await gateway.pipeline.status
            if condition(status) { return status }
            guard ContinuousClock.now < deadline else { throw TestBusError(message: "timed out waiting for \(what); status: \(status)") }
            try await Task.sleep(for: .milliseconds(50))
        }
    }
}
