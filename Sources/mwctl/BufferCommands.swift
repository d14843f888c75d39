import ArgumentParser
import Buffer
import Foundation

/// Where the gateway keeps its state: `--state-dir`, else systemd's STATE_DIRECTORY (first
/// entry), else /var/lib/mwgate.
struct StateDirectoryOption: ParsableArguments {
    @Option(name: .customLong("state-dir"), help: "State directory holding buffer.sqlite (default: $STATE_DIRECTORY or /var/lib/mwgate).")
    var stateDirectory: String?

    var resolved: String {
        if let stateDirectory { return stateDirectory }
        if let env = ProcessInfo.processInfo.environment["STATE_DIRECTORY"], let first = env.split(separator: ":").first {
            return String(first)
        }
        return "/var/lib/mwgate"
    }

    /// Opens the buffer read-only, or exits with a one-line error.
    func openBuffer() throws -> BufferStore {
        let path = BufferStore.path(inStateDirectory: resolved)
        do {
            return try BufferStore(readOnlyPath: path, configuration: .init(userID: "", log: { _ in }))
        } catch let error as BufferStore.StoreError {
            throw MWCtlExit.fail("\(error)", MWCtlExit.input)
        } catch {
            throw MWCtlExit.fail("cannot open \(path): \(error)", MWCtlExit.input)
        }
    }
}

/// `mwctl history`: the daily summary, read from the history index only.
struct HistoryCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history",
        abstract: "Show recorded walking sessions per day (from the buffer's history index).")

    @Option(help: "Days to show, counting today.") var days: Int = 7
    @Flag(help: "Print JSON instead of a table.") var json = false
    @OptionGroup var state: StateDirectoryOption

    func run() throws {
        guard days > 0 else { throw MWCtlExit.fail("--days must be at least 1, got \(days)", MWCtlExit.usage) }
        let store = try state.openBuffer()
        let history: [HistoryDay]
        do { history = try store.history(days: days) } catch {
            throw MWCtlExit.fail("cannot read history: \(error)", MWCtlExit.input)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            emitLine(String(decoding: try encoder.encode(history), as: UTF8.self))
            return
        }
        emitLine("DAY         SESSIONS  WALK(min)  DIST(km)  SAMPLES   SYNCED  UNSYNCED  LOST  HAZARDS")
        for d in history {
            let hazards = d.hazards.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
            emitLine(String(format: "%@  %8d  %9.1f  %8.2f  %7d  %7d  %8d  %4d  %@", d.day, d.sessions, d.walkingMinutes,
                            d.distanceMetres / 1000, d.samples, d.synced, d.unsynced, d.lost, hazards.isEmpty ? "-" : hazards))
        }
        if history.isEmpty { emitLine("(no sessions in the last \(days) day(s))") }
    }
}

/// `mwctl export SESSION`: one session recombined from its chunks.
struct ExportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export one recorded session as JSON, CSV, GeoJSON or GPX.",
        discussion: "Exit status 4 when the session is unknown or its data was evicted or expired.")

    @Argument(help: "Session ID (see `mwctl history --json` or the daemon's session list).") var session: String
    @Option(help: "json, csv, geojson or gpx.") var format: String = "json"
    @Option(name: .shortAndLong, help: "Write to FILE instead of stdout.") var output: String?
    @OptionGroup var state: StateDirectoryOption

    func run() throws {
        guard let fmt = ExportFormat(rawValue: format.lowercased()) else {
            throw MWCtlExit.fail("unknown format '\(format)' (expected json, csv, geojson or gpx)", MWCtlExit.usage)
        }
        let store = try state.openBuffer()
        let data: SessionDataset
        do { data = try store.dataset(sessionID: session) } catch let error as BufferStore.StoreError {
            switch error {
            case .unknownSession, .expired: throw MWCtlExit.fail("\(error)", MWCtlExit.notFound)
            default: throw MWCtlExit.fail("\(error)", MWCtlExit.input)
            }
        }
        let text = SessionExporter.render(data, format: fmt)
        if let output {
            do { try Data(text.utf8).write(to: URL(fileURLWithPath: output), options: .atomic) } catch {
                throw MWCtlExit.fail("cannot write \(output): \(error.localizedDescription)", MWCtlExit.input)
            }
        } else {
            FileHandle.standardOutput.write(Data(text.utf8))
        }
    }
}
