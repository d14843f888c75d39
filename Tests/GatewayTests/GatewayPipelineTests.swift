import BlueZ
import Boards
import Buffer
import Foundation
import Gateway
import MetaWear
import Recording
import TestSupport
import Testing

/// End-to-end: two simulated boards over a private D-Bus, an NMEA replay, a real buffer.
@Suite(.serialized, .enabled(if: TestBus.isAvailable, "needs /usr/bin/dbus-daemon"))
struct GatewayPipelineTests {
    /// Samples a board may have in flight at a session edge: emitted before the edge but
    /// delivered after it, or the reverse. The recorder places samples by arrival, so that is
    /// the session's notification grouping plus 200 ms for BLE batching (7.5–30 ms connection
    /// events) and a loaded scheduler, at the harness's 50 Hz.
    static let edgeSlack: Int = {
        let grouping = BoardSessionOptions.defaultNotificationCoalescing
        let seconds = Double(grouping.components.seconds) + Double(grouping.components.attoseconds) / 1e18 + 0.2
        return Int((seconds * 50).rounded(.up))
    }()

    @Test func walkingSessionIsSealedPerBoardWithLocationsAndARecordsDocument() async throws {
        try await GatewayHarness.with(mode: .manual, backfill: true) { h in
            try await h.eventually("both boards connected and a GNSS position") { s in
                s.boards.count == 2 && s.boards.allSatisfy(\.isConnected) && s.gnss.hasPosition
            }
            let pipeline = h.gateway.pipeline
            let emittedBefore = [try await h.gyroEmitted(0), try await h.gyroEmitted(1)]
            let sessionID = try await pipeline.startSession()
            try await Task.sleep(for: .seconds(10))
            let end = try await pipeline.stopSession()
            let emittedAfter = [try await h.gyroEmitted(0), try await h.gyroEmitted(1)]
            let status = await pipeline.status
            #expect(!status.session.isRecording)
            #expect(status.session.awaitingSurvey == [sessionID])
            // The data path's streams report how full they have been (0 while the reader always
            // waited for the next element) and that none of them dropped anything.
            let streams = status.streams ?? []
            #expect(Set(streams.map(\.name)) == ["link_notifications", "board_session_events", "board_events", "gnss_fixes"])
            #expect(streams.allSatisfy { $0.dropped == 0 && (0...$0.capacity).contains($0.highWater) }, "\(streams)")

            let record = try await pipeline.submitSurvey(.hazards(["pothole": 3, "crack": 1]))
            let dataset = try h.gateway.store.dataset(sessionID: sessionID)
            #expect(dataset.state == "submitted")
            #expect(record.gscopeData == dataset.chunkNames, "gscope_data lists the chunks in seal order")
            #expect(record.pointCount == dataset.points.count)
            #expect(end.pointCount == dataset.points.count)
            #expect(Set(record.boards) == Set(h.addresses.map(\.rawValue)))
            #expect(record.survey == .hazards(["pothole": 3, "crack": 1]))

            for (index, address) in h.addresses.enumerated() {
                let points = dataset.points.filter { $0.board == address.rawValue }.map(\.point)
                let accepted = try #require(status.boards.first { $0.address == address.rawValue }).gyroSamplesInSession
                let emitted = emittedAfter[index] - emittedBefore[index]
                // Every sample the pipeline accepted is in a sealed chunk, nothing more.
                #expect(points.count == accepted, "board \(address): \(points.count) points, \(accepted) samples accepted")
                // ~10 s at 50 Hz, within the in-flight samples at both edges of what the board sent.
                #expect(abs(accepted - emitted) <= 2 * Self.edgeSlack, "board \(address): accepted \(accepted), emitted \(emitted)")
                #expect(emitted >= 400)
                // The session started after the first fix: every point is located on the track.
                let located = points.filter { $0.location != nil }
                #expect(located.count == points.count, "board \(address): \(points.count - located.count) points without location")
                for p in located.prefix(1) + located.suffix(1) {
                    let l = try #require(p.location)
                    #expect(abs(l.latitude - 47.6619) < 0.001 && abs(l.longitude + 122.3264) < 0.001)
                }
                // Points of one board are in time order and carry the accelerometer.
                #expect(zip(points, points.dropFirst()).allSatisfy { $0.gyroscope.timestamp < $1.gyroscope.timestamp })
                #expect(points.filter { $0.accelerometer != nil }.count >= points.count * 9 / 10)
            }
            let chunks = try h.gateway.store.sessions().first { $0.id == sessionID }
            #expect(chunks?.state == "submitted")
            // With backfill on, each board logged its gyro and accelerometer to flash
            // (two loggers each, two entries per sample) and the status says so.
            for (index, address) in h.addresses.enumerated() {
                let flash = try await h.simulator.flashLog(index)
                #expect(flash.isLogging)
                #expect(flash.triggers.compactMap { $0 }.count == 4)
                #expect(flash.storedCount >= 2 * (emittedAfter[index] - emittedBefore[index]))
                let shown = status.boards.first { $0.address == address.rawValue }?.flashLog
                #expect(shown?.hasPrefix("logging (flash") == true, "\(String(describing: shown))")
            }
        }
    }

