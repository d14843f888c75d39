import ArgumentParser
import Basics
import ExportFormats
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// `mwctl history`: the daily summary from the daemon's history index.
struct HistoryCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "history", abstract: "Show recorded walking sessions per day.")

    @Option(help: "Days to show, counting today (1-3660).") var days: UInt32 = 7
    @Option(help: ArgumentHelp("Also write the picture page of every session in these days and DIR/index.html linking them (pages of submitted sessions already there are kept).",
                               valueName: "DIR"))
    var html: String?
    @OptionGroup var output: OutputOptions
    @OptionGroup var offline: OfflineOption

    func validate() throws {
        guard (1...3660).contains(days) else { throw ValidationError("--days must be 1 to 3660") }
    }

    func run() async throws {
        let history: [HistoryDayPayload]
        if let local = try offline.history(days: days) {
            history = local
        } else {
            history = try await DaemonAccess.run { try await $0.history(days: days) }
        }
        if output.json {
            try emitJSON(history)
        } else {
            // LOST: samples missing in gaps; EVICTED: sessions whose unsent data the disk budget dropped.
            emitLine("DAY         SESSIONS  WALK(min)  DIST(km)  SAMPLES   SYNCED  UNSYNCED     LOST  EVICTED  HAZARDS")
            for d in history {
                let hazards = d.hazards.sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
                let columns = [(String(d.sessions), 8), (FixedDecimal.string(d.walkingMinutes, places: 1), 9),
                               (FixedDecimal.string(d.distanceMetres / 1000, places: 2), 8), (String(d.samples), 7),
                               (String(d.synced), 7), (String(d.unsynced), 8), (String(d.missedSamples), 7),
                               (String(d.evictedSessions), 7)]
                emitLine(d.day + columns.map { "  " + $0.padded($1, left: true) }.joined() + "  " + (hazards.isEmpty ? "-" : hazards))
            }
            if history.isEmpty { emitLine("(no sessions in the last \(days) day(s))") }
        }
        if let html { try await writePages(to: html, history: history) }
    }

    /// A day's totals in words, for the pages' index.
    static func totals(_ d: HistoryDayPayload) -> String {
        let hazards = d.hazards.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        return "\(d.sessions) session(s), " + FixedDecimal.string(d.walkingMinutes, places: 1) + " min walked, "
            + FixedDecimal.string(d.distanceMetres / 1000, places: 2) + " km, "
            + "\(d.samples) samples; \(d.synced) synced, \(d.unsynced) not yet, \(d.evictedSessions) evicted; \(d.missedSamples) samples lost in gaps; hazards: " + (hazards.isEmpty ? "none" : hazards)
    }
}

/// `mwctl export SESSION`: one session recombined from its chunks, fetched from the daemon
/// in slices (a progress bar on stderr when it is a terminal).
struct ExportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "export",
        abstract: "Export one recorded session as JSON, CSV, GeoJSON, GPX, or pictures (HTML, SVG).",
        discussion: "Exit status 4 when the session is unknown or its data was evicted or expired.")

    @Argument(help: "Session ID (see `mwctl session list`).") var session: String
    @Option(help: "json, csv, geojson, gpx, html (a page of pictures: traces, track, survey, numbers) or svg (the same as one image).")
    var format: String = "json"
    @Option(name: .shortAndLong, help: "Write to FILE instead of stdout.") var output: String?
    @Flag(help: "Print a JSON summary (session, format, bytes, file) instead of the data; needs --output.") var json = false
    @OptionGroup var offline: OfflineOption

    func validate() throws {
        guard ExportFormat(rawValue: format.lowercased()) != nil else {
            throw ValidationError("unknown format '\(format)' (expected \(ExportFormat.spokenList))")
        }
        if json, output == nil { throw ValidationError("--json prints a summary; give --output FILE for the data") }
    }

    func run() async throws {
        let bar = ProgressBar(enabled: isatty(STDERR_FILENO) == 1)
        let bytes: [UInt8]
        if let local = try offline.export(sessionID: session, format: format.lowercased()) {
            bytes = local
        } else {
            bytes = try await DaemonAccess.run { client in
                try await client.export(sessionID: session, format: format.lowercased()) { bar.update($0, $1) }
            }
        }
        bar.finish()
        if let output {
            do { try OutputFile.write(bytes, to: output) } catch {
                throw MWCtlExit.fail("cannot write \(output): \(error)", MWCtlExit.failed)
            }
            if json { try emitJSON(ExportSummary(sessionID: session, format: format.lowercased(), bytes: bytes.count, file: output)) }
        } else {
            StandardStream.output.write(bytes)
        }
    }

    struct ExportSummary: Encodable {
        var sessionID: String
        var format: String
        var bytes: Int
        var file: String
    }
}

/// A one-line progress bar on stderr, drawn only on a terminal.
final class ProgressBar: @unchecked Sendable {
    private let enabled: Bool
    private var drawn = false

    init(enabled: Bool) { self.enabled = enabled }

    func update(_ done: UInt64, _ total: UInt64) {
        guard enabled, total > 0 else { return }
        let width = 30
        let filled = Int(Double(width) * Double(done) / Double(total))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let text = "\r[\(bar)] \(Format.bytes(Int64(done)))/\(Format.bytes(Int64(total)))"
        StandardStream.error.write(text)
        drawn = true
    }

    func finish() {
        if drawn { StandardStream.error.write("\n") }
    }
}
