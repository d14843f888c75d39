import Basics
import Foundation
import Logging
import NIOCore
import NIOSSL
import PostgresNIO
import Recording

/// Where and how to reach PostgreSQL (or a PostgreSQL-wire database such as CockroachDB or
/// YugabyteDB, which accept the same statements).
public struct PostgresSinkConfiguration: Sendable {
    /// Transport encryption.
    public enum TLSMode: Sendable, Hashable {
        /// Plain TCP (loopback or a trusted network only).
        case disable
        /// TLS when the server offers it.
        case prefer
        /// TLS required, server certificate verified against the system trust store.
        case require
    }

    /// TCP host and port, or a Unix socket path.
    public enum Endpoint: Sendable, Hashable {
        case tcp(host: String, port: Int)
        case unixSocket(path: String)
    }

    public var endpoint: Endpoint
    public var username: String
    public var password: String?
    public var database: String
    public var tls: TLSMode
    /// Deadline, seconds, for opening a connection (TCP, TLS, startup and login). A server
    /// that accepts and then says nothing fails the attempt after this long.
    public var connectTimeout: Double
    /// Deadline, seconds, for each statement's answer. A statement past it is a transient
    /// failure that closes the connection (the next attempt reconnects), so a server that
    /// died without closing its sockets is noticed and retried with backoff.
    public var requestTimeout: Double

    /// A configuration; see the properties.
    public init(endpoint: Endpoint, username: String, password: String? = nil, database: String, tls: TLSMode = .prefer,
                connectTimeout: Double = 15, requestTimeout: Double = 60) {
        self.endpoint = endpoint
        self.username = username
        self.password = password
        self.database = database
        self.tls = tls
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
    }
}

