import Foundation
import Testing
@testable import mwctl

/// The survey prompt's line editing without a terminal: bytes as terminals send them decode
/// to keys, and keys edit the line as readline does.
struct LineEditingTests {
    static func keys(_ bytes: [UInt8]) -> [TerminalKey] {
        var decoder = TerminalKeyDecoder()
        return bytes.compactMap { decoder.feed($0) }
    }

    static func keys(_ text: String) -> [TerminalKey] { keys(Array(text.utf8)) }

    @Test(arguments: [
        ("\u{1B}[A", TerminalKey.up), ("\u{1B}[B", .down), ("\u{1B}[C", .right), ("\u{1B}[D", .left),
        ("\u{1B}OA", .up), ("\u{1B}OD", .left),
        ("\u{1B}[H", .home), ("\u{1B}[F", .end), ("\u{1B}OH", .home), ("\u{1B}OF", .end),
        ("\u{1B}[1~", .home), ("\u{1B}[4~", .end), ("\u{1B}[7~", .home), ("\u{1B}[8~", .end), ("\u{1B}[3~", .deleteForward),
        ("\u{1B}[1;5C", .wordRight), ("\u{1B}[1;5D", .wordLeft), ("\u{1B}b", .wordLeft), ("\u{1B}f", .wordRight),
        ("\u{01}", .home), ("\u{05}", .end), ("\u{15}", .deleteToStart), ("\u{17}", .deleteWordBackward), ("\u{0B}", .deleteToEnd),
        ("\u{7F}", .deleteBackward), ("\u{08}", .deleteBackward), ("\t", .complete), ("\r", .enter), ("\n", .enter),
        ("\u{03}", .interrupt), ("\u{04}", .endOfInput), ("\u{10}", .up), ("\u{0E}", .down),
        ("\u{1B}[15~", .ignored), ("\u{1B}[Z", .ignored), ("\u{1B}x", .ignored),
    ])
    func terminalSequencesDecodeToOneKey(sequence: String, key: TerminalKey) {
        #expect(Self.keys(sequence) == [key], "\(Array(sequence.utf8))")
    }

    @Test func sequencesSplitAcrossReadsAndMixedWithTextDecode() {
        #expect(Self.keys("po\u{1B}[Dt") == [.character("p"), .character("o"), .left, .character("t")])
        // A runaway parameter run is dropped, and what follows still decodes.
        #expect(Self.keys("\u{1B}[" + String(repeating: "1", count: 40) + "Ax") .suffix(1) == [.character("x")])
        var decoder = TerminalKeyDecoder()
        #expect(decoder.feed(0x1B) == nil && decoder.isInsideSequence)
        #expect(decoder.flush() == .ignored && !decoder.isInsideSequence)
        #expect(decoder.feed(UInt8(ascii: "a")) == .character("a"))
    }

    static func edit(_ typed: String, names: [String] = [], history: [String] = []) -> (LineEditState, LineEditState.Outcome) {
        var state = LineEditState(names: names, history: history)
        var outcome = LineEditState.Outcome.editing
        for key in keys(typed) { outcome = state.apply(key) }
        return (state, outcome)
    }

    @Test(arguments: [
        // Typed, then the cursor moved and more typed or deleted in the middle.
        ("pothle 3\u{1B}[D\u{1B}[D\u{1B}[D\u{1B}[Do", "pothole 3"),
        ("othole 3\u{01}p", "pothole 3"),
        ("pothole 3\u{01}\u{05}4", "pothole 34"),
        ("potxhole 3\u{1B}[H\u{1B}[C\u{1B}[C\u{1B}[C\u{1B}[C\u{7F}", "pothole 3"),
        ("potxhole 3\u{1B}[H\u{1B}[C\u{1B}[C\u{1B}[C\u{1B}[3~", "pothole 3"),
        ("crack 9\u{15}pothole 2", "pothole 2"),
        ("pothole 9\u{17}2", "pothole 2"),
        ("pothole 2 extra\u{1B}b\u{1B}b\u{0B}", "pothole "),
        ("curb 1\u{1B}[1;5D\u{1B}[1;5D\u{04}", "urb 1"),
    ])
    func editingKeysChangeTheLineWhereTheCursorIs(typed: String, line: String) {
        let (state, outcome) = Self.edit(typed)
        #expect(outcome == .editing)
        #expect(state.line == line)
    }

