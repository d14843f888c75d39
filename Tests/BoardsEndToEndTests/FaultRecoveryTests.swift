import BlueZ
@testable import BlueZSimulator
import Boards
import DBus
import Foundation
import MetaWear
import MetaWearBoardModel
import TestSupport
import Testing

/// One board session on a rig, with its events recorded.
private struct SingleBoard {
    let rig: EndToEndRig
    let session: BoardSession
    let address: BluetoothAddress
    let recorder: EventRecorder

    /// Waits until the board streams and at least `count` samples arrived after `marker`
    /// (after the link came back when `relinked`).
    func waitForSamples(after marker: String? = nil, relinked: Bool = true, count: Int = 20,
                        within limit: Duration = .seconds(30)) async throws {
        try await waitUntil("\(count) samples\(marker.map { " after \($0)" } ?? "")", within: limit) {
            guard let marker else { return recorder.samples(address).count >= count }
            let samples = relinked ? recorder.samplesAfterRecovery(address, marker: marker)
                                   : recorder.samplesAfter(address, marker: marker)
            return samples.count >= count
        }
    }
}

extension SingleBoard {
    /// Causes a link loss with `fault`, waits until the board streams again, and returns what
    /// the session wrote to the board from the fault until its reconnect's handshake was over:
    /// an LED signal set after the fault is written with or after the handshake's last writes
    /// (the link's writes leave in order), so every write before it is in the board's log.
    func reconnectWrites(_ fault: () async throws -> Void) async throws -> [[UInt8]] {
        let before = try await rig.simulator.commandLog(0).count
        recorder.mark(address, "fault")
        try await fault()
        try await waitForSamples(after: "fault", count: 30, within: .seconds(20))
        await session.setLED(.recording)
        let ledModule: UInt8 = 0x02
        var writes: [[UInt8]] = []
        try await waitUntil("the LED signal after the reconnect", within: .seconds(20)) {
            writes = Array(try await rig.simulator.commandLog(0).dropFirst(before))
            return writes.contains { $0.first == ledModule }
        }
        return Array(writes.prefix { $0.first != ledModule })
    }
}

private func withBoard(model: SimulatorConfiguration.Model = .metamotionR,
                       options: BoardSessionOptions? = nil,
                       configure: (inout SimulatorConfiguration) -> Void = { _ in },
                       beforeStart: (EndToEndRig) async throws -> Void = { _ in },
                       _ body: (SingleBoard) async throws -> Void) async throws {
    try await EndToEndRig.with(boards: 1, model: model, configure: configure) { rig in
        try await beforeStart(rig)
        let address = try await rig.address(0)
        let session = BoardSession(address: address, client: rig.client, options: try options ?? testOptions())
        let recorder = EventRecorder()
        let forwarder = recordEvents(session.events, into: recorder)
        async let _ = session.run()
        let board = SingleBoard(rig: rig, session: session, address: address, recorder: recorder)
        var failure: (any Error)?
        do { try await body(board) } catch { failure = error }
        await session.stop()
        await forwarder.value
        if let failure { throw failure }
        // Whatever happened, the samples that arrived are exact and in order.
        let samples = recorder.samples(address)
        expectStrictlyIncreasing(samples, board: "board 0")
        #expect(expectExactValues(samples, seed: 1, board: "board 0") == 0)
    }
}