/// Writes documents into the `records` and `realtime_data` tables (created by migration),
/// one transaction per batch, `INSERT … ON CONFLICT (name) DO NOTHING` so a replay is a
/// no-op; a revised records document updates its row when it is newer than the row's
/// (`revision`), so a replay of an older version never undoes a newer one. One connection,
/// opened on first use and reopened after a failure. Every call to the server has a deadline,
/// and cancelling the caller closes the connection, so a write never waits for a dead server
/// for longer than the configured timeouts.
public actor PostgresSink: Sink {
    public nonisolated var name: String { "postgresql" }
    public let configuration: PostgresSinkConfiguration
    private let logger: Logger
    private var connection: PostgresConnection?
    private var connectionCount = 0
    private nonisolated let prepared = EncodingCache()

    /// Migrations by version; each runs once in its own transaction.
    static let migrations: [(Int, [String])] = [
        (1, [
            """
            CREATE TABLE IF NOT EXISTS realtime_data (
                name text PRIMARY KEY,
                session_id text NOT NULL,
                board text NOT NULL,
                seq integer NOT NULL,
                schema_version integer NOT NULL,
                point_count integer NOT NULL,
                data jsonb NOT NULL,
                received_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            "CREATE INDEX IF NOT EXISTS realtime_data_session ON realtime_data (session_id, board, seq)",
            """
            CREATE TABLE IF NOT EXISTS records (
                name text PRIMARY KEY,
                user_id text NOT NULL,
                "timestamp" bigint NOT NULL,
                hazards jsonb NOT NULL,
                gscope_data jsonb NOT NULL,
                no_hazard boolean NOT NULL,
                schema_version integer NOT NULL,
                session_id text NOT NULL,
                boards jsonb NOT NULL,
                "start" bigint NOT NULL,
                "end" bigint NOT NULL,
                point_count integer NOT NULL,
                time_source text NOT NULL,
                received_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            "CREATE INDEX IF NOT EXISTS records_user_time ON records (user_id, \"timestamp\")",
        ]),
        // Records revised after their survey (issue 21): a revision replaces the row it
        // follows; rows written before keep 0 and NULL, like documents never revised.
        (2, [
            "ALTER TABLE records ADD COLUMN IF NOT EXISTS revision integer NOT NULL DEFAULT 0",
            "ALTER TABLE records ADD COLUMN IF NOT EXISTS revised_at bigint",
        ]),
    ]

    /// A sink for `configuration`; nothing is connected until the first write.
    public init(configuration: PostgresSinkConfiguration, logger: Logger = Logger(label: "mwgate.uplink.postgresql")) {
        self.configuration = configuration
        self.logger = logger
    }

    public func write(_ documents: [SinkDocument]) async throws(SinkError) {
        guard !documents.isEmpty else { return }
        let conn = try await connected()
        do {
            try await execute("BEGIN", on: conn)
            for doc in documents { try await insert(doc, on: conn) }
            try await execute("COMMIT", on: conn)
        } catch {
            let classified = Self.classify(error, documents: documents)
            if case .permanent = classified {
                try? await execute("ROLLBACK", on: conn)
            } else {
                // The connection's state is unknown (a COMMIT may or may not have landed);
                // the replay will be a no-op either way.
                try? await conn.close()
                connection = nil
            }
            throw classified
        }
    }

    /// Connects and runs the migrations now (otherwise the first write does).
    public func prepare() async throws(SinkError) {
        _ = try await connected()
    }

    /// Encodes the next documents' points JSON ahead, off the actor.
    public nonisolated func prepare(_ documents: [SinkDocument]) async {
        for case let .realtimeData(d) in documents where !d.revised {
            prepared.put(d.name, Self.pointsJSONWriter(d))
        }
    }

    static func pointsJSONWriter(_ d: RealtimeDataDocument) -> [UInt8] {
        var out = JSONWriter(capacity: d.points.count * 240)
        out.plainPoints(d.points)
        return out.bytes
    }

    public func close() async {
        try? await connection?.close()
        connection = nil
    }

    /// Starts closing the socket, from a deadline or a cancellation handler, which cannot
    /// wait: closing fails the statement in flight at once. Whoever then gives the
    /// connection up awaits `close()`, which completes locally (it never waits for the server).
    private static func interrupt(_ conn: PostgresConnection) {
        let _: EventLoopFuture<Void> = conn.close()
    }

    /// Runs one statement within ``PostgresSinkConfiguration/requestTimeout``; past it, or
    /// when the caller is cancelled, the connection is closed, which ends the statement
    /// (PostgresNIO's `query` does not react to cancellation itself).
    func execute(_ query: PostgresQuery, on conn: PostgresConnection) async throws {
        _ = try await rows(query, on: conn) { _ in () }
    }

    /// ``execute(_:on:)`` for a statement whose rows are read, with `decode` reading them.
    private func rows<T: Sendable>(_ query: PostgresQuery, on conn: PostgresConnection,
                                   _ decode: @escaping @Sendable (PostgresRowSequence) async throws -> T) async throws -> T {
        let logger = logger
        return try await withDeadline(.milliseconds(Int64(configuration.requestTimeout * 1000)), operation: "PostgreSQL statement",
                                      interrupt: { Self.interrupt(conn) }) {
            // On the connection's event loop (see EventLoopExecutor): a connection found open
            // here is still open when `query` writes the statement, so the statement gets an
            // answer or fails with the connection.
            try await withTaskExecutorPreference(EventLoopExecutor(conn.eventLoop)) {
                guard !conn.isClosed else { throw ConnectionClosed() }
                return try await decode(try await conn.query(query, logger: logger))
            }
        }
    }

    /// A statement found its connection already closed (by the server, between statements).
    struct ConnectionClosed: Error, CustomStringConvertible {
        var description: String { "the server closed the connection" }
    }

    /// Connections opened so far (tests check reconnection).
    public var connectionsOpened: Int { connectionCount }

    private func insert(_ doc: SinkDocument, on conn: PostgresConnection) async throws {
        switch doc {
        case let .realtimeData(d):
            // A revised chunk (its gap marks corrected) replaces the row; its earlier version may
            // have been prepared under the same name.
            let data = String(decoding: (d.revised ? nil : prepared.take(d.name)) ?? Self.pointsJSONWriter(d), as: UTF8.self)
            let onConflict = d.revised ? "DO UPDATE SET point_count = excluded.point_count, data = excluded.data" : "DO NOTHING"
            try await execute("""
                INSERT INTO realtime_data (name, session_id, board, seq, schema_version, point_count, data)
                VALUES (\(d.name), \(d.sessionID), \(d.board), \(d.seq), \(Int(RealtimeDataDocument.schemaVersion)),
                        \(d.points.count), \(data)::jsonb)
                ON CONFLICT (name) \(unescaped: onConflict)
                """, on: conn)
        case let .records(r):
            let hazards = FirestoreValue.map(r.survey.hazards.sorted { $0.key < $1.key }.map { ($0.key, .integer(Int64($0.value))) }).jsonText
            let gscope = FirestoreValue.array(r.gscopeData.map { .string($0) }).jsonText
            let boards = FirestoreValue.array(r.boards.map { .string($0) }).jsonText
            try await execute("""
                INSERT INTO records (name, user_id, "timestamp", hazards, gscope_data, no_hazard, schema_version, session_id,
                                     boards, "start", "end", point_count, time_source, revision, revised_at)
                VALUES (\(r.name), \(r.userID), \(r.timestamp), \(hazards)::jsonb, \(gscope)::jsonb, \(r.survey == .noHazard),
                        \(Int(RealtimeDataDocument.schemaVersion)), \(r.sessionID), \(boards)::jsonb, \(r.start), \(r.end),
                        \(r.pointCount), \(r.timeSource.rawValue), \(r.revision), \(r.revisedAt))
                ON CONFLICT (name) DO UPDATE SET gscope_data = excluded.gscope_data, boards = excluded.boards,
                    "end" = excluded."end", point_count = excluded.point_count, time_source = excluded.time_source,
                    revision = excluded.revision, revised_at = excluded.revised_at
                WHERE records.revision < excluded.revision
                """, on: conn)
        }
    }

    func connected() async throws(SinkError) -> PostgresConnection {
        if let connection, !connection.isClosed { return connection }
        connection = nil
        let conn: PostgresConnection
        do {
            var settings = try pgConfiguration()
            let limit = Duration.milliseconds(Int64(configuration.connectTimeout * 1000))
            // PostgresNIO's own limit (TCP connect to login) stays as a backstop; ours fires
            // first and gives the clear error.
            settings.options.connectTimeout = .milliseconds(Int64(configuration.connectTimeout * 2000))
            let (id, logger) = (connectionCount, logger)
            // Cancelling PostgresNIO's connect closes its socket, in every phase up to login.
            conn = try await withDeadline(limit, operation: "PostgreSQL connect and login", interrupt: {}) { [settings] in
                try await PostgresConnection.connect(configuration: settings, id: id, logger: logger)
            }
        } catch {
            throw .transient(reason: "cannot connect to PostgreSQL: \(Self.describe(error))", retryAfter: nil)
        }
        connectionCount += 1
        do {
            try await migrate(conn)
        } catch {
            try? await conn.close()
            throw .transient(reason: "PostgreSQL migration failed: \(Self.describe(error))", retryAfter: nil)
        }
        connection = conn
        return conn
    }

    private func pgConfiguration() throws -> PostgresConnection.Configuration {
        switch configuration.endpoint {
        case let .unixSocket(path):
            return .init(unixSocketPath: path, username: configuration.username, password: configuration.password,
                         database: configuration.database)
        case let .tcp(host, port):
            let tls: PostgresConnection.Configuration.TLS
            switch configuration.tls {
            case .disable: tls = .disable
            case .prefer: tls = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require: tls = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
            return .init(host: host, port: port, username: configuration.username, password: configuration.password,
                         database: configuration.database, tls: tls)
        }
    }

    private func migrate(_ conn: PostgresConnection) async throws {
        try await execute("""
            CREATE TABLE IF NOT EXISTS mwgate_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())
            """, on: conn)
        let applied = try await rows("SELECT version FROM mwgate_migrations", on: conn) { rows in
            var versions = Set<Int>()
            for try await version in rows.decode(Int.self) { versions.insert(version) }
            return versions
        }
        for (version, statements) in Self.migrations where !applied.contains(version) {
            try await execute("BEGIN", on: conn)
            do {
                for statement in statements { try await execute(PostgresQuery(unsafeSQL: statement), on: conn) }
                try await execute("INSERT INTO mwgate_migrations (version) VALUES (\(version)) ON CONFLICT DO NOTHING", on: conn)
                try await execute("COMMIT", on: conn)
            } catch {
                try? await execute("ROLLBACK", on: conn)
                throw error
            }
            logger.notice("PostgreSQL migration applied", metadata: ["version": "\(version)"])
        }
    }

    /// Data and schema errors (SQLSTATE classes 22, 23, 42, 0A) are permanent; everything
    /// else (connection loss, serialization failures, insufficient resources, shutdown) is
    /// transient.
    static func classify(_ error: any Error, documents: [SinkDocument]) -> SinkError {
        let what = documents.count == 1 ? "\(documents[0].collection)/\(documents[0].name)" : "batch of \(documents.count) documents"
        if let e = error as? PSQLError, let state = e.serverInfo?[.sqlState] {
            let reason = "\(what): SQLSTATE \(state): \(e.serverInfo?[.message] ?? "")"
            if ["22", "23", "42", "0A"].contains(String(state.prefix(2))) { return .permanent(reason: reason) }
            return .transient(reason: reason, retryAfter: nil)
        }
        return .transient(reason: "\(what): \(describe(error))", retryAfter: nil)
    }

    static func describe(_ error: any Error) -> String {
        if let e = error as? PSQLError {
            if let message = e.serverInfo?[.message] { return "\(e.code): \(message)" }
            return "\(e.code)"
        }
        return "\(error)"
    }
}
