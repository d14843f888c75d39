import Foundation
import Synchronization
import NIOCore
import NIOPosix
import Testing
import UpstreamFixtures
@testable import Buffer
@testable import Uplink

/// A PostgreSQL server that stops answering, as one does when its host hangs or a network
/// drops packets without resetting connections: the uploader must notice within its
/// deadlines and stop at once when cancelled.
@Suite("PostgreSQL: a server that goes silent", .timeLimit(.minutes(2)))
struct PostgresDeadServerTests {
    @Test("a server that accepts and never answers the login: the write fails as transient within connectTimeout")
    func silentLogin() async throws {
        let server = try await SilentPostgresServer(.silentLogin)
        defer { server.stop() }
        let sink = PostgresSink(configuration: server.configuration(connectTimeout: 1, requestTimeout: 1))
        let error = await #expect(throws: SinkError.self) { try await sink.prepare() }
        guard case let .transient(reason, _)? = error else { Issue.record("not transient: \(String(describing: error))"); return }
        #expect(reason == "cannot connect to PostgreSQL: PostgreSQL connect and login got no answer within 1 s", "\(reason)")
        #expect(server.connections >= 1)
    }

    @Test("a server that logs in and then never answers a statement: each attempt fails within requestTimeout and reconnects")
    func silentAfterLogin() async throws {
        let server = try await SilentPostgresServer(.silentAfterLogin)
        defer { server.stop() }
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try storeWithOneSession(dir)
        let sink = PostgresSink(configuration: server.configuration(connectTimeout: 1, requestTimeout: 1))
        let service = SyncService(store: store, sink: sink,
                                  configuration: SyncConfiguration(backoff: Backoff(base: 0.05, cap: 0.2), idlePollInterval: 0.2))
        #expect(try await cancel(service, once: { await service.status.retries >= 2 }))
        let status = await service.status
        #expect(status.lastError?.contains("PostgreSQL statement got no answer within 1 s") == true, "\(status.summary)")
        #expect(status.sent == 0 && status.activity == .stopped, "\(status.summary)")
        // Every timed-out attempt gave its connection up; the next one logged in afresh.
        #expect(await sink.connectionsOpened >= 2 && server.connections >= 2)
        #expect(try store.backlogStats().count == 3)
    }

    @Test("cancelled while a statement waits for a silent server: run returns at once, nothing is marked sent")
    func cancelWhileWaiting() async throws {
        let server = try await SilentPostgresServer(.silentAfterLogin)
        defer { server.stop() }
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try storeWithOneSession(dir)
        // Deadlines far beyond the test's time limit: only cancellation can end the wait.
        let sink = PostgresSink(configuration: server.configuration(connectTimeout: 600, requestTimeout: 600))
        let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(idlePollInterval: 0.2))
        #expect(try await cancel(service, once: { server.statementsReceived }))
        let status = await service.status
        #expect(status.activity == .stopped && status.sent == 0, "\(status.summary)")
        let stats = try store.backlogStats()
        #expect(stats.count == 3 && stats.inFlight == 0, "\(stats)")
    }

    @Test("a server that answers a statement and then closes the connection: the next statement fails at once, it does not wait forever")
    func closedBetweenStatements() async throws {
        let server = try await SilentPostgresServer(.answersOneStatementThenCloses)
        defer { server.stop() }
        // Deadlines far beyond the test's time limit: only the driver noticing the closed
        // connection can end the attempt. (Here the next statement usually reaches the driver
        // before the close does; the other order is `statementAfterTheDriverLetGo`.)
        let sink = PostgresSink(configuration: server.configuration(connectTimeout: 600, requestTimeout: 600))
        let error = await #expect(throws: SinkError.self) { try await sink.prepare() }
        guard case let .transient(reason, _)? = error else { Issue.record("not transient: \(String(describing: error))"); return }
        #expect(reason.hasPrefix("PostgreSQL migration failed: "), "\(reason)")
        #expect(server.connections == 1)
    }

    @Test("a connection the server closed while no statement was on it: the next statement fails at once as transient, run() still returns on cancel")
    func statementAfterTheDriverLetGo() async throws {
        // The restart-mid-drain hang of PostgresTests: a server stopped between two statements
        // of a write (BEGIN answered, INSERT not yet written). PostgresNIO takes the socket's
        // end, closes the channel and removes its handlers; a statement written from another
        // thread after that reaches no handler and its answer is never given, so the write
        // waited forever, deaf to its deadline (closing a closed connection does nothing) and to
        // cancellation. Here the statement is written exactly then.
        let server = try await SilentPostgresServer(.answersStatements)
        defer { server.stop() }
        let sink = PostgresSink(configuration: server.configuration(connectTimeout: 5, requestTimeout: 5))
        let conn = try await sink.connected()
        server.dropConnections()
        try await conn.closeFuture.get()
        let error = await #expect(throws: (any Error).self) { try await sink.execute("BEGIN", on: conn) }
        #expect(error.map { "\($0)" } == "the server closed the connection", "\(String(describing: error))")
        // Through the service: the next attempt reconnects and is answered.
        let dir = temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let store = try storeWithOneSession(dir)
        let service = SyncService(store: store, sink: sink, configuration: SyncConfiguration(idlePollInterval: 0.2))
        #expect(try await cancel(service, once: { (try? store.backlogStats().count) == 0 }))
        #expect(server.connections == 2)
        await sink.close()
    }
}

