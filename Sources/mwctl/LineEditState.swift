import Basics
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One line being edited at a prompt: the text, the cursor, this prompt's history and Tab
/// completion of the first word against a list of names. Pure: keys in, what the terminal
/// edge should do out (``Outcome``); ``LineEditor`` does the terminal I/O.
struct LineEditState {
    /// What a key leads to.
    enum Outcome: Equatable {
        /// Still editing: redraw the line.
        case editing
        /// Enter: the line is done.
        case submitted(String)
        /// Ctrl-C: the user gave up; nothing is to be submitted.
        case interrupted
        /// Ctrl-D on an empty line: end of input, like an empty line.
        case endOfInput
        /// Tab on a prefix of several names: show them, then redraw the line.
        case candidates([String])
    }

    /// Names the first word completes to (the hazard catalogue).
    let names: [String]
    private(set) var text: [Character] = []
    /// Index into `text` the next character goes before.
    private(set) var cursor = 0
    /// Lines entered earlier at this prompt, oldest first.
    private(set) var history: [String]
    /// Which history entry is shown; `history.count` is the line being typed.
    private var historyIndex: Int
    /// The line being typed, kept while the user looks through the history.
    private var draft: [Character] = []
    /// History beyond this many entries is forgotten, oldest first.
    static let historyLimit = 200
    /// False for answers to a question (y/N), which are no use to recall.
    var keepsHistory = true

    init(names: [String], history: [String] = []) {
        self.names = names
        self.history = Array(history.suffix(Self.historyLimit))
        self.historyIndex = self.history.count
    }

    var line: String { String(text) }

    /// Starts a fresh line (after a submitted one), keeping the history.
    mutating func startLine() {
        text = []
        cursor = 0
        draft = []
        historyIndex = history.count
    }

    mutating func apply(_ key: TerminalKey) -> Outcome {
        switch key {
        case .character(let character):
            text.insert(character, at: cursor)
            cursor += 1
        case .left: cursor = max(0, cursor - 1)
        case .right: cursor = min(text.count, cursor + 1)
        case .home: cursor = 0
        case .end: cursor = text.count
        case .wordLeft: cursor = startOfWord(before: cursor)
        case .wordRight: cursor = endOfWord(after: cursor)
        case .deleteBackward:
            if cursor > 0 {
                text.remove(at: cursor - 1)
                cursor -= 1
            }
        case .deleteForward:
            if cursor < text.count { text.remove(at: cursor) }
        case .deleteWordBackward:
            let start = startOfWord(before: cursor)
            text.removeSubrange(start..<cursor)
            cursor = start
        case .deleteToStart:
            text.removeSubrange(0..<cursor)
            cursor = 0
        case .deleteToEnd:
            text.removeSubrange(cursor...)
        case .up: showHistory(historyIndex - 1)
        case .down: showHistory(historyIndex + 1)
        case .complete: return complete()
        case .enter:
            let line = self.line
            if keepsHistory { remember(line) }
            return .submitted(line)
        case .interrupt: return .interrupted
        case .endOfInput:
            // As readline: on an empty line end of input, otherwise delete under the cursor.
            if text.isEmpty { return .endOfInput }
            if cursor < text.count { text.remove(at: cursor) }
        case .ignored: break
        }
        return .editing
    }

    private mutating func showHistory(_ index: Int) {
        guard index >= 0, index <= history.count, index != historyIndex else { return }
        if historyIndex == history.count { draft = text }
        historyIndex = index
        text = index == history.count ? draft : Array(history[index])
        cursor = text.count
    }

    private mutating func remember(_ line: String) {
        let trimmed = line.trimmingBlanks
        if !trimmed.isEmpty, history.last != trimmed {
            history.append(trimmed)
            if history.count > Self.historyLimit { history.removeFirst(history.count - Self.historyLimit) }
        }
        historyIndex = history.count
    }

    /// Start of the word the cursor is in or after (Ctrl-W, Alt-B): spaces, then non-spaces.
    private func startOfWord(before index: Int) -> Int {
        var start = index
        while start > 0, text[start - 1] == " " { start -= 1 }
        while start > 0, text[start - 1] != " " { start -= 1 }
        return start
    }

    private func endOfWord(after index: Int) -> Int {
        var end = index
        while end < text.count, text[end] == " " { end += 1 }
        while end < text.count, text[end] != " " { end += 1 }
        return end
    }

    /// Completes the first word when the cursor is at its end: a unique match is filled in
    /// (with a space), several are extended to their common prefix and listed.
    private mutating func complete() -> Outcome {
        let typed = String(text[..<cursor])
        guard !typed.contains(" "), !typed.contains("="), cursor == text.count || text[cursor] == " " else { return .editing }
        let matches = names.filter { $0.lowercased().hasPrefix(typed.lowercased()) }
        guard !matches.isEmpty else { return .editing }
        let rest = text[cursor...].drop { $0 == " " }
        if matches.count == 1 {
            replaceFirstWord(with: matches[0], rest: Array(rest))
            return .editing
        }
        let common = matches.dropFirst().reduce(matches[0]) { prefix, name in
            String(zip(prefix, name).prefix { $0.lowercased() == $1.lowercased() }.map(\.0))
        }
        if common.count > typed.count {
            let tail = Array(text[cursor...])
            text = Array(common) + tail
            cursor = common.count
        }
        return .candidates(matches)
    }

    private mutating func replaceFirstWord(with name: String, rest: [Character]) {
        text = Array(name + " ") + rest
        cursor = name.count + 1
    }
}
