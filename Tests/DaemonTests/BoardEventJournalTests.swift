import Daemon
import Foundation
import ServiceSupport
import StatusModel
import TestSupport
import Testing

/// The journal's board-connected and board-lost events as an operator reads them: one of each
/// per real loss and return of a board, none for a session that starts or a stream that pauses.
@Suite struct BoardEventJournalTests {
    static let address = "E8:C9:8F:52:7B:07"
    static let model = "MetaMotion R (BMI160), firmware 1.7.2, gyro rev 1, accelerometer rev 1"

    static func snapshot(_ state: String, samples: Bool) -> GatewayStatus {
        GatewayStatus(
            generatedAt: 1_790_000_000,
            boards: [BoardStatus(address: address, state: state, isStreaming: samples, model: model, gyroRateHz: 100)],
            gnss: GNSSStatus(source: nil),
            session: SessionStatus(state: SessionStatus.idle, sessionID: nil, trigger: nil, startedAt: nil, awaitingSurvey: [],
                                   chunksSealed: 0, mode: "manual"),
            clock: ClockStatus(systemClockSynchronised: true, timeSource: "system"), backlog: nil, sync: .notConfigured,
            storage: StorageStatus(stateDirectory: "/tmp/x", freeBytes: nil, bufferBytes: nil, budgetMaxBytes: 1 << 30,
                                   budgetMinFreeBytes: 0),
            problems: [])
    }

    static let idle = snapshot("idle (sensors off; \(model))", samples: false)
    static let askedToStream = snapshot("streaming (\(model))", samples: false)
    static let streaming = snapshot("streaming (\(model))", samples: true)
    static let restarting = snapshot("restarting the stream (restart 1)", samples: false)
    static let lost = snapshot("lost: link dropped", samples: false)
    static let reconnecting = snapshot("reconnecting (attempt 1)", samples: false)

    /// How many board-connected and board-lost events the journal got for `snapshots`, in order.
    static func events(_ snapshots: [GatewayStatus]) async -> (connected: Int, lost: Int, text: String) {
        let capture = LogCapture()
        let reporter = StatusReporter(logger: capture.logger(), notifier: SystemdNotifier(environment: [:]))
        for snapshot in snapshots { await reporter.observe(snapshot) }
        let lines = capture.text.split(separator: "\n")
        return (lines.filter { $0.contains(MessageID.boardConnected.rawValue) }.count,
                lines.filter { $0.contains(MessageID.boardLost.rawValue) }.count, capture.text)
    }

    @Test func aSessionsStartIsNoLossOfTheBoard() async {
        // Idle, then the session turns the stream on: samples come a moment later, or never at
        // a logged rate (the board records to flash).
        let started = await Self.events([Self.idle, Self.askedToStream, Self.askedToStream, Self.streaming, Self.idle])
        #expect(started.connected == 1 && started.lost == 0, "\(started.text)")
        let logged = await Self.events([Self.idle, Self.askedToStream, Self.askedToStream, Self.idle])
        #expect(logged.connected == 1 && logged.lost == 0, "\(logged.text)")
    }

    @Test func aPauseInTheSamplesIsNoLossOfTheBoard() async {
        let paused = await Self.events([Self.idle, Self.streaming, Self.askedToStream, Self.streaming])
        #expect(paused.connected == 1 && paused.lost == 0, "\(paused.text)")
    }

    @Test func aSilentLinkGivesOneLostAndOneConnected() async {
        // The board goes quiet; the stream is restarted on the same link and stays without
        // samples; the link is given up; the board comes back and streams.
        let silent = await Self.events([
            Self.streaming, Self.askedToStream, Self.restarting, Self.askedToStream, Self.lost, Self.reconnecting,
            Self.askedToStream, Self.streaming,
        ])
        #expect(silent.connected == 2 && silent.lost == 1, "\(silent.text)")
    }

    @Test func aDroppedLinkGivesOneLostAndOneConnected() async {
        let dropped = await Self.events([Self.idle, Self.streaming, Self.lost, Self.reconnecting, Self.idle])
        #expect(dropped.connected == 2 && dropped.lost == 1, "\(dropped.text)")
    }
}
