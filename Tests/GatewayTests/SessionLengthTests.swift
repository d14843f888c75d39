import Foundation
import Gateway
import GatewayTestSupport
import MetaWear
import TestSupport
import Testing

/// A session's length (`[session] max_duration`, `mwctl session start --duration`) and the
/// refusal of a length a board's flash cannot hold at a logged rate (issue 21 part 3), on the
/// simulated boards (a MetaMotion R, 1,048,576 entries: 8 MB, what a real one's module info
/// reports, and a MetaMotion S, 66,781,184 entries by its module info).
@Suite(.serialized, .enabled(if: TestBus.isAvailable, "needs /usr/bin/dbus-daemon"))
struct SessionLengthTests {
    /// The boards stream before the session starts: with their sensors started by the session
    /// (off between sessions), a loaded host started them after the 3 s were over and the
    /// session held no point (make test's second pass, load 14-20), which says nothing about
    /// its length.
    @Test func aSessionEndsByItselfAtItsLength() async throws {
        try await GatewayHarness.with(mode: .manual, gnss: false, streamBetweenSessions: true, maxSessionDuration: 3) { h in
            try await h.eventually("both boards streaming") { s in
                s.boards.count == 2 && s.boards.allSatisfy { $0.isStreaming && $0.gyroSamplesReceived > 0 }
            }
            let pipeline = h.gateway.pipeline
            let configured = try await pipeline.startSession()
            let ended = try await h.eventually("the session to end at its configured 3 s", timeout: .seconds(20)) {
                $0.session.awaitingSurvey.contains(configured)
            }
            #expect(!ended.session.isRecording)
            let first = try h.gateway.store.dataset(sessionID: configured)
            let length = try #require(first.endedAt) - first.startedAt
            #expect((3000...4500).contains(length), "ended \(length) ms after its start")
            #expect(!first.points.isEmpty)

            // A length asked for at the start wins over the configured one.
            let asked = try await pipeline.startSession(duration: 1)
            try await h.eventually("the session to end at its asked 1 s", timeout: .seconds(20)) { $0.session.awaitingSurvey.contains(asked) }
            let second = try h.gateway.store.dataset(sessionID: asked)
            #expect((1000...2500).contains(try #require(second.endedAt) - second.startedAt))
            await #expect(throws: RecordingPipeline.CommandError.self) { try await pipeline.startSession(duration: 0) }
        }
    }

    @Test func aLengthTheFlashCannotHoldAtALoggedRateIsRefusedNamingBoardCapacityAndWhatToChange() async throws {
        let logged = try StreamingConfiguration(gyro: GyroConfiguration(rate: .hz800, range: .dps2000), logged: [.gyro])
        #expect(logged.notificationsPerSecond == 0, "a logged gyro sends nothing on the link")
        try await GatewayHarness.with(mode: .manual, gnss: false, streaming: logged) { h in
            try await h.eventually("both boards connected") { s in s.boards.count == 2 && s.boards.allSatisfy(\.isConnected) }
            let pipeline = h.gateway.pipeline
            let metaMotionR = h.addresses[0].rawValue
            let metaMotionS = h.addresses[1].rawValue
            let rRefusal = { (session: String, lower: String) in
                "board \(metaMotionR): gyro 800 Hz writes 1600 log entries/s; a MetaMotion R's flash holds 1048576 entries, full after "
                    + "10 min 55 s, shorter than the \(session) session asked for; shorten the session to 10 min 55 s or less, \(lower)"
            }
            let sRefusal = "board \(metaMotionS): gyro 800 Hz writes 1600 log entries/s; a MetaMotion S's flash holds 66781184 entries, "
                + "full after 11 h 35 min, shorter than the 12 h 0 min session asked for; shorten the session to 11 h 35 min or less, "
                + "or lower gyro_rate to 400 Hz"
            do {
                _ = try await pipeline.startSession(duration: 12 * 3600)
                Issue.record("a 12 h session at 800 Hz was not refused")
            } catch let error as RecordingPipeline.CommandError {
                let refusals = [(metaMotionR, rRefusal("12 h 0 min", "or lower the rates")), (metaMotionS, sRefusal)]
                    .sorted { $0.0 < $1.0 }.map(\.1).joined(separator: "; ")
                #expect(error.message == "cannot record a session of 12 h 0 min: \(refusals)")
            }
            // 20 min: the MetaMotion S holds it, the MetaMotion R's 8 MB does not.
            do {
                _ = try await pipeline.startSession(duration: 20 * 60)
                Issue.record("a 20 min session at 800 Hz was not refused on the MetaMotion R")
            } catch let error as RecordingPipeline.CommandError {
                #expect(error.message == "cannot record a session of 20 min 0 s: " + rRefusal("20 min 0 s", "or lower gyro_rate to 400 Hz"))
            }
            #expect(await pipeline.status.session.isRecording == false, "nothing started")
        }
    }
}
