import ArgumentParser
import Basics
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// `mwctl session start|stop|list`.
struct SessionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session", abstract: "Start, stop and list walking sessions.",
        subcommands: [Start.self, Stop.self, List.self])

    struct Start: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Start recording a session (exit 6 if one records).")
        @Option(help: ArgumentHelp("End the session by itself after this long: \"90 s\", \"30 min\", \"2 h\", \"1 h 30 min\" "
            + "(default: [session] max_duration, else until stopped). At a rate the boards log to flash, a length their flash "
            + "cannot hold is refused.", valueName: "length"))
        var duration: String?
        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard let duration else { return }
            guard let seconds = DurationText.parse(duration), seconds >= 1, seconds <= Double(UInt32.max) else {
                throw ValidationError("--duration '\(duration)' is not a length of time; write e.g. \"90 s\", \"30 min\", \"2 h\"")
            }
        }

        func run() async throws {
            let seconds = duration.flatMap(DurationText.parse).map { UInt32($0.rounded()) }
            let id = try await DaemonAccess.run { client in
                if let seconds { try await client.startSession(seconds: seconds) } else { try await client.startSession() }
            }
            if output.json { try emitJSON(["sessionID": id]) } else { emitLine("recording session \(id)") }
        }
    }

    struct Stop: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop the recording session (exit 6 if none records); it then awaits its survey.")
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let end = try await DaemonAccess.run { try await $0.stopSession() }
            if output.json { return try emitJSON(end) }
            emitLine("stopped \(end.sessionID): \(end.points) points from \(end.boards.count) board(s), "
                     + FixedDecimal.string(end.distanceMetres, places: 0) + " m; submit its survey with: mwctl survey")
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List sessions in the buffer, newest first.")
        @Option(help: "How many sessions (1-10000).") var limit: UInt32 = 20
        @OptionGroup var output: OutputOptions

        func validate() throws {
            guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be 1 to 10000") }
        }

        func run() async throws {
            let sessions = try await DaemonAccess.run { try await $0.sessions(limit: limit) }
            if output.json { return try emitJSON(sessions) }
            if sessions.isEmpty { return emitLine("(no sessions)") }
            for line in Self.lines(sessions) { emitLine(line) }
        }

        /// The listing's lines: a header, a line per session, and a note when a session's times
        /// are on a clock that was not set (how far off is not known).
        static func lines(_ sessions: [SessionListingPayload]) -> [String] {
            ["SESSION                               STARTED              STATE            POINTS  TIMES"]
                + sessions.map {
                    [$0.sessionID.padded(36), Format.time($0.startedAt), $0.state.padded(15), String($0.points).padded(6, left: true),
                     times($0.timeSource)].joined(separator: "  ")
                }
                + (sessions.contains { $0.timeSource == unsetClock } ? [unsetClockNote] : [])
        }

        static let unsetClock = "unsynchronised_system_clock"
        static let unsetClockNote = "* recorded before any GNSS fix on a gateway clock that was not set: its start, day and "
            + "point times are that clock's, off by its unknown error (a fix while the same mwgated still runs corrects them)"

        /// Where a session's times come from, in the listing's words (`-` while it records).
        static func times(_ source: String?) -> String {
            switch source {
            case nil: "-"
            case "gnss_corrected": "GNSS"
            case "system_clock_synchronised": "system clock"
            case unsetClock: "CLOCK NOT SET *"
            case let other?: other
            }
        }
    }
}
