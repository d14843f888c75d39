import ArgumentParser
import Daemon

/// `mwgated buffer history|sessions|export --state-dir DIR`: the buffer of a stopped gateway
/// (or a copied SD card) read directly and read-only, answered as the running daemon answers
/// over D-Bus. `mwctl history/export --state-dir` run this, so that mwctl stays small.
struct BufferCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "buffer",
        abstract: "Read a state directory's buffer without the daemon (what `mwctl ... --state-dir` runs).",
        discussion: """
            Prints what the control API would return: the history and the sessions as JSON, an \
            export as its bytes. Needs read permission on DIR/buffer.sqlite. Exit status: 0 \
            success; 1 the buffer cannot be read; 2 bad argument; 4 unknown session (or its \
            data was evicted or expired).
            """,
        subcommands: [History.self, Sessions.self, Export.self])

    struct Location: ParsableArguments {
        @Option(name: .customLong("state-dir"), help: ArgumentHelp("The gateway's state directory.", valueName: "DIR"))
        var stateDirectory: String
    }

    struct History: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The daily summary of the last DAYS days, newest first (JSON).")
        @Option(help: "Days to show, counting today (1-3660).") var days: UInt32 = 7
        @OptionGroup var location: Location

        func run() throws { try BufferCommand.answer(.history(days: days), location) }
    }

    struct Sessions: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "The sessions in the buffer, newest first (JSON).")
        @Option(help: "How many sessions at most.") var limit: UInt32 = 100_000
        @OptionGroup var location: Location

        func run() throws { try BufferCommand.answer(.sessions(limit: limit), location) }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "One session as json, csv, geojson, gpx, html or svg.")
        @Argument(help: "Session ID.") var session: String
        @Option(help: "json, csv, geojson, gpx, html or svg.") var format: String = "json"
        @OptionGroup var location: Location

        func run() throws { try BufferCommand.answer(.export(sessionID: session, format: format), location) }
    }

    /// Writes the answer to stdout, or one error line to stderr and exits with its status.
    static func answer(_ request: BufferReadout.Request, _ location: Location) throws {
        let status = BufferReadout.answer(request, stateDirectory: location.stateDirectory)
        if status != 0 { throw ExitCode(status) }
    }
}