/// A buffer holding one session of two chunks and its records document: 3 documents.
private func storeWithOneSession(_ dir: String) throws -> BufferStore {
    let store = try openStore(dir)
    try fillStore(store, sessions: 1, chunks: 2, size: 10)
    return store
}

/// Runs `service` until `condition` holds (false if it never does within 60 s), then
/// cancels it and waits for `run()` to return.
private func cancel(_ service: SyncService, once condition: () async -> Bool) async throws -> Bool {
    try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await service.run() }
        let held = await eventually(timeout: 60, condition)
        group.cancelAll()
        try await group.waitForAll()
        return held
    }
}

/// A loopback TCP server speaking just enough of the PostgreSQL protocol (trust
/// authentication; every statement answered as one that returns no rows) to misbehave in
/// one of the ways of ``Behaviour``.
final class SilentPostgresServer: Sendable {
    /// What the server does with a connection.
    enum Behaviour: Sendable {
        /// Reads the startup message and never answers.
        case silentLogin
        /// Logs the client in, then reads everything and never answers again.
        case silentAfterLogin
        /// Logs in, answers the first statement and closes the connection, as a server that
        /// restarts between two statements.
        case answersOneStatementThenCloses
        /// Logs in and answers every statement (``dropConnections()`` ends them).
        case answersStatements
    }

    let port: Int
    private let channel: any Channel
    private let seen = SilentServerLog()

    init(_ behaviour: Behaviour) async throws {
        let seen = seen
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                seen.state.withLock { $0.connections += 1 }
                seen.open.withLock { $0.append(channel) }
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(SilentHandler(behaviour: behaviour, seen: seen))
                }
            }
        channel = try await bootstrap.bind(host: "127.0.0.1", port: 0).get()
        port = channel.localAddress?.port ?? 0
    }

    /// Connections accepted so far.
    var connections: Int { seen.state.withLock { $0.connections } }
    /// True once a client sent anything after logging in.
    var statementsReceived: Bool { seen.state.withLock { $0.statements } }

    func configuration(connectTimeout: Double, requestTimeout: Double) -> PostgresSinkConfiguration {
        PostgresSinkConfiguration(endpoint: .tcp(host: "127.0.0.1", port: port), username: "postgres", database: "postgres",
                                  tls: .disable, connectTimeout: connectTimeout, requestTimeout: requestTimeout)
    }

    func stop() { channel.close(promise: nil) }

    /// Closes every connection accepted so far, as a server that stops does.
    func dropConnections() {
        for connection in seen.open.withLock({ $0 }) { connection.close(promise: nil) }
    }
}

/// What the silent server has seen, shared by its connections.
final class SilentServerLog: Sendable {
    let state = Mutex((connections: 0, statements: false))
    let open = Mutex<[any Channel]>([])
}

/// One connection of the silent server (used on its event loop only).
private final class SilentHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer
    private let behaviour: SilentPostgresServer.Behaviour
    private let seen: SilentServerLog
    private var loggedIn = false

    init(behaviour: SilentPostgresServer.Behaviour, seen: SilentServerLog) {
        self.behaviour = behaviour
        self.seen = seen
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if behaviour == .silentLogin { return }
        if loggedIn {
            seen.state.withLock { $0.statements = true }
            switch behaviour {
            case .answersOneStatementThenCloses: answerWithoutRows(context: context, thenClose: true)
            case .answersStatements: answerWithoutRows(context: context, thenClose: false)
            case .silentLogin, .silentAfterLogin: break
            }
            return
        }
        loggedIn = true
        // AuthenticationOk, BackendKeyData, ReadyForQuery (idle).
        var reply = context.channel.allocator.buffer(capacity: 32)
        reply.writeInteger(UInt8(ascii: "R")); reply.writeInteger(Int32(8)); reply.writeInteger(Int32(0))
        reply.writeInteger(UInt8(ascii: "K")); reply.writeInteger(Int32(12)); reply.writeInteger(Int32(4242)); reply.writeInteger(Int32(1))
        reply.writeInteger(UInt8(ascii: "Z")); reply.writeInteger(Int32(5)); reply.writeInteger(UInt8(ascii: "I"))
        context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
    }

    /// Answers the client's Parse/Describe/Bind/Execute/Sync as a statement that returns no
    /// rows (ParseComplete, ParameterDescription of none, NoData, BindComplete,
    /// CommandComplete, ReadyForQuery), then closes the connection if told to.
    private func answerWithoutRows(context: ChannelHandlerContext, thenClose: Bool) {
        var reply = context.channel.allocator.buffer(capacity: 64)
        reply.writeInteger(UInt8(ascii: "1")); reply.writeInteger(Int32(4))
        reply.writeInteger(UInt8(ascii: "t")); reply.writeInteger(Int32(6)); reply.writeInteger(Int16(0))
        reply.writeInteger(UInt8(ascii: "n")); reply.writeInteger(Int32(4))
        reply.writeInteger(UInt8(ascii: "2")); reply.writeInteger(Int32(4))
        let tag = "CREATE TABLE"
        reply.writeInteger(UInt8(ascii: "C")); reply.writeInteger(Int32(4 + tag.utf8.count + 1))
        reply.writeString(tag); reply.writeInteger(UInt8(0))
        reply.writeInteger(UInt8(ascii: "Z")); reply.writeInteger(Int32(5)); reply.writeInteger(UInt8(ascii: "I"))
        context.writeAndFlush(wrapOutboundOut(reply), promise: nil)
        if thenClose { context.close(promise: nil) }
    }
}