@Suite("Boards end to end: faults and recovery against mwsim", .enabled(if: TestBus.isAvailable))
struct FaultRecoveryTests {
    /// After each of five injected link drops (supervision timeout) the board streams again on
    /// a new link of its own, with the DEFAULT handshake options (the 1.5 s settle pause after
    /// the connection-parameter request belongs to the first connection only).
    ///
    /// How soon it streams again is speed, measured by `make bench` (the reconnect rows:
    /// link back -> first sample, on mwsim and in the real-BlueZ VM), never asserted here:
    /// this test once held a 2 s median, which a loaded CI machine's scheduling decides as
    /// much as the gateway does. It prints the times for the reader.
    @Test(.timeLimit(.minutes(2)))
    func everyLinkDropIsFollowedByANewLinkThatStreams() async throws {
        try await withBoard(options: try testOptions(delivery: .propertiesChanged)) { board in
            try await board.waitForSamples()
            var recoveries: [Duration] = []
            for drop in 1...5 {
                let marker = "drop \(drop)"
                board.recorder.mark(board.address, marker)
                let droppedAt = ContinuousClock.now
                try await board.rig.simulator.dropLink(0)
                try await board.waitForSamples(after: marker, count: 1)
                let first = try #require(board.recorder.samplesAfterRecovery(board.address, marker: marker).first)
                recoveries.append(first.receivedAt - droppedAt)
                try await board.waitForSamples(after: marker, count: 30)
            }
            print("link-drop recovery (drop -> first new sample): \(recoveries.map { String(format: "%.3f s", $0.seconds) }.joined(separator: ", "))")
            #expect(try await board.rig.simulator.stats(0).connections == 6, "one new link per drop")
            let samples = board.recorder.samples(board.address)
            expectStrictlyIncreasing(samples, board: "board 0")
        }
    }

    /// bluetoothd 5.66's connect race: the link is up but `Connected=true` was never signalled,
    /// so the `Connected=false` of a later drop changes nothing we know. The drop must still be
    /// noticed at once (the notification channel closes, `ServicesResolved` goes false), not
    /// when bluetoothd removes the device object (31 s in the real-BlueZ VM; 60 s here), on
    /// both notification paths.
    @Test(.timeLimit(.minutes(2)), arguments: [NotificationDelivery.automatic, .propertiesChanged])
    func aDropAfterAnUnannouncedConnectIsNoticed(delivery: NotificationDelivery) async throws {
        try await withBoard(options: try testOptions(delivery: delivery),
                            configure: { $0.connectedSignalMissed = [0]; $0.temporaryTimeout = .seconds(60) }) { board in
            try await board.waitForSamples()
            board.recorder.mark(board.address, "drop")
            try await board.rig.simulator.dropLink(0)
            try await waitUntil("the drop is reported", within: .seconds(20)) {
                board.recorder.entries(board.address).drop { if case .marker("drop") = $0 { false } else { true } }
                    .contains { if case .state(.lost) = $0 { true } else { false } }
            }
            try await board.waitForSamples(after: "drop", count: 30, within: .seconds(20))
            #expect(try await board.rig.simulator.stats(0).connections == 2)
        }
    }