    @Test func alwaysModeRecordsWhenBoardsStreamAndTheButtonEndsTheSession() async throws {
        try await GatewayHarness.with(mode: .always, gnss: false) { h in
            let first = try await h.eventually("an always-mode session") { $0.session.isRecording }
            #expect(first.session.trigger == "always")
            let firstID = try #require(first.session.sessionID)
            try await h.waitForButton(0)
            // Let both boards contribute before the button ends the walk.
            try await h.eventually("samples in the session") { s in s.boards.count == 2 && s.boards.allSatisfy { $0.gyroSamplesInSession > 50 } }
            try await h.simulator.pressButton(0)
            let after = try await h.eventually("the button to end the session") { $0.session.awaitingSurvey.contains(firstID) }
            #expect(after.session.awaitingSurvey == [firstID])
            // Boards still stream, so always mode starts the next session.
            let next = try await h.eventually("the next always-mode session") { s in
                s.session.isRecording && s.session.sessionID != firstID
            }
            #expect(next.session.trigger == "always")
            let dataset = try h.gateway.store.dataset(sessionID: firstID)
            #expect(dataset.state == "awaiting_survey")
            #expect(Set(dataset.points.map(\.board)) == Set(h.addresses.map(\.rawValue)))
            #expect(dataset.points.allSatisfy { $0.point.location == nil && $0.point.missingLocation != nil })
        }
    }

    @Test func manualModeButtonStartsAndStopsASession() async throws {
        try await GatewayHarness.with(mode: .manual, gnss: false) { h in
            try await h.eventually("both boards connected") { s in s.boards.count == 2 && s.boards.allSatisfy(\.isConnected) }
            #expect(await h.gateway.pipeline.status.session.isRecording == false)
            try await h.waitForButton(1)
            try await h.simulator.pressButton(1)
            let recording = try await h.eventually("the button to start a session") { $0.session.isRecording }
            #expect(recording.session.trigger == "button:\(h.addresses[1].rawValue)")
            try await h.eventually("samples") { s in s.boards.allSatisfy { $0.gyroSamplesInSession > 25 } }
            try await h.simulator.pressButton(1)
            let stopped = try await h.eventually("the button to stop it") { !$0.session.isRecording }
            #expect(stopped.session.awaitingSurvey == [try #require(recording.session.sessionID)])
        }
    }

