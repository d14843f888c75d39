import ArgumentParser
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StatusModel

/// `mwctl sync status|now|retry-dead`.
struct SyncCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync", abstract: "Inspect and drive the upload to the upstream.",
        subcommands: [Status.self, Now.self, RetryDead.self], defaultSubcommand: Status.self)

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the sync state and the backlog.")
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let status = try await DaemonAccess.run { try await $0.status() }
            if output.json { return try emitJSON(SyncReport(sync: status.sync, backlog: status.backlog)) }
            if let s = status.sync {
                Self.show(s)
            } else {
                emitLine("sync: unknown (the daemon did not report it)")
            }
            if let b = status.backlog {
                emitLine("backlog: \(b.documents) document(s), \(Format.bytes(b.bytes)), \(b.inFlight) in flight, \(b.dead) dead")
            }
        }

        static func show(_ s: UpstreamSyncStatus) {
            if !s.configured {
                emitLine("sync: no upstream configured (documents stay in the buffer)")
            } else {
                emitLine("sync: \(s.state)\(s.endpoint.map { " to \($0)" } ?? "")")
                if let present = s.credentialsPresent { emitLine("credentials: \(present ? "present" : "MISSING")") }
                if let t = s.lastSuccessAt { emitLine("last success: \(Format.time(t))") }
                if let t = s.lastAttemptAt { emitLine("last attempt: \(Format.time(t))") }
                if let e = s.lastError { emitLine("last error: \(e)") }
                if let t = s.nextAttemptAt { emitLine("next attempt: \(Format.time(t))") }
                emitLine("documents sent: \(s.documentsSent)")
            }
        }

        struct SyncReport: Encodable {
            var sync: UpstreamSyncStatus?
            var backlog: BacklogStatus?
        }
    }

    struct Now: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Upload now instead of waiting (exit 7 without an upstream).")
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let run = try await DaemonAccess.run { try await $0.syncNow() }
            if output.json { return try emitJSON(run) }
            emitLine("sent \(run.sent), failed \(run.failed), remaining \(run.remaining)\(run.error.map { "; error: \($0)" } ?? "")")
        }
    }

    struct RetryDead: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "retry-dead", abstract: "Queue documents the upstream refused for good once more.")
        @Option(help: "Only this session's documents.") var session: String?
        @OptionGroup var output: OutputOptions

        func run() async throws {
            let count = try await DaemonAccess.run { try await $0.retryDead(sessionID: session) }
            if output.json { return try emitJSON(["requeued": count]) }
            emitLine("requeued \(count) dead document(s)")
        }
    }
}
