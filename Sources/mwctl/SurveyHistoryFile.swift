#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The survey prompt's earlier lines, kept between runs as a shell keeps its history:
/// `$XDG_STATE_HOME/mwgate/survey-history` (default `~/.local/state/mwgate/survey-history`),
/// one line each, the newest last, at most ``LineEditState/historyLimit`` lines. A convenience
/// only: a file that cannot be read or written means no history, never a failed survey.
struct SurveyHistoryFile {
    let url: URL?

    init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        if let state = environment["XDG_STATE_HOME"], state.hasPrefix("/") {
            url = URL(fileURLWithPath: state).appendingPathComponent("mwgate/survey-history")
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            url = URL(fileURLWithPath: home).appendingPathComponent(".local/state/mwgate/survey-history")
        } else {
            url = nil
        }
    }

    func load() -> [String] {
        guard let url, let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return Array(text.split(separator: "\n").map(String.init).suffix(LineEditState.historyLimit))
    }

    func save(_ lines: [String]) {
        guard let url else { return }
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let text = lines.suffix(LineEditState.historyLimit).map { $0 + "\n" }.joined()
        try? Data(text.utf8).write(to: url, options: .atomic)
    }
}
