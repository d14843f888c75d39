import AsyncHTTPClient
import Foundation
import TestSupport
import NIOCore
import NIOFoundationCompat
import Uplink

/// Google's Firestore emulator on a free loopback port, in its own process group.
public final class FirestoreEmulator: Sendable {
    /// The emulator's launcher as Debian's google-cloud-cli-firestore-emulator installs it.
    public static let launcher = "/usr/lib/google-cloud-sdk/platform/cloud-firestore-emulator/cloud_firestore_emulator"
    /// The loopback port it listens on.
    public let port: Int
    /// The project every request names.
    public let projectID: String
    private let pid: Int32

    /// Why the emulator cannot run here, or nil when it can.
    public static var missing: String? {
        if !FileManager.default.isExecutableFile(atPath: launcher) {
            return "Firestore emulator not installed (\(launcher); Debian package google-cloud-cli-firestore-emulator from Google's Cloud SDK repo)"
        }
        let java = ["/usr/bin/java", "/usr/local/bin/java"].first { FileManager.default.isExecutableFile(atPath: $0) }
        if java == nil { return "java not found (openjdk-17-jre-headless); the Firestore emulator needs it" }
        return nil
    }

    /// Starts the emulator on `port` (a free one when nil) and waits (up to 90 s: it is Java)
    /// until it answers. A fixed port lets a test configure a client before the emulator is
    /// up, as an upstream that is down at first.
    public init(projectID: String = "demo-mwgate", port: Int? = nil) async throws {
        self.projectID = projectID
        self.port = port ?? freePort()
        let port = self.port
        let p = Process()
        // Foundation starts the child as the leader of a new process group, which its java
        // child joins; stop() signals the whole group.
        p.executableURL = URL(fileURLWithPath: Self.launcher)
        p.arguments = ["start", "--host=127.0.0.1", "--port=\(port)", "--project_id=\(projectID)"]
        let log = FileHandle(forWritingAtPath: "/dev/null")
        p.standardOutput = log
        p.standardError = log
        try Spawning.run(p)
        pid = p.processIdentifier
        let url = "http://127.0.0.1:\(port)/"
        let up = await eventually(timeout: 90) {
            var r = HTTPClientRequest(url: url)
            r.method = .GET
            return (try? await HTTPClient.shared.execute(r, timeout: .seconds(2))) != nil
        }
        if !up {
            Self.signal(pid, SIGKILL)
            throw FixtureError(description: "Firestore emulator did not answer on port \(port) within 90 s")
        }
    }

    /// `127.0.0.1:PORT`, as FIRESTORE_EMULATOR_HOST wants it.
    public var host: String { "127.0.0.1:\(port)" }
    /// The REST root of the default database's documents.
    public var base: String { "http://\(host)/v1/projects/\(projectID)/databases/(default)/documents" }

    /// Stops the emulator and its java child.
    public func stop() {
        Self.signal(pid, SIGTERM)
        for _ in 0..<50 {
            if kill(-pid, 0) != 0 { break }
            usleep(100_000)
        }
        Self.signal(pid, SIGKILL)
    }

    /// Signals the launcher's process group (java included), or only the launcher when it
    /// does not lead a group of its own.
    public static func signal(_ pid: Int32, _ sig: Int32) {
        if getpgid(pid) == pid { kill(-pid, sig) } else { kill(pid, sig) }
    }

    /// GET a path under the database's documents (typed JSON).
    public func get(_ path: String) async throws -> (status: Int, json: [String: Any]) {
        var r = HTTPClientRequest(url: "\(base)/\(path)")
        r.headers.add(name: "Authorization", value: "Bearer owner")
        let response = try await HTTPClient.shared.execute(r, timeout: .seconds(30))
        let body = try await response.body.collect(upTo: 64 << 20)
        let json = (try? JSONSerialization.jsonObject(with: Data(buffer: body))) as? [String: Any] ?? [:]
        return (Int(response.status.code), json)
    }

