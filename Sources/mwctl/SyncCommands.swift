import ArgumentParser
import Buffer
import Foundation

/// `mwctl sync`: upload backlog and dead letters. Until the control API carries these, the
/// commands read and write the buffer database directly.
struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Inspect the upload backlog and requeue dead-lettered documents.",
        subcommands: [SyncStatusCommand.self, SyncRetryDeadCommand.self])
}

/// Keys the Uplink's sync service keeps in the buffer's `sync_state` table.
enum SyncStateKeys {
    static let lastSuccess = "uplink.last_success"
    static let lastError = "uplink.last_error"
    static let lastErrorAt = "uplink.last_error_at"
}

struct SyncStatusCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status", abstract: "Show backlog, oldest unsent age, last success and error, and dead letters.")

    @Flag(help: "Print JSON instead of text.") var json = false
    @OptionGroup var state: StateDirectoryOption

    struct Report: Codable {
        var backlogCount: Int
        var backlogBytes: Int64
        var oldestUnsentAgeSeconds: Double?
        var inFlight: Int
        var sent: Int
        var deadLetters: [DeadLetter]
        var deadLetterCount: Int
        var lastSuccess: String?
        var lastError: String?
        var lastErrorAt: String?
    }

    func run() throws {
        let store = try state.openBuffer()
        let report: Report
        do {
            let stats = try store.backlogStats()
            report = Report(backlogCount: stats.count, backlogBytes: stats.bytes, oldestUnsentAgeSeconds: stats.oldestUnsentAge,
                            inFlight: stats.inFlight, sent: try store.sentCount(), deadLetters: try store.deadLetters(limit: 50),
                            deadLetterCount: stats.dead, lastSuccess: try store.syncState(SyncStateKeys.lastSuccess),
                            lastError: try store.syncState(SyncStateKeys.lastError),
                            lastErrorAt: try store.syncState(SyncStateKeys.lastErrorAt))
        } catch {
            throw MWCtlExit.fail("cannot read the outbox: \(error)", MWCtlExit.input)
        }
        if json {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            emitLine(String(decoding: try encoder.encode(report), as: UTF8.self))
            return
        }
        emitLine("backlog:        \(report.backlogCount) documents, \(report.backlogBytes) bytes (\(report.inFlight) in flight)")
        emitLine("oldest unsent:  " + (report.oldestUnsentAgeSeconds.map { String(format: "%.0f s ago", $0) } ?? "-"))
        emitLine("sent:           \(report.sent)")
        emitLine("last success:   \(report.lastSuccess ?? "-")")
        emitLine("last error:     \(report.lastError.map { "\($0) (\(report.lastErrorAt ?? "?"))" } ?? "-")")
        emitLine("dead letters:   \(report.deadLetterCount)")
        for d in report.deadLetters {
            emitLine("  \(d.kind)/\(d.documentName)  session \(d.sessionID)  attempts \(d.attempts)  \(d.reason ?? "")")
        }
    }
}

struct SyncRetryDeadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "retry-dead", abstract: "Put dead-lettered documents back in the upload queue.")

    @Option(help: "Only this session's documents.") var session: String?
    @OptionGroup var state: StateDirectoryOption

    func run() throws {
        let path = BufferStore.path(inStateDirectory: state.resolved)
        guard FileManager.default.fileExists(atPath: path) else {
            throw MWCtlExit.fail("no buffer database at \(path)", MWCtlExit.input)
        }
        let n: Int
        do {
            let store = try BufferStore(path: path, configuration: .init(userID: "", log: { _ in }))
            n = try store.requeueDead(sessionID: session)
        } catch {
            throw MWCtlExit.fail("cannot requeue dead letters: \(error)", MWCtlExit.input)
        }
        emitLine("requeued \(n) document\(n == 1 ? "" : "s")")
    }
}
