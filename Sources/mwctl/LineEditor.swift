#if canImport(Glibc)
import Glibc
#endif

/// Reads lines from a terminal the way readline does: cursor keys, Home/End, Ctrl-A/E/B/F,
/// Alt-B/F, Backspace and Delete anywhere, Ctrl-U/K/W, Up/Down through this prompt's earlier
/// lines, Tab completion of the first word (``LineEditState``). Used only when stdin is a
/// terminal; echo goes to stderr, like the prompts, so stdout stays the result.
struct LineEditor {
    /// How reading one line ended.
    enum Result: Equatable {
        case line(String)
        /// Ctrl-D on an empty line, or the terminal went away.
        case endOfInput
        /// Ctrl-C.
        case interrupted
    }

    private var state: LineEditState
    /// Bytes of an escape sequence normally arrive together; after this long without the rest,
    /// an Esc was pressed on its own.
    private static let escapeWaitMilliseconds: Int32 = 50

    init(names: [String], history: [String] = []) {
        state = LineEditState(names: names, history: history)
    }

    /// The lines entered at this prompt so far, after the history it started with.
    var history: [String] { state.history }

    /// One line after `prompt`; `keepInHistory` false for answers that are no use to recall.
    mutating func readLine(prompt: String, keepInHistory: Bool = true) -> Result {
        var saved = termios()
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return Swift.readLine().map(Result.line) ?? .endOfInput }
        var raw = saved
        // No line discipline, echo or signal keys: every byte comes to us. Output processing
        // stays on, so "\n" still moves to the start of the next line.
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG | IEXTEN)
        raw.c_iflag &= ~tcflag_t(ICRNL | INLCR | IXON)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        defer { tcsetattr(STDIN_FILENO, TCSANOW, &saved) }

        state.startLine()
        state.keepsHistory = keepInHistory
        redraw(prompt)
        var decoder = TerminalKeyDecoder()
        while true {
            if decoder.isInsideSequence, !Self.inputArrives(within: Self.escapeWaitMilliseconds) {
                _ = decoder.flush()
                continue
            }
            guard let byte = Self.readByte() else {
                // The terminal hung up: what was typed still counts, as with an Enter.
                write("\n")
                return state.text.isEmpty ? .endOfInput : .line(state.line)
            }
            guard let key = decoder.feed(byte) else { continue }
            switch state.apply(key) {
            case .editing:
                redraw(prompt)
            case .candidates(let names):
                write("\n" + names.joined(separator: "  ") + "\n")
                redraw(prompt)
            case .submitted(let line):
                write("\n")
                return .line(line)
            case .interrupted:
                write("^C\n")
                return .interrupted
            case .endOfInput:
                write("\n")
                return .endOfInput
            }
        }
    }

    /// The prompt and line from the start of the terminal's line, the rest of it cleared,
    /// the cursor put back where it is in the text.
    private func redraw(_ prompt: String) {
        var output = "\r" + prompt + state.line + "\u{1B}[K"
        let behind = state.text.count - state.cursor
        if behind > 0 { output += "\u{1B}[\(behind)D" }
        write(output)
    }

    private static func readByte() -> UInt8? {
        var byte: UInt8 = 0
        while true {
            let count = read(STDIN_FILENO, &byte, 1)
            if count == 1 { return byte }
            if count < 0, errno == EINTR { continue }
            return nil
        }
    }

    private static func inputArrives(within milliseconds: Int32) -> Bool {
        var descriptor = pollfd(fd: STDIN_FILENO, events: Int16(POLLIN), revents: 0)
        while true {
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0, errno == EINTR { continue }
            return ready > 0
        }
    }

    private func write(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(STDERR_FILENO, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