    /// bluetoothd keeps a board's GATT objects across a link drop (`Cache = always`) and, once
    /// `Connect` returns, accepts StartNotify on them and delivers from the CCCD write on, while it
    /// still checks or rediscovers the services (0.3-2.5 s in the real-BlueZ VM, 60 s here): a
    /// board that streamed before the drop streams again before `ServicesResolved`. Waiting for
    /// it lost every sample of those seconds.
    @Test(.timeLimit(.minutes(2)))
    func aReconnectStreamsBeforeTheServicesAreResolvedAgain() async throws {
        try await withBoard(options: try testOptions(delivery: .propertiesChanged),
                            configure: { $0.keptServicesResolveDelay = .seconds(60) }) { board in
            try await board.waitForSamples()
            board.recorder.mark(board.address, "drop")
            try await board.rig.simulator.dropLink(0)
            try await board.waitForSamples(after: "drop", count: 30, within: .seconds(20))
            let facts = await board.rig.client.facts(for: board.address)
            #expect(facts.connected && !facts.servicesResolved,
                    "samples after the reconnect came before ServicesResolved (connected \(facts.connected), resolved \(facts.servicesResolved))")
            #expect(try await board.rig.simulator.stats(0).connections == 2)
        }
    }

    /// The same on the AcquireNotify path: bluetoothd 5.66 hands out the socket only once its
    /// GATT client is ready, so the samples come at `ServicesResolved`, but the call is made as
    /// soon as `Connect` returns, so nothing of ours is left between the two.
    @Test(.timeLimit(.minutes(2)))
    func aReconnectAcquiresTheNotificationsBeforeTheServicesAreResolvedAgain() async throws {
        try await withBoard(configure: { $0.keptServicesResolveDelay = .seconds(3) }) { board in
            try await board.waitForSamples()
            board.recorder.mark(board.address, "drop")
            try await board.rig.simulator.dropLink(0)
            try await board.waitForSamples(after: "drop", count: 30, within: .seconds(20))
            let early = board.rig.simulatorLog.all.filter { $0.contains("AcquireNotify") && $0.contains("before ServicesResolved") }
            #expect(early.count == 1, "AcquireNotify before ServicesResolved on the reconnect: \(early)")
            #expect(try await board.rig.simulator.stats(0).connections == 2)
        }
    }

    /// The reconnect's `AcquireNotify` goes out on a bus connection that was open before the
    /// link dropped: opening the link's own connection (connect, authenticate, `Hello`) after
    /// `Connect` returned was most of the 0.02-0.19 s between the two in the real-BlueZ VM, and
    /// without bluetoothd's plugins that call is the last step before the board's CCCD write.
    @Test(.timeLimit(.minutes(2)))
    func aReconnectAcquiresOnABusConnectionOpenedBeforeTheLinkCameBack() async throws {
        try await withBoard { board in
            try await board.waitForSamples()
            let namesBeforeDrop = try await Self.busNames(board.rig)
            board.recorder.mark(board.address, "drop")
            try await board.rig.simulator.dropLink(0)
            try await board.waitForSamples(after: "drop", count: 30, within: .seconds(20))
            #expect(try await board.rig.simulator.stats(0).connections == 2)
            let acquires = board.rig.simulatorLog.all.filter { $0.contains("AcquireNotify by ") }
            let sender = try #require(acquires.last?.components(separatedBy: "AcquireNotify by ").last?
                .split(separator: " ").first.map(String.init), "no AcquireNotify on the reconnect: \(acquires)")
            #expect(namesBeforeDrop.contains(sender),
                    "the reconnect's AcquireNotify came from \(sender), a connection opened after the drop (on the bus before it: \(namesBeforeDrop.sorted()))")
        }
    }

    /// The unique and well-known names on the rig's bus (`ListNames`).
    private static func busNames(_ rig: EndToEndRig) async throws -> Set<String> {
        let reply = try await rig.client.connection.call(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                         interface: "org.freedesktop.DBus", member: "ListNames", timeout: .seconds(10))
        let names: [String] = try reply.decode([String].self)
        return Set(names)
    }

    /// A board keeps its sensors' setup through a link drop; the reconnect reads its clock,
    /// finds the same boot (reset counter) and writes none of the gyro's setup again, and the
    /// stream goes on (issue 18 defect 3: no configuration writes the board still holds).
    @Test(.timeLimit(.minutes(2)))
    func aReconnectWritesNoSetupTheBoardStillHolds() async throws {
        try await withBoard { board in
            try await board.waitForSamples()
            let writes = try await board.reconnectWrites { try await board.rig.simulator.dropLink(0) }
            #expect(writes.contains([0x0B, 0x84]), "the reconnect reads the board clock: \(writes)")
            #expect(!writes.contains { $0.first == Self.gyroModule }, "the gyro's setup was written again: \(writes)")
        }
    }

    /// A board that reset while its link was down (its clock's reset counter changed) lost
    /// its setup: the reconnect writes it again and the board streams.
    @Test(.timeLimit(.minutes(2)))
    func aBoardThatResetIsSetUpAgainOnTheReconnect() async throws {
        try await withBoard { board in
            try await board.waitForSamples()
            let writes = try await board.reconnectWrites { try await board.rig.simulator.resetBoard(0) }
            let start = try #require(writes.firstIndex(of: [0x13, 0x01, 0x01]), "the gyro was not started again: \(writes)")
            // Started by the reconnect itself, not by the stream watchdog, whose restart stops
            // the gyro (13 01 00) before it starts it.
            #expect(!writes[..<start].contains([0x13, 0x01, 0x00]), "the stream watchdog had to start it: \(writes)")
        }
    }

    /// Found in the real-BlueZ VM bench: a resumed reconnect announced streaming when the link
    /// came back and again when its handshake ended (the board clock read there changes the
    /// description), so the recording pipeline cut the stream in two and the journal logged the
    /// board lost and connected again on every drop.
    @Test(.timeLimit(.minutes(2)))
    func aResumedReconnectAnnouncesStreamingOnce() async throws {
        try await withBoard { board in
            try await board.waitForSamples()
            _ = try await board.reconnectWrites { try await board.rig.simulator.dropLink(0) }
            // Samples recorded from now on came after everything the handshake's end announced.
            let before = board.recorder.samples(board.address).count
            try await waitUntil("samples after the handshake") { board.recorder.samples(board.address).count >= before + 20 }
            let entries = board.recorder.entries(board.address)
            let fault = try #require(entries.lastIndex { if case .marker("fault") = $0 { true } else { false } })
            let streaming = entries[fault...].filter { if case .state(.streaming) = $0 { true } else { false } }
            #expect(streaming.count == 1, "streaming announced \(streaming.count) times after the drop: \(board.recorder.states(board.address))")
        }
    }

    /// The BMI160 gyro's module id (MetaMotion R).
    static let gyroModule: UInt8 = 0x13

    /// With the notify session kept through drops, the reconnect makes no notify call at all:
    /// the simulated bluetoothd re-enables the session it kept as the link comes back, and the
    /// board's samples flow while its services are still being resolved (60 s late here).
    @Test(.timeLimit(.minutes(2)))
    func aKeptNotifySessionStreamsAfterADropWithoutANewNotifyCall() async throws {
        try await withBoard(options: try testOptions(delivery: .sessionKeptOverDrops),
                            configure: { $0.keptServicesResolveDelay = .seconds(60) }) { board in
            try await board.waitForSamples()
            board.recorder.mark(board.address, "drop")
            try await board.rig.simulator.dropLink(0)
            try await board.waitForSamples(after: "drop", count: 30, within: .seconds(20))
            let calls = board.rig.simulatorLog.all.filter { $0.contains("StartNotify by") || $0.contains("AcquireNotify by") }
            #expect(calls.count == 1, "one notify call for both links: \(calls)")
            let facts = await board.rig.client.facts(for: board.address)
            #expect(facts.connected && !facts.servicesResolved,
                    "samples after the reconnect came before ServicesResolved (connected \(facts.connected), resolved \(facts.servicesResolved))")
            #expect(try await board.rig.simulator.stats(0).connections == 2)
        }
    }

    /// A stall longer than the watchdog threshold (1 s here) is noticed, the stream restarted,
    /// and samples flow again once the board sends.
    @Test(.timeLimit(.minutes(1)))
    func stalledStreamRecovers() async throws {
        try await withBoard { board in
            try await board.waitForSamples()
            board.recorder.mark(board.address, "stall")
            try await board.rig.simulator.stall(0, seconds: 2.5)
            try await waitUntil("the watchdog restarts the stream") {
                board.recorder.states(board.address).contains { if case .recoveringStream = $0 { true } else { false } }
            }
            try await board.waitForSamples(after: "stall", relinked: false, count: 50)
            let stats = try await board.rig.simulator.stats(0)
            #expect(stats.withheldByStall > 0, "the simulator really withheld samples: \(stats)")
        }
    }

    /// The board leaves radio range (its object is removed) and comes back: the session
    /// rescans and streams again without operator action.
    @Test(.timeLimit(.minutes(1)))
    func vanishedDeviceIsFoundAgain() async throws {
        try await withBoard { board in
            try await board.waitForSamples()
            board.recorder.mark(board.address, "vanish")
            try await board.rig.simulator.vanishDevice(0)
            try await waitUntil("the session notices the loss") {
                board.recorder.states(board.address).contains { if case .lost = $0 { true } else { false } }
            }
            try await Task.sleep(for: .seconds(1))
            #expect(board.recorder.samplesAfterRecovery(board.address, marker: "vanish").isEmpty)
            try await board.rig.simulator.restoreDevice(0)
            try await board.waitForSamples(after: "vanish", count: 30)
        }
    }

    /// bluetoothd restarts (org.bluez vanishes with every object and comes back with only the
    /// adapter): the session waits, rediscovers and streams again.
    @Test(.timeLimit(.minutes(1)))
    func bluetoothdRestartIsSurvived() async throws {
        try await withBoard(options: try testOptions(delivery: .automatic)) { board in
            try await board.waitForSamples()
            board.recorder.mark(board.address, "restart")
            try await board.rig.simulator.restartBluetoothd()
            try await board.waitForSamples(after: "restart", count: 30)
            #expect(try await board.rig.simulator.stats(0).connections == 2)
        }
    }

    /// Connects refused with `le-connection-abort-by-local` (first connect) and `InProgress`
    /// (a reconnect) are retried and succeed.
    @Test(.timeLimit(.minutes(1)))
    func refusedConnectsAreRetried() async throws {
        try await withBoard(beforeStart: { rig in
            try await rig.simulator.refuseNextConnect(0, error: "le-connection-abort-by-local")
        }) { board in
            try await board.waitForSamples()
            board.recorder.mark(board.address, "refuse in-progress")
            try await board.rig.simulator.refuseNextConnect(0, error: "org.bluez.Error.InProgress")
            try await board.rig.simulator.dropLink(0)
            try await board.waitForSamples(after: "refuse in-progress", count: 30)
            let refusals = board.rig.simulatorLog.all.filter { $0.contains("refuses Connect") }
            #expect(refusals.count == 2, "\(refusals)")
            #expect(refusals.first?.contains("le-connection-abort-by-local") == true)
            #expect(refusals.last?.contains("InProgress") == true)
            #expect(try await board.rig.simulator.stats(0).connections == 2)
        }
    }

    /// `stop()` leaves the board's sensors off: the command log ends with the reference's
    /// stop sequence (power off, interrupt off, unsubscribe, button unsubscribe) and nothing
    /// is emitted afterwards.
    @Test(.timeLimit(.minutes(1)), arguments: [SimulatorConfiguration.Model.metamotionR, .metamotionS])
    func stopLeavesSensorsOff(model: SimulatorConfiguration.Model) async throws {
        try await EndToEndRig.with(boards: 1, model: model) { rig in
            let address = try await rig.address(0)
            let session = BoardSession(address: address, client: rig.client, options: try testOptions())
            let recorder = EventRecorder()
            let forwarder = recordEvents(session.events, into: recorder)
            async let _ = session.run()
            try await waitUntil("streaming") { recorder.samples(address).count >= 20 }
            await session.stop()
            await forwarder.value
            #expect(recorder.states(address).last == .stopped)
            // BMI160 single gyro data register 05, BMI270 04 (reference §4.3).
            let dataRegister: UInt8 = model == .metamotionR ? 0x05 : 0x04
            // Then FE 06: the board ends the link itself (a slow Disconnect cannot keep it up).
            let expectedTail: [[UInt8]] = [[0x13, 0x01, 0x00], [0x13, 0x02, 0x00, 0x01], [0x13, dataRegister, 0x00], [0x01, 0x01, 0x00],
                                           [0xFE, 0x06]]
            let log = try await rig.simulator.commandLog(0)
            #expect(Array(log.suffix(5)) == expectedTail, "command log ends with \(log.suffix(6).map { $0.map { String(format: "%02X", $0) }.joined(separator: " ") })")
            #expect(try await rig.sensorsIdle(0))
            let before = try await rig.simulator.stats(0)
            try await Task.sleep(for: .milliseconds(500))
            let after = try await rig.simulator.stats(0)
            #expect(after.samplesEmitted[.gyro] == before.samplesEmitted[.gyro])
            #expect(after.notificationsEmitted == before.notificationsEmitted)
            #expect(before.disconnections == 1, "the session disconnected")
        }
    }

    /// The board's button surfaces as a session toggle on the press edge only.
    @Test(.timeLimit(.minutes(1)))
    func buttonPressTogglesSession() async throws {
        try await withBoard { board in
            try await board.waitForSamples()
            try await board.rig.simulator.pressButton(0)
            try await waitUntil("press and release reported") {
                board.recorder.entries(board.address).filter { if case .button = $0 { true } else { false } }.count >= 2
            }
            let buttons = board.recorder.entries(board.address).compactMap { entry -> String? in
                if case .button(let event, let toggles) = entry { "\(event) \(toggles)" } else { nil }
            }
            #expect(buttons == ["\(ButtonEvent.pressed) true", "\(ButtonEvent.released) false"])
        }
    }
}
