import ArgumentParser
import Basics
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `mwctl survey` (interactive) and `mwctl survey submit --hazard NAME=N ... | --none`.
struct SurveyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "survey", abstract: "Submit the hazard survey of a stopped session.",
        subcommands: [Ask.self, Submit.self], defaultSubcommand: Ask.self)

    struct Submit: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Submit hazards (or none) for a session.",
            discussion: "Without --session the oldest session awaiting its survey is used. Exit 4 for an unknown session, 6 when it is not awaiting a survey, 2 for an unknown hazard.")
        @Option(name: .customLong("hazard"), help: ArgumentHelp("A hazard and its intensity, e.g. pothole=3 (repeatable).", valueName: "NAME=N"))
        var hazards: [String] = []
        @Flag(help: "The walk had no hazard.") var none = false
        @Option(help: "Session ID (default: the oldest awaiting a survey).") var session: String?
        @OptionGroup var output: OutputOptions

        func validate() throws {
            if none == !hazards.isEmpty { throw ValidationError("give either --hazard NAME=N (one or more) or --none") }
            _ = try Self.parse(hazards)
        }

        static func parse(_ items: [String]) throws -> [String: Int32] {
            var map: [String: Int32] = [:]
            for item in items {
                let parts = item.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2, !parts[0].isEmpty, let n = Int32(parts[1]), n >= 1 else {
                    throw ValidationError("--hazard '\(item)' must be NAME=N with N a whole number of at least 1")
                }
                guard map[parts[0]] == nil else { throw ValidationError("--hazard \(parts[0]) is given twice") }
                map[parts[0]] = n
            }
            return map
        }

        func run() async throws {
            let map = try Self.parse(hazards)
            let result = try await DaemonAccess.run { client in
                none ? try await client.submitNoHazard(sessionID: session)
                    : try await client.submitSurvey(sessionID: session, hazards: map)
            }
            SurveyCommand.report(result, json: output.json)
        }
    }

    struct Ask: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Ask for the hazards interactively (reads lines from stdin).",
            discussion: "Enter one hazard per line as NAME INTENSITY (or NAME=INTENSITY); a unique prefix of a catalogue name is enough. 'none' reports no hazard; an empty line or end of input (Ctrl-D) submits what was entered. When nothing valid was entered, 'no hazard' is submitted only after a yes to the question that follows. On a terminal the line edits as in a shell (cursor keys, Home/End, Ctrl-A/E/U/W/K, Up/Down for earlier lines, Tab completes a hazard name); Ctrl-C leaves without submitting (exit 130).")
        @Option(help: "Session ID (default: the oldest awaiting a survey).") var session: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let result = try await DaemonAccess.run { client in
                let catalogue = try await client.hazardCatalogue()
                let status = try await client.status()
                guard let target = session ?? status.session.awaitingSurvey.first else {
                    throw MWCtlExit.fail("no session is awaiting a survey (stop one with: mwctl session stop)", MWCtlExit.refused)
                }
                prompt("Survey for session \(target).")
                prompt(catalogue.isEmpty ? "Any hazard name is accepted." : "Hazards: \(catalogue.joined(separator: ", ")).")
                prompt("Enter NAME INTENSITY per line (a unique prefix is enough), 'none' for no hazard, an empty line to submit.")
                var input = SurveyInput(catalogue: catalogue)
                defer { input.saveHistory() }
                if input.isTerminal, !catalogue.isEmpty { prompt("Tab completes a hazard name; Up/Down recall earlier lines; Ctrl-C leaves without submitting.") }
                var hazards: [String: Int32] = [:]
                var rejected = 0
                while true {
                    let line: String
                    switch input.next("hazard> ") {
                    case .interrupted:
                        throw MWCtlExit.fail("survey cancelled, nothing submitted; session \(target) still awaits its survey", MWCtlExit.interrupted)
                    case .endOfInput:
                        line = ""
                    case .line(let raw):
                        line = raw.trimmingBlanks
                    }
                    if line.lowercased() == "none" {
                        return try await client.submitNoHazard(sessionID: target)
                    }
                    if line.isEmpty {
                        if !hazards.isEmpty { break }
                        // An empty line after mistyped ones is not a report of "no hazard":
                        // the walker confirms it, or goes back to entering hazards.
                        let problem = rejected == 0 ? "No hazard was entered." : "No valid hazard was entered (\(rejected) line(s) not understood)."
                        switch input.next("\(problem) Submit this walk as 'no hazard'? [y/N] ", question: true) {
                        case .line(let answer) where ["y", "yes"].contains(answer.trimmingBlanks.lowercased()):
                            return try await client.submitNoHazard(sessionID: target)
                        case .line:
                            prompt("Not submitted. Enter NAME INTENSITY per line, or 'none'.")
                            continue
                        case .interrupted:
                            throw MWCtlExit.fail("survey cancelled, nothing submitted; session \(target) still awaits its survey", MWCtlExit.interrupted)
                        case .endOfInput:
                            if input.isTerminal {
                                prompt("Not submitted. Enter NAME INTENSITY per line, or 'none'.")
                                continue
                            }
                            throw MWCtlExit.fail("nothing submitted: no valid hazard was entered and 'no hazard' was not confirmed (enter 'none' for a walk without hazards); session \(target) still awaits its survey", MWCtlExit.failed)
                        }
                    }
                    switch HazardEntry.parse(line, catalogue: catalogue) {
                    case .success(let (name, intensity)):
                        hazards[name] = intensity
                        prompt("  \(name) = \(intensity)")
                    case .failure(let problem):
                        rejected += 1
                        prompt("  \(problem.message)")
                    }
                }
                return try await client.submitSurvey(sessionID: target, hazards: hazards)
            }
            SurveyCommand.report(result, json: output.json)
        }

        /// Prompts go to stderr so stdout stays the result (and --json stays parseable).
        private func prompt(_ text: String, newline: Bool = true) {
            StandardStream.error.write(text + (newline ? "\n" : ""))
        }
    }

    static func report(_ r: SurveyResultPayload, json: Bool) {
        if json {
            do { try emitJSON(r) } catch { emitLine("{}") }
            return
        }
        let what = r.noHazard ? "no hazard" : r.hazards.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ", ")
        emitLine("survey submitted for \(r.sessionID) (\(what)): \(r.points) points in \(r.chunks) chunk(s), queued as \(r.document)")
    }
}

