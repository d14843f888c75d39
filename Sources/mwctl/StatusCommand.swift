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
import StatusModel

/// `mwctl status`: boards, fix, session, clock, backlog, sync, problems.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show the gateway's boards, GNSS fix, session, backlog and sync.",
        discussion: "With --watch the view is redrawn whenever the daemon announces a change (PropertiesChanged), and at least every --interval seconds.")

    @OptionGroup var output: OutputOptions
    @Flag(help: "Keep refreshing until interrupted.") var watch = false
    @Option(help: "With --watch: stop after this many refreshes.") var count: Int?
    @Option(help: "With --watch: redraw at least this often, seconds.") var interval: Double = 5

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
        if interval <= 0 { throw ValidationError("--interval must be positive") }
    }

    func run() async throws {
        try await DaemonAccess.run { client in
            guard watch else {
                if output.json { emitLine(try await client.statusJSON()) } else { print(StatusView.text(try await client.status()), terminator: "") }
                return
            }
            try await watchLoop(client)
        }
    }

    private func watchLoop(_ client: GatewayControlClient) async throws {
        let changes = try await client.propertyChanges()
        let interactive = isatty(STDOUT_FILENO) == 1 && !output.json
        var shown = 0
        func draw() async throws {
            if output.json {
                emitLine(try await client.statusJSON())
            } else {
                let text = StatusView.text(try await client.status())
                StandardStream.output.write((interactive ? "\u{1B}[H\u{1B}[2J" : "---\n") + text)
            }
            shown += 1
        }
        try await draw()
        if let count, shown >= count { return }
        // A redraw is due when the daemon announces a change or `interval` passes; changes
        // that come while one is drawn make one redraw. The two watchers are children of this
        // scope and end with it; the watch ends when the daemon's announcements do.
        let (due, dueContinuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let interval = interval
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for try await _ in changes { dueContinuation.yield() }
                    dueContinuation.finish()
                } catch {
                    // The connection failed: the timer's next redraw reports it.
                }
            }
            group.addTask {
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(interval))
                    dueContinuation.yield()
                }
            }
            defer { group.cancelAll() }
            for await _ in due {
                try await draw()
                if let count, shown >= count { return }
            }
        }
    }
}

/// The human-readable status.
enum StatusView {
    static func text(_ s: GatewayStatus) -> String {
        var lines: [String] = []
        let session: String
        if s.session.isRecording, let id = s.session.sessionID {
            let since = s.session.startedAt.map { " for " + Format.duration(s.generatedAt - $0) } ?? ""
            session = "recording \(id) (\(s.session.trigger ?? "?"))\(since)"
        } else {
            session = "idle"
        }
        lines.append("Session:  \(session), mode \(s.session.mode), \(s.session.chunksSealed) chunk(s) sealed")
        if !s.session.awaitingSurvey.isEmpty {
            lines.append("          awaiting survey: \(s.session.awaitingSurvey.joined(separator: ", ")) (mwctl survey)")
        }
        if s.boards.isEmpty { lines.append("Boards:   none (mwctl boards scan / boards add ADDRESS)") }
        for (index, row) in BoardRow.table(s.boards, at: s.generatedAt).enumerated() {
            lines.append("\(index == 0 ? "Boards:  " : "         ") \(row)")
            if let flash = s.boards[index].flashLog { lines.append("            flash log: \(flash)") }
        }
        let g = s.gnss
        var fix = "GNSS:     "
        if g.source == nil {
            fix += "no receiver configured"
        } else if let lat = g.latitude, let lon = g.longitude, g.hasPosition {
            fix += (g.mode ?? "?") + " fix " + FixedDecimal.string(lat, places: 5) + ", " + FixedDecimal.string(lon, places: 5)
            if let sats = g.satellitesUsed { fix += ", \(sats) satellites" }
            if let age = g.fixAgeSeconds { fix += ", " + Format.duration(age) + " old" }
        } else {
            fix += g.fixesReceived == 0 ? "no fix yet" : "no position (\(g.mode ?? "no_fix"))"
        }
        if let source = g.source { fix += " [\(source)\(g.isRunning ? "" : ", stopped")]" }
        lines.append(fix)
        lines.append("Clock:    \(s.clock.systemClockSynchronised ? "synchronised" : "NOT synchronised"); point times: \(s.clock.timeSource)")
        if let b = s.backlog {
            var text = "Backlog:  \(b.documents) document(s), \(Format.bytes(b.bytes))"
            if let age = b.oldestUnsentAgeSeconds { text += ", oldest " + Format.duration(age) }
            text += ", \(b.dead) dead"
            lines.append(text)
        } else {
            lines.append("Backlog:  unknown (the buffer could not be read)")
        }
        if let storage = s.storage {
            let free = storage.freeBytes.map { Format.bytes($0) + " free" } ?? "free space unknown"
            lines.append("Storage:  \(storage.bufferBytes.map(Format.bytes) ?? "?") of \(Format.bytes(storage.budgetMaxBytes)) budget, \(free)")
        } else {
            lines.append("Storage:  unknown")
        }
        var sync = "Sync:     "
        if let upstream = s.sync {
            if !upstream.configured {
                sync += "no upstream configured"
            } else {
                sync += upstream.state
                if let endpoint = upstream.endpoint { sync += " to \(endpoint)" }
                if let last = upstream.lastSuccessAt { sync += ", last success " + Format.time(last) }
                if let error = upstream.lastError { sync += ", last error: \(error)" }
            }
        } else {
            sync += "unknown"
        }
        lines.append(sync)
        // A full stream lost data: worth a line (the high-water marks stay in --json).
        let full = (s.streams ?? []).filter { $0.dropped > 0 }
        if !full.isEmpty {
            lines.append("Streams:  " + full.map { "\($0.name) dropped \($0.dropped) (full at \($0.capacity))" }.joined(separator: ", "))
        }
        for (index, p) in s.problems.suffix(5).enumerated() {
            lines.append("\(index == 0 ? "Problems:" : "         ") \(Format.time(p.at)) \(p.area): \(p.message)")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
