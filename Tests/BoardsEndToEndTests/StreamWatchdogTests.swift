import BlueZ
import Boards
import MetaWear
import Testing

/// The stream watchdog (issues 18 §2.5/§2.6, 21) over an in-memory transport with the board
/// model: after a silence it reads a register and acts on what comes back. A stream that is
/// only late (the real-BlueZ VM's startnotify group: bluetoothd slow to hand on, every run
/// restarted and marked false gaps) is left alone; a board that answers but does not stream
/// gets its start sequence again; a link on which nothing comes is given up.
@Suite("Stream watchdog over an in-memory transport")
struct StreamWatchdogTests {
    private let address = BluetoothAddress("D1:5E:AA:0F:0F:02")!
    private let gyroStart: [UInt8] = [0x13, 0x01, 0x01]
    /// The probe: the gyro's module info, read once in the handshake too.
    private let probe: [UInt8] = [0x13, 0x80]

    /// The default watchdog (1 s at 100 Hz); the reply timeout as long as the tests' (the
    /// board model answers at once).
    private func run(probeTimeout: Duration = .seconds(8),
                     _ body: (InMemoryBoardTransport, EventRecorder) async throws -> Void) async throws {
        var options = try testOptions(pauseAfterConnectionParameters: 0)
        options.handshake.replyTimeoutMilliseconds = 600_000
        options.watchdogProbeTimeout = probeTimeout
        let transport = InMemoryBoardTransport()
        let session = BoardSession(address: address, options: options, transport: transport)
        try await runRecorded(session) { _, recorder in
            try await waitUntil("streaming") { recorder.isStreaming(address) && transport.board.gyroStreaming }
            // The board streams in real time on the newest link while the test runs.
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    var last = ContinuousClock.now
                    while !Task.isCancelled {
                        try await Task.sleep(for: .milliseconds(10))
                        let now = ContinuousClock.now
                        let elapsed = (now - last).components
                        let milliseconds = UInt64(elapsed.seconds) * 1000 + UInt64(elapsed.attoseconds / 1_000_000_000_000_000)
                        guard milliseconds > 0 else { continue }
                        last = last.advanced(by: .milliseconds(milliseconds))
                        await transport.links.last?.stream(milliseconds: milliseconds)
                    }
                }
                try await body(transport, recorder)
                group.cancelAll()
            }
        }
    }

    private func restarts(_ states: [BoardState]) -> [BoardState] {
        states.filter { if case .recoveringStream = $0 { true } else { false } }
    }

    private func losses(_ states: [BoardState]) -> [BoardState] {
        states.filter { if case .lost = $0 { true } else { false } }
    }

    /// (a) Nothing handed on for 3 s, then everything at once, nothing lost: the probe's reply
    /// comes behind the late samples, so nothing is done to the board.
    @Test func aStreamLateByThreeSecondsIsLeftAlone() async throws {
        try await run { transport, recorder in
            let link = try await openedLink(transport, 0)
            try await waitUntil("samples") { recorder.samples(address).count >= 50 }
            link.holdDeliveries()
            try await waitUntil("the watchdog's probe", within: .seconds(10)) { link.writes.filter { $0 == probe }.count >= 2 }
            try await Task.sleep(until: .now + .seconds(2))
            link.releaseHeld()
            let afterRelease = recorder.samples(address).count
            try await waitUntil("samples after the late lump") { recorder.samples(address).count > afterRelease + 100 }
            let states = recorder.states(address)
            #expect(restarts(states).isEmpty, "a late stream was restarted: \(states)")
            #expect(losses(states).isEmpty, "a late stream was taken for a lost board: \(states)")
            let failures = await transport.failures
            #expect(failures.isEmpty, "\(failures)")
            #expect(await transport.links.count == 1)
            #expect(link.writes.filter { $0 == gyroStart }.count == 1, "the gyro was stopped and started: \(link.writes)")
            let indices = recorder.samples(address).map(sampleIndex)
            #expect(indices == Array(indices.first!..<(indices.first! + UInt64(indices.count))), "a sample lost or twice")
        }
    }

    /// (b) The board answers but its stream stopped (node-metawear #35): one restart on the
    /// same link, and the stream is back.
    @Test func aBoardThatAnswersButStoppedStreamingIsRestartedOnce() async throws {
        try await run { transport, recorder in
            let link = try await openedLink(transport, 0)
            try await waitUntil("samples") { recorder.samples(address).count >= 50 }
            _ = transport.board.withModel { $0.write([0x13, 0x01, 0x00]) }
            try await waitUntil("a restart", within: .seconds(10)) { !restarts(recorder.states(address)).isEmpty }
            let afterRestart = recorder.samples(address).count
            try await waitUntil("the stream back") { recorder.samples(address).count > afterRestart + 100 }
            let states = recorder.states(address)
            #expect(restarts(states) == [.recoveringStream(restart: 1)], "\(states)")
            #expect(losses(states).isEmpty, "\(states)")
            let failures = await transport.failures
            #expect(failures.isEmpty, "\(failures)")
            #expect(await transport.links.count == 1)
            #expect(link.writes.filter { $0 == gyroStart }.count == 2, "one restart: \(link.writes)")
        }
    }

    /// (c) Nothing comes any more, not even the probe's reply: the link is given up once, with
    /// no restart on it (a restart's stop would only cut the board's logging short).
    @Test func aDeadLinkIsGivenUpOnceWithoutARestart() async throws {
        try await run(probeTimeout: .seconds(1)) { transport, recorder in
            let first = try await openedLink(transport, 0)
            try await waitUntil("samples") { recorder.samples(address).count >= 50 }
            first.holdDeliveries()
            try await waitUntil("the link given up", within: .seconds(15)) { await transport.links.count >= 2 }
            let second = try await openedLink(transport, 1)
            try await waitUntil("the new link's handshake over") { second.groupingInterval != nil }
            let failures = await transport.failures
            #expect(failures.count == 1 && failures.first?.hasPrefix("no data and no reply") == true, "\(failures)")
            let states = recorder.states(address)
            let firstLink = states.prefix { if case .lost = $0 { false } else { true } }
            #expect(restarts(Array(firstLink)).isEmpty, "the dead link's stream was restarted: \(states)")
            #expect(first.writes.filter { $0 == gyroStart }.count == 1, "\(first.writes)")
            #expect(losses(states) == [.lost(reason: "session failed: \(failures.first ?? "")")], "\(states)")
        }
    }
}
