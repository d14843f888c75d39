import ArgumentParser
import Daemon

#if canImport(Glibc)
import Glibc
#endif

/// The process entry point: memory settings first, while the process has one thread, then
/// the command line.
///
/// A synchronous `main` that parks the main thread rather than an `async` one: Swift's async
/// main hands the main thread to `dispatch_main()`, which ends it with `pthread_exit`, and the
/// forced unwind of that exit walks mwgated's unwind tables (`.eh_frame_hdr`, `.eh_frame`) with
/// libgcc_s's unwinder: about 0.8 MB that then stays resident for nothing. Nothing in mwgated runs on
/// the main queue or the main actor, so the main thread has nothing else to do.
@main
enum MWGatedMain {
    static func main() {
        ProcessMemory.configure()
        // The command lines systemd and the tests use are read by hand; ArgumentParser (its
        // reflection over the command's properties, its help and error machinery) runs only
        // for anything else, so it prints help and errors as before.
        let plain = PlainCommandLine.options(Array(CommandLine.arguments.dropFirst()))
        // The process's root task, the one an async main would start: there is no scope above
        // it to join (the main thread only parks), everything the daemon runs is structured
        // below it (Daemon.run's service group), and it never returns: it ends the process.
        Task.detached {
            guard let options = plain else {
                await MWGated.main()  // exits itself with the right status on help or errors
                exit(0)
            }
            if options.checkOnly { exit(Daemon.checkConfiguration(options)) }
            await Daemon.runToExit(options)
        }
        while true { pause() }
    }
}

/// The plain forms of mwgated's command line: `--config FILE`, `--config=FILE`,
/// `--check-config`, `--bus-address ADDRESS`, `--bus-address=ADDRESS`, each at most once.
/// Anything else (help, a repeated or unknown option, a missing value, a value that looks
/// like an option) returns nil and goes to ArgumentParser.
enum PlainCommandLine {
    static func options(_ arguments: [String]) -> Daemon.Options? {
        var configurationPath: String?
        var busAddress: String?
        var checkOnly = false
        var index = 0
        func value(_ name: String, _ argument: String) -> String? {
            if argument == name {
                index += 1
                guard index < arguments.count, let next = arguments[index].utf8.first, next != UInt8(ascii: "-") else { return nil }
                return arguments[index]
            }
            let text = String(argument.dropFirst(name.count + 1))
            return text.isEmpty ? nil : text
        }
        while index < arguments.count {
            let argument = arguments[index]
            if argument == "--check-config", !checkOnly {
                checkOnly = true
            } else if configurationPath == nil, argument == "--config" || argument.hasPrefix("--config=") {
                guard let path = value("--config", argument) else { return nil }
                configurationPath = path
            } else if busAddress == nil, argument == "--bus-address" || argument.hasPrefix("--bus-address=") {
                guard let address = value("--bus-address", argument) else { return nil }
                busAddress = address
            } else {
                return nil
            }
            index += 1
        }
        return Daemon.Options(configurationPath: configurationPath, checkOnly: checkOnly, busAddress: busAddress)
    }
}

/// mwgated: the MetaWear gateway daemon (run by systemd as mwgated.service).
struct MWGated: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mwgated",
        abstract: "The mwgate gateway daemon: MetaWear boards over BlueZ, GNSS, recording, upstream sync.",
        discussion: """
            Configuration: --config FILE, else $CONFIGURATION_DIRECTORY/mwgated.toml or /etc/mwgate/mwgated.toml \
            (optional: without it every default applies). State in $STATE_DIRECTORY (/var/lib/mwgate). \
            Exit status 78 (EX_CONFIG) when the configuration has errors, each printed as file:line: key: message. \
            SIGTERM stops cleanly (open chunks sealed), SIGHUP reloads what can be reloaded (docs/operations.md).
            """,
        subcommands: [BufferCommand.self])

    @Option(name: .customLong("config"), help: "Configuration file (default: $CONFIGURATION_DIRECTORY/mwgated.toml).")
    var configurationPath: String?

    @Flag(name: .customLong("check-config"), help: "Validate the configuration and exit (0: valid, 78: errors).")
    var checkOnly = false

    @Option(name: .customLong("bus-address"), help: "D-Bus address of BlueZ's bus (default: $DBUS_SYSTEM_BUS_ADDRESS or the system bus).")
    var busAddress: String?

    func run() async throws {
        let options = Daemon.Options(configurationPath: configurationPath, checkOnly: checkOnly, busAddress: busAddress)
        let status = checkOnly ? Daemon.checkConfiguration(options) : await Daemon.run(options)
        if status != 0 { throw ExitCode(status) }
    }
}
