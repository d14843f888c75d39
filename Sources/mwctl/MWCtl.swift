import ArgumentParser
import Foundation

/// `mwctl`: the command-line client of the mwgate gateway. Each command group lives in
/// its own file.
@main
struct MWCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mwctl",
        abstract: "Control and inspect the mwgate MetaWear/GNSS gateway.",
        discussion: """
            Exit status: 0 success; 1 internal failure; 2 bad usage, malformed or \
            unknown source spec; 3 input that cannot be read or a source that failed \
            (missing buffer database); 4 unknown session or session data evicted.
            """,
        subcommands: [GNSSCommand.self, HistoryCommand.self, ExportCommand.self, SyncCommand.self]
    )
}

/// Exit statuses shared by every command (documented in `mwctl --help`).
enum MWCtlExit {
    static let usage = ExitCode(2)
    static let input = ExitCode(3)
    static let notFound = ExitCode(4)

    /// Prints one error line to stderr and returns the exit code to throw.
    static func fail(_ message: String, _ code: ExitCode) -> ExitCode {
        FileHandle.standardError.write(Data("mwctl: error: \(message)\n".utf8))
        return code
    }
}

/// Writes one line to stdout unbuffered, so live output reaches pipes at once.
func emitLine(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
