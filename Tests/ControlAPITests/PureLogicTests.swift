import ControlAPI
import DBus
import Testing
@testable import ControlServer
@testable import mwctl

/// The parts without I/O: the interactive survey's prefix resolution, property diffs,
/// payload JSON.
struct PureLogicTests {
    static let catalogue = ["pothole", "crack", "curb", "crowd"]

    @Test(arguments: [
        ("pothole 3", "pothole", Int32(3)), ("pot 2", "pothole", 2), ("cra=1", "crack", 1), ("CU 4", "curb", 4),
        ("crowd 1", "crowd", 1),
    ])
    func prefixesResolveToOneCatalogueName(line: String, name: String, intensity: Int32) throws {
        let (resolved, value) = try HazardEntry.parse(line, catalogue: Self.catalogue).get()
        #expect(resolved == name && value == intensity)
    }

    @Test(arguments: [
        ("cr 1", "ambiguous: crack, crowd"), ("lava 2", "no hazard starts with 'lava'"), ("pothole", "expected NAME INTENSITY"),
        ("pothole 0", "at least 1"), ("pothole x", "whole number"), ("a b c", "expected NAME INTENSITY"),
    ])
    func badLinesAreExplained(line: String, problem: String) {
        switch HazardEntry.parse(line, catalogue: Self.catalogue) {
        case .success(let value): Issue.record("'\(line)' was accepted as \(value)")
        case .failure(let error): #expect(error.message.contains(problem), "\(error.message)")
        }
    }

    @Test func anyNameIsAcceptedWithoutACatalogue() throws {
        let (name, value) = try HazardEntry.parse("ice 2", catalogue: []).get()
        #expect(name == "ice" && value == 2)
    }

    @Test func onlyChangedPropertiesAreAnnounced() async {
        let live = LiveProperties(initial: ["State": .string("idle"), "Fix": .structure([.double(.nan)])])
        #expect(await live.update(["State": .string("idle"), "Fix": .structure([.double(.nan)])]).isEmpty, "NaN equals NaN")
        let changed = await live.update(["State": .string("recording"), "Fix": .structure([.double(.nan)])])
        #expect(changed == ["State": .string("recording")])
        #expect(await live.value("State") == .string("recording"))
    }

    @Test func payloadsRoundTripThroughJSON() throws {
        let end = SessionEndPayload(sessionID: "s-1", endedAt: 1.5, trigger: "control_api", boards: ["AA:BB:CC:DD:EE:FF"],
                                    points: 10, distanceMetres: 3, timeSource: "gnss_corrected")
        let text = try ControlJSON.encode(end)
        #expect(text.contains("\"sessionID\":\"s-1\""))
        #expect(try ControlJSON.decode(SessionEndPayload.self, from: text) == end)
        #expect(throws: (any Error).self) { try ControlJSON.decode(SessionEndPayload.self, from: "{\"sessionID\":1}") }
    }

    /// `mwctl session list` says which sessions' times are on a gateway clock that was not set
    /// and no GNSS fix corrected (issue 21): their start, day and points may be off by its error.
    @Test func theSessionListSaysWhichTimesAreOnAClockNotSet() throws {
        let listed = [
            SessionListingPayload(sessionID: "a", startedAt: 1_785_909_000, state: "submitted", points: 10, timeSource: "gnss_corrected"),
            SessionListingPayload(sessionID: "b", startedAt: 1_795_931_400, state: "awaiting_survey", points: 5,
                                  timeSource: "unsynchronised_system_clock"),
            SessionListingPayload(sessionID: "c", startedAt: 1_785_909_100, state: "recording", points: 1),
        ]
        let lines = SessionCommand.List.lines(listed)
        print(lines.joined(separator: "\n"))
        #expect(lines.count == 5 && lines[1].hasSuffix("  GNSS") && lines[2].hasSuffix("  CLOCK NOT SET *") && lines[3].hasSuffix("  -"))
        #expect(lines.last == SessionCommand.List.unsetClockNote)
        #expect(SessionCommand.List.lines([listed[0]]).count == 2, "no note without such a session")
        // A daemon before the field: none.
        let old = try ControlJSON.decode([SessionListingPayload].self,
                                         from: "[{\"sessionID\":\"a\",\"startedAt\":1,\"state\":\"submitted\",\"points\":2}]")
        #expect(old.first?.timeSource == nil)
    }
}