    /// A document's fields decoded to plain JSON (native Bool/Int64/Double/String), nil when absent.
    public func document(_ collection: String, _ name: String) async throws -> [String: Any]? {
        let (status, json) = try await get("\(collection)/\(name)")
        guard status == 200 else { return nil }
        return FirestoreEncoding.plain(["mapValue": ["fields": json["fields"] ?? [:]]]) as? [String: Any]
    }

    /// Names of all documents in a collection (paged).
    public func list(_ collection: String) async throws -> [String] {
        var names: [String] = []
        var token: String?
        repeat {
            var path = "\(collection)?pageSize=300&mask.fieldPaths=seq"
            if let token { path += "&pageToken=\(token)" }
            let (_, json) = try await get(path)
            for d in json["documents"] as? [[String: Any]] ?? [] {
                if let n = d["name"] as? String { names.append(String(n.split(separator: "/").last ?? "")) }
            }
            token = json["nextPageToken"] as? String
        } while token != nil
        return names
    }
}

/// A server fixture that could not start, with what it printed.
public struct FixtureError: Error, CustomStringConvertible {
    /// What went wrong.
    public var description: String
    /// Wraps a message.
    public init(description: String) { self.description = description }
}

/// A throwaway PostgreSQL 15 cluster: initdb into a temp dir owned by an unprivileged user
/// (tests run as root in CI), listening on 127.0.0.1 at a free port.
public final class PostgresServer: Sendable {
    /// Debian's PostgreSQL 15 server binaries.
    public static let bin = "/usr/lib/postgresql/15/bin"
    /// The loopback port it listens on.
    public let port: Int
    /// The cluster's scratch directory (data, socket, log).
    public let dir: String
    private let asUser: [String]

    /// Why PostgreSQL cannot run here, or nil when it can.
    public static var missing: String? {
        FileManager.default.isExecutableFile(atPath: "\(bin)/postgres") ? nil
            : "PostgreSQL 15 server not installed (\(bin)/postgres; Debian package postgresql-15)"
    }