    @Test func enterSubmitsCtrlCInterruptsCtrlDOnAnEmptyLineEndsInput() {
        #expect(Self.edit("pot 3\r").1 == .submitted("pot 3"))
        #expect(Self.edit("pot 3\u{03}").1 == .interrupted)
        #expect(Self.edit("\u{04}").1 == .endOfInput)
        #expect(Self.edit("x\u{7F}\u{04}").1 == .endOfInput)
        #expect(Self.edit("pot 3\u{04}").1 == .editing, "Ctrl-D on a non-empty line deletes under the cursor")
    }

    @Test func upAndDownWalkThisPromptsHistoryAndKeepTheDraft() {
        var state = LineEditState(names: [], history: ["crack 1"])
        for key in Self.keys("pothole 3\r") { _ = state.apply(key) }
        state.startLine()
        for key in Self.keys("cu\u{1B}[A") { _ = state.apply(key) }
        #expect(state.line == "pothole 3" && state.cursor == 9)
        _ = state.apply(.up)
        #expect(state.line == "crack 1")
        _ = state.apply(.up)
        #expect(state.line == "crack 1", "the oldest entry stays")
        _ = state.apply(.down)
        _ = state.apply(.down)
        #expect(state.line == "cu", "back to the line being typed")
        // A recalled line edits like a typed one and is submitted as edited.
        for key in Self.keys("\u{1B}[A\u{7F}4\r") { _ = state.apply(key) }
        #expect(state.history == ["crack 1", "pothole 3", "pothole 4"])
    }

    @Test func tabCompletesAUniquePrefixAndListsAnAmbiguousOne() {
        let names = ["pothole", "crack", "curb", "crowd"]
        let (unique, _) = Self.edit("pot\t", names: names)
        #expect(unique.line == "pothole " && unique.cursor == 8)
        let (ambiguous, outcome) = Self.edit("cr\t", names: names)
        #expect(outcome == .candidates(["crack", "crowd"]) && ambiguous.line == "cr")
        let (extended, listed) = Self.edit("cu\u{1B}[D\t", names: ["curbstone", "curbside"])
        #expect(extended.line == "cu", "the cursor inside the word: nothing to complete")
        #expect(listed == .editing)
        let (prefix, _) = Self.edit("c\t", names: ["curbstone", "curbside"])
        #expect(prefix.line == "curbs" && prefix.cursor == 5)
        // Completing the first word with the intensity already typed after it.
        let (before, _) = Self.edit("pot 3\u{01}\u{1B}[C\u{1B}[C\u{1B}[C\t", names: names)
        #expect(before.line == "pothole 3")
    }

    @Test func thePromptsHistoryOutlivesTheRunAndStaysBounded() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("survey-history-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = SurveyHistoryFile(environment: ["XDG_STATE_HOME": directory.path, "HOME": "/nonexistent"])
        #expect(file.url?.path == directory.path + "/mwgate/survey-history")
        #expect(file.load().isEmpty)
        var state = LineEditState(names: [], history: file.load())
        for key in Self.keys("pothole 3\r") { _ = state.apply(key) }
        state.startLine()
        state.keepsHistory = false
        for key in Self.keys("y\r") { _ = state.apply(key) }
        file.save(state.history)
        #expect(file.load() == ["pothole 3"], "an answer to a question is not kept")
        file.save((1...250).map { "crack \($0)" })
        let kept = file.load()
        #expect(kept.count == LineEditState.historyLimit && kept.last == "crack 250")
        #expect(SurveyHistoryFile(environment: ["HOME": "/home/walker"]).url?.path == "/home/walker/.local/state/mwgate/survey-history")
    }
}
