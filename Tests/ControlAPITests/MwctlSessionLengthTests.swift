import ControlAPI
import StatusModel
import Foundation
import TestSupport
import Testing

/// `mwctl session start --duration`: the session ends by itself after the length asked for.
@Suite(.serialized, .enabled(if: TestBus.isAvailable, "needs /usr/bin/dbus-daemon"))
struct MwctlSessionLengthTests {
    @Test func aSessionStartedWithALengthEndsByItself() async throws {
        try await ControlHarness.with(withUpstream: false) { h in
            _ = try await h.eventually("a board streaming") { s in s.boards.contains(where: \.isStreaming) }
            let bad = try await h.mwctl(["session", "start", "--duration", "soon"])
            #expect(bad.status != 0 && bad.stderr.contains("--duration 'soon' is not a length of time"), "\(bad.stderr)")
            let started = try MwctlEndToEndTests.json([String: String].self, try await h.mwctl(["session", "start", "--duration", "2 s", "--json"]),
                                                      "session start --duration")
            let sessionID = try #require(started["sessionID"])
            let ended = try await h.eventually("the session to end by itself") { $0.session.awaitingSurvey.contains(sessionID) }
            #expect(!ended.session.isRecording)
        }
    }
}