    /// Creates the cluster (initdb, trust authentication, user postgres) and starts it.
    public init() throws {
        dir = temporaryDirectory("pg")
        port = freePort()
        asUser = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "nobody", "--"] : []
        if getuid() == 0 {
            chown(dir, 65534, 65534)
            chmod(dir, 0o700)
        }
        let initdb = try run(asUser.first ?? "\(Self.bin)/initdb",
                             Array(asUser.dropFirst()) + (asUser.isEmpty ? [] : ["\(Self.bin)/initdb"])
                                 + ["-D", "\(dir)/data", "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8"])
        guard initdb.status == 0 else { throw FixtureError(description: "initdb failed: \(initdb.output)") }
        try start()
    }

    /// Starts the postmaster as our own child. Not through pg_ctl: Foundation's Process
    /// notices a child's exit through a descriptor the daemon would inherit, so waiting for
    /// `pg_ctl start` never returns. Nor through a launcher that closes inherited descriptors:
    /// that closes Foundation's own watch socket too, Foundation takes the postmaster for
    /// exited and blocks its one watcher thread in waitpid for the postmaster's whole life, and
    /// no other child's exit is noticed after that (a whole pass sat idle, every test waiting
    /// in waitUntilExit). `Spawning` keeps other children's descriptors out of it instead.
    public func start() throws {
        let p = Process()
        let postgres = ["\(Self.bin)/postgres", "-D", "\(dir)/data", "-c", "listen_addresses=127.0.0.1", "-p", "\(port)",
                        "-k", dir, "-c", "fsync=off"]
        let command = asUser + postgres
        p.executableURL = URL(fileURLWithPath: command[0])
        p.arguments = Array(command.dropFirst())
        _ = FileManager.default.createFile(atPath: "\(dir)/log", contents: nil)
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(dir)/log"))
        try log.seekToEnd()
        p.standardOutput = log
        p.standardError = log
        p.standardInput = FileHandle.nullDevice
        try Spawning.run(p)
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if try run("\(Self.bin)/pg_isready", ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres"]).status == 0 { return }
            usleep(200_000)
        }
        let text = (try? String(contentsOfFile: "\(dir)/log", encoding: .utf8)) ?? ""
        throw FixtureError(description: "PostgreSQL did not start within 60 s: \(text.suffix(2000))")
    }

    /// Stops the postmaster: "fast" (SIGINT) or "immediate" (SIGQUIT, like a crash).
    public func stop(mode: String = "fast") {
        guard let text = try? String(contentsOfFile: "\(dir)/data/postmaster.pid", encoding: .utf8),
              let pid = text.split(separator: "\n").first.flatMap({ Int32($0) }) else { return }
        kill(pid, mode == "immediate" ? SIGQUIT : SIGINT)
        for _ in 0..<300 where kill(pid, 0) == 0 { usleep(100_000) }
        if kill(pid, 0) == 0 { kill(pid, SIGKILL) }
        usleep(200_000)
    }

    /// Stops the server at once and removes its directory.
    public func destroy() {
        stop(mode: "immediate")
        try? FileManager.default.removeItem(atPath: dir)
    }

    /// The sink configuration that reaches this server.
    public var configuration: PostgresSinkConfiguration {
        PostgresSinkConfiguration(endpoint: .tcp(host: "127.0.0.1", port: port), username: "postgres", database: "postgres",
                                  tls: .disable)
    }

    // The async forms below run the blocking work (initdb, waiting for the postmaster, psql)
    // on a thread of their own: called from a test they would otherwise hold one of the
    // cooperative pool's threads, of which a 2-core machine has two, for up to a minute, and
    // every other test of the pass would stall behind them (seen: in-memory tests taking 105 s).

    /// Creates and starts a cluster (`init()`) off the cooperative pool.
    public static func launch() async throws -> PostgresServer {
        try await onOwnThread { try PostgresServer() }
    }

    /// Starts the stopped postmaster again (`start()`) off the cooperative pool.
    public func restart() async throws {
        try await onOwnThread { try self.start() }
    }

    /// Stops the postmaster (`stop(mode:)`) off the cooperative pool.
    public func halt(mode: String = "fast") async {
        _ = try? await onOwnThread { self.stop(mode: mode) }
    }

    /// Runs SQL (`psql(_:database:)`) off the cooperative pool.
    @discardableResult
    public func query(_ sql: String, database: String = "postgres") async throws -> String {
        try await onOwnThread { try self.psql(sql, database: database) }
    }

    /// Runs SQL through psql as the superuser and returns the unaligned output.
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres") throws -> String {
        let psql = "/usr/lib/postgresql/15/bin/psql"
        let r = try run(psql, ["-h", "127.0.0.1", "-p", "\(port)", "-U", "postgres", "-d", database, "-At", "-v", "ON_ERROR_STOP=1",
                               "-c", sql])
        guard r.status == 0 else { throw FixtureError(description: "psql failed: \(r.output)") }
        return r.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

/// Runs `body` against a fresh Firestore emulator, stopped after. Where the emulator cannot run
/// here, says why and runs nothing: the suite's skip.
public func withFirestoreEmulator(_ body: (FirestoreEmulator) async throws -> Void) async throws {
    if let missing = FirestoreEmulator.missing {
        print("⚠️  SKIPPED Firestore emulator tests: \(missing)")
        return
    }
    let emulator = try await FirestoreEmulator()
    defer { emulator.stop() }
    try await body(emulator)
}

/// Runs `body` against a throwaway PostgreSQL cluster, destroyed after. Where PostgreSQL cannot
/// run here, says why and runs nothing: the suite's skip.
public func withPostgresServer(_ body: (PostgresServer) async throws -> Void) async throws {
    if let missing = PostgresServer.missing {
        print("⚠️  SKIPPED PostgreSQL tests: \(missing)")
        return
    }
    let pg = try await PostgresServer.launch()
    defer { pg.destroy() }
    try await body(pg)
}
