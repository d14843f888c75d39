#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// Where the interactive survey's lines come from: the line editor on a terminal, plain
/// lines otherwise (a pipe or a file, as scripts and tests give them).
struct SurveyInput {
    private var editor: LineEditor?
    private let historyFile = SurveyHistoryFile()

    init(catalogue: [String]) {
        editor = isatty(STDIN_FILENO) == 1 ? LineEditor(names: catalogue, history: historyFile.load()) : nil
    }

    /// Keeps what was typed at the terminal for the next survey's Up key.
    func saveHistory() {
        if let editor { historyFile.save(editor.history) }
    }

    var isTerminal: Bool { editor != nil }

    /// The next line after `prompt` (which goes to stderr); `question` for an answer that
    /// is not kept in the history.
    mutating func next(_ prompt: String, question: Bool = false) -> LineEditor.Result {
        if editor != nil { return editor!.readLine(prompt: prompt, keepInHistory: !question) }
        StandardStream.error.write(prompt)
        return Swift.readLine().map(LineEditor.Result.line) ?? .endOfInput
    }
}
