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
        Task.detached {
            await MWGated.main()  // exits by itself with the status of a failed run, help or an error
            exit(0)
        }
        while true { pause() }
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
            """)

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