/// One typed line of the interactive survey, resolved against the catalogue.
enum HazardEntry {
    struct Problem: Error { let message: String }

    /// `NAME N` or `NAME=N`; NAME may be a unique prefix of a catalogue entry.
    static func parse(_ line: String, catalogue: [String]) -> Result<(String, Int32), Problem> {
        let parts = line.replacing("=", with: " ").split(separator: " ", omittingEmptySubsequences: true).map(String.init)
        guard parts.count == 2 else { return .failure(Problem(message: "expected NAME INTENSITY, e.g. \(catalogue.first ?? "pothole") 2")) }
        guard let intensity = Int32(parts[1]), intensity >= 1 else {
            return .failure(Problem(message: "intensity '\(parts[1])' must be a whole number of at least 1"))
        }
        let typed = parts[0]
        if catalogue.isEmpty { return .success((typed, intensity)) }
        if catalogue.contains(typed) { return .success((typed, intensity)) }
        let matches = catalogue.filter { $0.lowercased().hasPrefix(typed.lowercased()) }
        switch matches.count {
        case 1: return .success((matches[0], intensity))
        case 0: return .failure(Problem(message: "no hazard starts with '\(typed)' (known: \(catalogue.joined(separator: ", ")))"))
        default: return .failure(Problem(message: "'\(typed)' is ambiguous: \(matches.joined(separator: ", "))"))
        }
    }
}
