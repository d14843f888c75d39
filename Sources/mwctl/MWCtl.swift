import ArgumentParser
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `mwctl`: the command-line client of the mwgate gateway. Each command group lives in
/// its own file; everything but `gnss` talks to the daemon over D-Bus.
@main
struct MWCtl: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mwctl",
        abstract: "Control and inspect the mwgate MetaWear/GNSS gateway.",
        discussion: """
            Talks to the mwgated daemon over D-Bus (io.mwgate.Gateway1 on the system bus; \
            DBUS_SYSTEM_BUS_ADDRESS is honoured). Every command takes --json.

            Exit status: 0 success; 1 the command failed; 2 bad usage or an argument the \
            daemon rejected; 3 the daemon is not running or the bus is unreachable; 4 unknown \
            session (or its data was evicted); 5 permission denied (not root and not in the \
            mwgate group); 6 refused in the current state (not recording, already recording, \
            no survey pending, unknown board); 7 no upstream configured; 8 GNSS input cannot be \
            read or the source failed.
            """,
        subcommands: [
            StatusCommand.self, BoardsCommand.self, SessionCommand.self, SurveyCommand.self, HistoryCommand.self,
            ExportCommand.self, SyncCommand.self, DoctorCommand.self, GNSSCommand.self,
        ]
    )

    /// Runs the command like ArgumentParser's default, except that usage errors exit 2
    /// (the documented code) instead of EX_USAGE (64).
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            if exitCode(for: error) == .validationFailure {
                StandardStream.error.write(fullMessage(for: error) + "\n")
                Glibc.exit(MWCtlExit.usage.rawValue)
            }
            exit(withError: error)
        }
    }
}

/// Exit statuses shared by every command (documented in `mwctl --help` and docs/control-api.md).
enum MWCtlExit {
    static let failed = ExitCode(1)
    /// A capture that cannot be read, or a GNSS source that failed (gnss decode/watch).
    static let input = ExitCode(8)
    static let usage = ExitCode(2)
    static let unreachable = ExitCode(3)
    static let notFound = ExitCode(4)
    static let permission = ExitCode(5)
    static let refused = ExitCode(6)
    static let syncNotConfigured = ExitCode(7)
    /// Ctrl-C at a prompt, as a shell reports SIGINT (128 + 2).
    static let interrupted = ExitCode(130)

    /// Prints one error line to stderr and returns the exit code to throw.
    static func fail(_ message: String, _ code: ExitCode) -> ExitCode {
        StandardStream.error.write("mwctl: error: \(message)\n")
        return code
    }
}

/// `--json` for every command.
struct OutputOptions: ParsableArguments {
    @Flag(help: "Print JSON instead of text.") var json = false
}

/// Writes one line to stdout unbuffered, so live output reaches pipes at once.
func emitLine(_ line: String) {
    StandardStream.output.write(line + "\n")
}

/// Prints `value` as one line of JSON.
func emitJSON<T: Encodable>(_ value: T) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    emitLine(String(decoding: try encoder.encode(value), as: UTF8.self))
}
