import ControlAPI
import StatusModel
import Foundation
import TestSupport
import Testing

/// `mwctl survey` as a walker uses it: on a real terminal (tmux) with real keys, and with
/// lines from a pipe. Nothing is filed as "no hazard" unless the walker says so.
@Suite(.serialized, .enabled(if: TestBus.isAvailable && TmuxTerminal.isAvailable, "needs dbus-daemon and tmux (make deps)"))
struct SurveyTerminalTests {
    /// Records a short session and stops it; its ID, now awaiting a survey.
    static func sessionAwaitingSurvey(_ h: ControlHarness) async throws -> String {
        _ = try await h.eventually("a board streaming") { s in s.boards.contains(where: \.isStreaming) }
        let started = try MwctlEndToEndTests.json([String: String].self, try await h.mwctl(["session", "start", "--json"]), "start")
        try await h.eventually("samples in the session") { s in s.boards.contains { $0.gyroSamplesInSession > 0 } }
        _ = try MwctlEndToEndTests.json(SessionEndPayload.self, try await h.mwctl(["session", "stop", "--json"]), "stop")
        return try #require(started["sessionID"])
    }

    /// `mwctl survey --json --session ID` on a terminal, typed at by `keys`; its exit status
    /// and stdout once it has exited, and what the terminal showed.
    static func surveyOnTerminal(_ h: ControlHarness, session: String,
                                 _ keys: (TmuxTerminal) async throws -> Void) async throws -> (status: Int32, result: String, screen: String) {
        // The prompt's history file goes to the terminal's scratch directory, not the user's.
        let terminal = try await TmuxTerminal(environment: h.bus.environment) { directory in
            "XDG_STATE_HOME=\(directory) \(try CLI.path()) survey --json --session \(session) >\(directory)/result; echo $? >\(directory)/status"
        }
        do {
            try await terminal.waitFor("hazard> ")
            try await keys(terminal)
            let statusFile = terminal.directory.appendingPathComponent("status")
            let deadline = ContinuousClock.now + .seconds(60)
            while (try? String(contentsOf: statusFile, encoding: .utf8))?.hasSuffix("\n") != true {
                guard ContinuousClock.now < deadline else { throw TestBusError(message: "mwctl survey never exited:\n\(try await terminal.screen())") }
                try await Task.sleep(for: .milliseconds(100))
            }
            let status = Int32(try String(contentsOf: statusFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
            let result = (try? String(contentsOf: terminal.directory.appendingPathComponent("result"), encoding: .utf8)) ?? ""
            let screen = try await terminal.screen()
            await terminal.stop()
            return (status, result, screen)
        } catch {
            await terminal.stop()
            throw error
        }
    }

    static func awaiting(_ h: ControlHarness) async throws -> [String] {
        try MwctlEndToEndTests.json(GatewayStatus.self, try await h.mwctl(["status", "--json"]), "status").session.awaitingSurvey
    }

    @Test func theSurveyPromptEditsLikeAShell() async throws {
        try await ControlHarness.with(withUpstream: false) { h in
            let session = try await Self.sessionAwaitingSurvey(h)
            let (status, result, screen) = try await Self.surveyOnTerminal(h, session: session) { terminal in
                // The keys: po<Tab> 3, Left, Left, Up, then Enter.
                try await terminal.type("po")
                try await terminal.press("Tab")
                try await terminal.type(" 3")
                try await terminal.press("Left", "Left", "Up", "Enter")
                try await terminal.waitFor("pothole = 3")
                // A typo fixed in the middle of the line.
                try await terminal.type("crk 2")
                try await terminal.press("Left", "Left", "Left")
                try await terminal.type("ac")
                try await terminal.press("Enter")
                try await terminal.waitFor("crack = 2")
                // History: the first line again, its intensity changed at the end.
                try await terminal.press("Up", "Up", "End", "BSpace")
                try await terminal.type("4")
                try await terminal.press("Enter")
                try await terminal.waitFor("pothole = 4")
                // Ctrl-W deletes the last word; Home and Ctrl-E move to the ends.
                try await terminal.type("curb 9")
                try await terminal.press("C-w")
                try await terminal.type("1")
                try await terminal.press("Enter")
                try await terminal.waitFor("curb = 1")
                try await terminal.type("rowd")
                try await terminal.press("Home")
                try await terminal.type("c")
                try await terminal.press("C-e")
                try await terminal.type(" 2")
                try await terminal.press("Enter")
                try await terminal.waitFor("crowd = 2")
                try await terminal.type("lava 7")
                // Ctrl-A, Ctrl-K: the line emptied; Enter on an empty line submits.
                try await terminal.press("C-a", "C-k", "Enter")
            }
            #expect(status == 0, "\(screen)")
            let survey = try ControlJSON.decode(SurveyResultPayload.self, from: result)
            #expect(survey.sessionID == session && survey.hazards == ["pothole": 4, "crack": 2, "curb": 1, "crowd": 2] && !survey.noHazard)
            for escape in ["[A", "[B", "[C", "[D", "[H", "[F", "[1~", "[4~", "^W", "^A"] {
                #expect(!screen.contains(escape), "the terminal shows \(escape):\n\(screen)")
            }
            #expect(!screen.contains("expected NAME INTENSITY"), "\(screen)")
        }
    }

    @Test func ctrlCLeavesWithoutSubmittingAndANoHazardNeedsAYes() async throws {
        try await ControlHarness.with(withUpstream: false) { h in
            // Ctrl-C: exit 130, nothing submitted, the session still awaits its survey.
            let first = try await Self.sessionAwaitingSurvey(h)
            let (status, result, screen) = try await Self.surveyOnTerminal(h, session: first) { cancelled in
                try await cancelled.type("pot 3")
                try await cancelled.press("Enter")
                try await cancelled.waitFor("pothole = 3")
                try await cancelled.press("C-c")
            }
            #expect(status == 130 && result.isEmpty)
            #expect(screen.contains("survey cancelled, nothing submitted"), "\(screen)")
            #expect(try await Self.awaiting(h).contains(first))

            // A mistyped line, then the empty line: asked; no goes back to the prompt; Ctrl-D
            // submits what was entered since.
            let (submitted, answer, _) = try await Self.surveyOnTerminal(h, session: first) { mistyped in
                try await mistyped.type("lava 2")
                try await mistyped.press("Enter")
                try await mistyped.waitFor("no hazard starts with 'lava'")
                try await mistyped.press("Enter")
                try await mistyped.waitFor("Submit this walk as 'no hazard'? [y/N]")
                try await mistyped.type("n")
                try await mistyped.press("Enter")
                try await mistyped.waitFor("Not submitted")
                try await mistyped.type("pothole 1")
                try await mistyped.press("Enter")
                try await mistyped.waitFor("pothole = 1")
                try await mistyped.press("C-d")
            }
            #expect(submitted == 0)
            let survey = try ControlJSON.decode(SurveyResultPayload.self, from: answer)
            #expect(survey.sessionID == first && survey.hazards == ["pothole": 1])

            // From a pipe: an unconfirmed "no hazard" is not filed; a yes files it.
            let second = try await Self.sessionAwaitingSurvey(h)
            let unconfirmed = try await h.mwctl(["survey", "--session", second], stdin: "lava 2\n\n")
            #expect(unconfirmed.status == 1 && unconfirmed.stderr.contains("nothing submitted"), "\(unconfirmed.stderr)")
            #expect(try await Self.awaiting(h).contains(second))
            let confirmed = try await h.mwctl(["survey", "--json", "--session", second], stdin: "lava 2\n\ny\n")
            let none = try MwctlEndToEndTests.json(SurveyResultPayload.self, confirmed, "confirmed no hazard")
            #expect(none.noHazard && none.sessionID == second)
            // 'none' stays the explicit way, without a question.
            let third = try await Self.sessionAwaitingSurvey(h)
            let explicit = try await h.mwctl(["survey", "--json", "--session", third], stdin: "none\n")
            #expect(try MwctlEndToEndTests.json(SurveyResultPayload.self, explicit, "none").noHazard)
            #expect(!explicit.stderr.contains("[y/N]"))
        }
    }
}