    /// Issue 18 defect 5: a board that goes silent without disconnecting (stream restart, then
    /// reconnects, still silent) is lost once and back once, and never reported streaming
    /// while no samples arrive (the journal's board lost / connected events follow these edges).
    @Test func aSilentBoardIsLostOnceAndBackOnceAndNeverStreamingWithoutSamples() async throws {
        // Streaming outside a session: the stream watchdog runs only while the sensors stream.
        try await GatewayHarness.with(mode: .manual, gnss: false, streamBetweenSessions: true) { h in
            try await h.eventually("both boards streaming") { s in s.boards.count == 2 && s.boards.allSatisfy(\.isStreaming) }
            let board = h.addresses[0].rawValue
            let updates = await h.gateway.pipeline.statusUpdates()
            let edges = Task {
                var edges: [(streaming: Bool, samples: Int)] = []
                var last: Bool?
                for await status in updates {
                    guard let b = status.boards.first(where: { $0.address == board }) else { continue }
                    if b.isStreaming != last { edges.append((b.isStreaming, b.gyroSamplesReceived)) }
                    last = b.isStreaming
                    if edges.count >= 3 || (edges.count == 2 && b.isStreaming) { break }
                }
                return edges
            }
            let before = try #require(await h.gateway.pipeline.status.boards.first { $0.address == board }).gyroSamplesReceived
            try await h.simulator.stall(0, seconds: 5)
            try await h.eventually("board 0 streaming again with new samples", timeout: .seconds(45)) { s in
                guard let b = s.boards.first(where: { $0.address == board }) else { return false }
                return b.isStreaming && b.gyroSamplesReceived >= before + 300
            }
            try await Task.sleep(for: .seconds(1))
            edges.cancel()
            let seen = await edges.value
            // true (current) -> false (silence) -> true (samples again), nothing in between.
            #expect(seen.map(\.streaming) == [true, false, true], "edges \(seen)")
            if seen.count == 3 { #expect(seen[2].samples > seen[1].samples, "streaming again only with new samples: \(seen)") }
        }
    }

    @Test func aBoardThatReconnectsMidSessionContinuesItsChunks() async throws {
        try await GatewayHarness.with(mode: .manual, gnss: false) { h in
            try await h.eventually("both boards connected") { s in s.boards.count == 2 && s.boards.allSatisfy(\.isConnected) }
            let pipeline = h.gateway.pipeline
            let sessionID = try await pipeline.startSession()
            let board = h.addresses[0].rawValue
            try await h.eventually("samples before the drop") { s in s.boards.allSatisfy { $0.gyroSamplesInSession >= 100 } }
            try await h.simulator.dropLink(0)
            // A reconnect on the kept GATT objects can be quicker than a status poll: the drop
            // is seen in the simulator's second connection, not in a window without streaming.
            let before = try #require(await pipeline.status.boards.first { $0.address == board }).gyroSamplesInSession
            try await h.eventually("board 0 streaming again with new samples", timeout: .seconds(45)) { s in
                guard let b = s.boards.first(where: { $0.address == board }) else { return false }
                return b.isStreaming && b.gyroSamplesInSession >= before + 100
            }
            #expect(try await h.simulator.stats(0).connections == 2, "board 0 reconnected once")
            try await pipeline.stopSession()
            let status = await pipeline.status
            #expect(status.problems.filter { $0.area == "buffer" }.isEmpty, "\(status.problems)")
            let dataset = try h.gateway.store.dataset(sessionID: sessionID)
            for address in h.addresses {
                let accepted = try #require(status.boards.first { $0.address == address.rawValue }).gyroSamplesInSession
                let sealed = dataset.points.filter { $0.board == address.rawValue }.count
                #expect(sealed == accepted, "board \(address): \(sealed) sealed of \(accepted) accepted")
            }
            // The chunk sealed at the drop and the one after the reconnect are both kept.
            #expect(dataset.chunkNames.count >= 3)
            // In time order, each board's samples are in the order the board took them, across
            // the reconnect too (its link reopened on the kept GATT objects): none goes back.
            for address in h.addresses {
                let indices = dataset.points.filter { $0.board == address.rawValue }.map { BackfillEndToEndTests.index($0.point) }
                let backwards = zip(indices, indices.dropFirst()).filter { ($1 - $0) & 0xFFFF == 0 || ($1 - $0) & 0xFFFF >= 0x8000 }
                #expect(backwards.isEmpty, "board \(address): \(backwards.count) samples not after the one before, first \(backwards.prefix(3))")
            }
        }
    }

    @Test func betweenSessionsBoardsStayConnectedWithSensorsOffAndASessionStreams() async throws {
        try await GatewayHarness.with(mode: .manual, gnss: false) { h in
            let idle = try await h.eventually("both boards connected and idle") { s in
                s.boards.count == 2 && s.boards.allSatisfy { $0.isIdle && !$0.isStreaming }
            }
            #expect(idle.boards.allSatisfy { $0.state.hasPrefix("idle") }, "\(idle.boards.map(\.state))")
            try await h.waitForButton(0)
            try await h.waitForButton(1)
            for index in 0..<2 {
                #expect(try await h.sensorsOff(index))
                // Relaxed connection parameters (the simulator caps intervals at 30 ms). The request
                // is written after the idle state is reported, so it may land a moment later.
                let deadline = ContinuousClock.now + .seconds(10)
                while try await h.simulator.stats(index).connectionIntervalMilliseconds != 30, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(try await h.simulator.stats(index).connectionIntervalMilliseconds == 30)
            }
            // No notification at all while idle (no button pressed).
            let before = [try await h.simulator.stats(0).notificationsDelivered, try await h.simulator.stats(1).notificationsDelivered]
            try await Task.sleep(for: .seconds(3))
            let after = [try await h.simulator.stats(0).notificationsDelivered, try await h.simulator.stats(1).notificationsDelivered]
            #expect(after == before, "notifications while idle: \(before) -> \(after)")

            // A session starts the sensors with the fast connection parameters ...
            let pipeline = h.gateway.pipeline
            let sessionID = try await pipeline.startSession()
            try await h.eventually("both boards streaming into the session") { s in
                s.boards.allSatisfy { $0.isStreaming && $0.gyroSamplesInSession >= 50 }
            }
            #expect(try await h.simulator.stats(0).connectionIntervalMilliseconds == 7.5)
            // ... and its end stops them again, with every accepted sample sealed.
            try await pipeline.stopSession()
            let stopped = try await h.eventually("both boards idle after the session") { s in s.boards.allSatisfy(\.isIdle) }
            let dataset = try h.gateway.store.dataset(sessionID: sessionID)
            for address in h.addresses {
                let accepted = try #require(stopped.boards.first { $0.address == address.rawValue }).gyroSamplesInSession
                #expect(dataset.points.filter { $0.board == address.rawValue }.count == accepted)
            }
            // The stop commands follow the idle state on the link.
            for index in 0..<2 { #expect(try await h.sensorsTurnOff(index)) }

            // The button of an idle board starts a session, and its boards stream.
            try await h.simulator.pressButton(1)
            let recording = try await h.eventually("the button to start a session") { $0.session.isRecording }
            #expect(recording.session.trigger == "button:\(h.addresses[1].rawValue)")
            try await h.eventually("samples from the button's session") { s in s.boards.allSatisfy { $0.gyroSamplesInSession > 25 } }
        }
    }

    @Test func streamBetweenSessionsKeepsTheBoardsStreamingWithoutASession() async throws {
        try await GatewayHarness.with(mode: .manual, gnss: false, streamBetweenSessions: true) { h in
            let status = try await h.eventually("both boards streaming without a session") { s in
                s.boards.count == 2 && s.boards.allSatisfy { $0.isStreaming && $0.gyroSamplesReceived > 50 }
            }
            #expect(!status.session.isRecording)
            #expect(status.boards.allSatisfy { !$0.isIdle && $0.state.hasPrefix("streaming") })
        }
    }

    /// What the gateway does at a SIGTERM before any service's turn (``ShutdownStarter``):
    /// ``BoardService/beginStopping()`` stops every board (sensors off, link closed) while the
    /// group runs on, and the service still ends at its own turn without an error.
    @Test func beginStoppingStopsTheBoardsAheadOfTheServiceTurn() async throws {
        try await GatewayHarness.with(mode: .manual, gnss: false, streamBetweenSessions: true) { h in
            try await h.eventually("both boards streaming") { s in
                s.boards.count == 2 && s.boards.allSatisfy { $0.isStreaming && $0.gyroSamplesReceived > 20 }
            }
            h.gateway.boards.beginStopping()
            #expect(try await h.sensorsTurnOff(0))
            #expect(try await h.sensorsTurnOff(1))
            try await waitUntil("both links closed", within: .seconds(10)) {
                let first = try await h.simulator.hasLink(0), second = try await h.simulator.hasLink(1)
                return !first && !second
            }
            // Nothing else stopped: the group runs on until its shutdown, which ends cleanly.
            #expect(await !h.gateway.pipeline.health.isShutDown)
            try await h.shutDown()
            #expect(await h.gateway.pipeline.health.isShutDown)
        }
    }

    @Test func gracefulShutdownSealsTheOpenSessionAndTurnsTheSensorsOff() async throws {
        try await GatewayHarness.with(mode: .manual) { h in
            try await h.eventually("both boards connected") { s in s.boards.count == 2 && s.boards.allSatisfy(\.isConnected) }
            let sessionID = try await h.gateway.pipeline.startSession()
            try await h.eventually("a few seconds of samples") { s in s.boards.allSatisfy { $0.gyroSamplesInSession >= 150 } }
            try await h.shutDown()

            let status = await h.gateway.pipeline.status
            #expect(!status.session.isRecording)
            #expect(status.session.awaitingSurvey == [sessionID])
            let dataset = try h.gateway.store.dataset(sessionID: sessionID)
            #expect(dataset.state == "awaiting_survey")
            for (index, address) in h.addresses.enumerated() {
                let accepted = try #require(status.boards.first { $0.address == address.rawValue }).gyroSamplesInSession
                let sealed = dataset.points.filter { $0.board == address.rawValue }.count
                #expect(sealed == accepted, "board \(address): \(sealed) sealed of \(accepted) accepted")
                #expect(accepted >= 150)
                // The seal waits for the boards' stop: what a board delivered until its sensors
                // went off is in the documents too (sealing first dropped the stop's last samples).
                let delivered = try await h.simulator.deliveredRuns(index, sensor: .gyro).reduce(0) { $0 + Int($1.last - $1.first + 1) }
                #expect(sealed == delivered, "board \(address): \(sealed) sealed of \(delivered) the board delivered")
            }
            #expect(!dataset.chunkNames.isEmpty)
            #expect(try await h.sensorsOff(0))
            #expect(try await h.sensorsOff(1))
            // Commands after shutdown are refused with a reason, never a crash.
            await #expect(throws: RecordingPipeline.CommandError.self) { try await h.gateway.pipeline.startSession() }
        }
    }

    /// The VM's debug run: the boards' stop took 2.1 s while samples were queued, and the seal,
    /// which waited at most 1 s, left 83 accepted samples out of the documents.
    @Test func aSealWaitsForBoardsWhoseStopTakesLongerThanASecond() async throws {
        try await GatewayHarness.with(mode: .manual) { h in
            try await h.eventually("both boards connected") { s in s.boards.count == 2 && s.boards.allSatisfy(\.isConnected) }
            let sessionID = try await h.gateway.pipeline.startSession()
            try await h.eventually("samples from both boards") { s in s.boards.allSatisfy { $0.gyroSamplesInSession >= 50 } }
            // The seal begins; the boards' stop only 1.5 s later, so they stream for longer
            // than a second into a session that is about to be sealed.
            h.gateway.recording.beginSealing()
            try await Task.sleep(for: .milliseconds(1500))
            try await h.shutDown()

            let dataset = try h.gateway.store.dataset(sessionID: sessionID)
            #expect(dataset.state == "awaiting_survey")
            for (index, address) in h.addresses.enumerated() {
                let sealed = dataset.points.filter { $0.board == address.rawValue }.count
                let delivered = try await h.simulator.deliveredRuns(index, sensor: .gyro).reduce(0) { $0 + Int($1.last - $1.first + 1) }
                #expect(sealed == delivered, "board \(address): \(sealed) sealed of \(delivered) the board delivered")
            }
            #expect(try await h.sensorsOff(0))
            #expect(try await h.sensorsOff(1))
        }
    }
}
