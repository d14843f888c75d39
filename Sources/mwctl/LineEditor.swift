#if canImport(Glibc)
import Glibc
#endif

/// Reads one line from a terminal with Tab completion of the first word against a list of
/// names (the hazard catalogue). Used only when stdin is a terminal; otherwise the survey
/// reads plain lines. Echo goes to stderr, like the prompts.
struct LineEditor {
    let names: [String]

    /// The line, or nil at end of input (Ctrl-D on an empty line). Ctrl-C restores the
    /// terminal and exits 130 like a shell would.
    func readLine(prompt: String) -> String? {
        var saved = termios()
        guard tcgetattr(STDIN_FILENO, &saved) == 0 else { return Swift.readLine() }
        var raw = saved
        raw.c_lflag &= ~tcflag_t(ICANON | ECHO | ISIG)
        withUnsafeMutableBytes(of: &raw.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        tcsetattr(STDIN_FILENO, TCSANOW, &raw)
        defer { tcsetattr(STDIN_FILENO, TCSANOW, &saved) }

        write(prompt)
        var line: [UInt8] = []
        while true {
            var byte: UInt8 = 0
            guard read(STDIN_FILENO, &byte, 1) == 1 else { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            switch byte {
            case 0x0D, 0x0A:
                write("\n")
                return String(decoding: line, as: UTF8.self)
            case 0x04 where line.isEmpty:
                write("\n")
                return nil
            case 0x03:
                tcsetattr(STDIN_FILENO, TCSANOW, &saved)
                write("\n")
                exit(130)
            case 0x7F, 0x08:
                if !line.isEmpty {
                    line.removeLast()
                    write("\u{8} \u{8}")
                }
            case 0x09:
                complete(&line, prompt: prompt)
            case 0x20...0x7E:
                line.append(byte)
                write(String(decoding: [byte], as: UTF8.self))
            default:
                break
            }
        }
    }

    /// Completes the first word: a unique match is filled in (with a space), several
    /// matches are extended to their common prefix and listed.
    private func complete(_ line: inout [UInt8], prompt: String) {
        let text = String(decoding: line, as: UTF8.self)
        guard !text.contains(" "), !text.contains("=") else { return }
        let matches = names.filter { $0.lowercased().hasPrefix(text.lowercased()) }
        guard !matches.isEmpty else { return }
        if matches.count == 1 {
            let completion = matches[0] + " "
            write(String(repeating: "\u{8} \u{8}", count: line.count) + completion)
            line = Array(completion.utf8)
            return
        }
        let common = matches.dropFirst().reduce(matches[0]) { prefix, name in
            String(zip(prefix, name).prefix { $0.lowercased() == $1.lowercased() }.map(\.0))
        }
        write("\n" + matches.joined(separator: "  ") + "\n" + prompt)
        line = Array((common.count > text.count ? common : text).utf8)
        write(String(decoding: line, as: UTF8.self))
    }

    private func write(_ text: String) {
        var bytes = Array(text.utf8)
        _ = Glibc.write(STDERR_FILENO, &bytes, bytes.count)
    }
}
