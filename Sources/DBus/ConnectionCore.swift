#if canImport(Glibc)
import Glibc
#endif
import Basics
import CDBus
import Synchronization

/// The engine behind ``DBusConnection``: owns the libdbus connection, its I/O thread, the
/// outstanding calls, the signal subscriptions and the exported objects.
///
/// State marked "I/O thread" is only touched from jobs and libdbus callbacks on that thread.
final class ConnectionCore: @unchecked Sendable {
    enum Target: Sendable {
        case system, session
        case address(String)
    }

    /// Where a subscription's signals go.
    enum SignalSink: Sendable {
        /// Decoded and handed to a stream's continuation (`yield`), consumed by a task;
        /// `finish` ends the stream.
        case stream(yield: @Sendable (DBusSignal) -> Void, finish: @Sendable ((any Error)?) -> Void)
        /// Called on the I/O thread during dispatch with the signal as read; `end` once when
        /// the connection goes (nil: closed by the user).
        case handler(@Sendable (borrowing DBusSignalView) -> Void, end: @Sendable ((any Error)?) -> Void)

        func finish(throwing error: (any Error)?) {
            switch self {
            case .stream(_, let finish): finish(error)
            case .handler(_, let end): end(error)
            }
        }
    }

    private struct Subscription {
        let rules: [DBusMatchRule]
        let sink: SignalSink
    }

    let loop: EventLoop
    let registry = ObjectRegistry()
    /// Calls to the exported objects, waiting for the handler loop.
    let incoming = IncomingCalls()
    private(set) var uniqueName = ""
    private(set) var canPassFileDescriptors = false
    private let connected = Atomic<Bool>(false)
    private let nextSubscriptionID = Atomic<UInt64>(1)

    /// The libdbus connection for senders on other threads; nil once shutting down, so no
    /// thread can use it after it is released.
    private let connectionLock = PlainLock()
    private var liveConnection: OpaquePointer?

    // I/O thread.
    /// In subscription order (ids only grow, so appending keeps it sorted).
    private var subscriptions: [(id: UInt64, subscription: Subscription)] = []
    private var trackedNames: [String: Int] = [:]
    private var nameOwners: [String: String] = [:]
    private var closedByUser = false
    private var disconnectSeen = false

    private init() throws { loop = try EventLoop() }

    var isConnected: Bool { connected.load(ordering: .acquiring) }

    /// Opens the connection on a new I/O thread; returns once registered on the bus.
    static func open(_ target: Target) async throws -> ConnectionCore {
        let core = try ConnectionCore()
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            do {
                try DetachedThread.start(name: "dbus-io") { core.threadMain(target, continuation) }
            } catch {
                continuation.resume(throwing: DBusError(name: DBusError.Name.failed, message: "\(error)"))
            }
        }
        return core
    }

    private func threadMain(_ target: Target, _ ready: CheckedContinuation<Void, any Error>) {
        var error = CDBus.DBusError()
        dbus_error_init(&error)
        defer { dbus_error_free(&error) }
        let opened: OpaquePointer?
        switch target {
        case .system: opened = dbus_bus_get_private(DBUS_BUS_SYSTEM, &error)
        case .session: opened = dbus_bus_get_private(DBUS_BUS_SESSION, &error)
        case .address(let address):
            opened = dbus_connection_open_private(address, &error)
            if let opened, dbus_error_is_set(&error) == 0, dbus_bus_register(opened, &error) == 0 {
                dbus_connection_close(opened)
                dbus_connection_unref(opened)
                ready.resume(throwing: Self.swiftError(&error, fallback: "cannot register on the bus at \(address)"))
                return
            }
        }
        guard let connection = opened else {
            ready.resume(throwing: Self.swiftError(&error, fallback: "cannot connect to the bus"))
            return
        }
        // The default would _exit() the whole gateway when the bus restarts.
        dbus_connection_set_exit_on_disconnect(connection, 0)
        uniqueName = dbus_bus_get_unique_name(connection).map { String(cString: $0) } ?? ""
        canPassFileDescriptors = dbus_connection_can_send_type(connection, CDBUS_TYPE_UNIX_FD) != 0
        loop.install(on: connection)
        dbus_connection_add_filter(connection, { _, message, data in
            guard let message, let data else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            return Unmanaged<ConnectionCore>.fromOpaque(data).takeUnretainedValue().filter(message)
        }, Unmanaged.passUnretained(self).toOpaque(), nil)
        connectionLock.lock()
        liveConnection = connection
        connectionLock.unlock()
        connected.store(true, ordering: .releasing)
        ready.resume()

        loop.run(connection: connection) { !disconnectSeen && dbus_connection_get_is_connected(connection) != 0 }
        shutDown(connection)
    }

    private static func swiftError(_ error: inout CDBus.DBusError, fallback: String) -> DBusError {
        guard dbus_error_is_set(&error) != 0 else { return DBusError(name: DBusError.Name.failed, message: fallback) }
        return DBusError(name: error.name.map { String(cString: $0) } ?? DBusError.Name.failed,
                         message: error.message.map { String(cString: $0) } ?? fallback)
    }

    /// Runs `body` with the connection unless it is shutting down. libdbus is thread-safe,
    /// so any thread may send; reading and dispatching stay on the I/O thread.
    private func withConnection<T>(_ body: (OpaquePointer) -> T) -> T? {
        connectionLock.lock()
        defer { connectionLock.unlock() }
        return liveConnection.map(body)
    }

    private func shutDown(_ connection: OpaquePointer) {
        connected.store(false, ordering: .releasing)
        connectionLock.lock()
        liveConnection = nil
        connectionLock.unlock()
        if dbus_connection_get_is_connected(connection) != 0 {
            dbus_connection_flush(connection)
            dbus_connection_close(connection)
        }
        while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
        loop.resumeReplies()
        loop.drainAfterStop(connection)
        while dbus_connection_dispatch(connection) == DBUS_DISPATCH_DATA_REMAINS {}
        loop.resumeReplies()
        for waiter in loop.calls.close() { waiter.finish(.failure(DBusError.disconnected())) }
        for entry in subscriptions {
            entry.subscription.sink.finish(throwing: closedByUser ? nil : DBusError.disconnected("the D-Bus connection was lost"))
        }
        subscriptions.removeAll()
        incoming.finish()
        dbus_connection_unref(connection)
    }

    // MARK: Jobs from any thread

    /// Closes the connection; outstanding calls fail with `Disconnected`, signal streams end.
    func close() {
        loop.enqueue { [self] _ in
            closedByUser = true
            loop.requestStop()
        }
    }

    /// Sends a message that expects no reply.
    func send(_ message: DBusMessage) throws {
        try send(message, copies: 1)
    }

    /// Sends `copies` separate copies of `message` under one hold of the connection, so they
    /// get consecutive serials with no other message of this connection between them.
    func send(_ message: DBusMessage, copies: Int) throws {
        let raws = try (0..<max(copies, 1)).map { _ in try MessageWriter.make(message) }
        defer { raws.forEach { dbus_message_unref($0) } }
        guard withConnection({ connection in raws.forEach { dbus_connection_send(connection, $0, nil) } }) != nil else {
            throw DBusError.disconnected()
        }
    }

    /// Sends a method call and waits for its reply, an error reply, the timeout, or
    /// cancellation of the calling task (unless `cancellable` is false: then only the first
    /// three, or the connection's end).
    func call(_ message: DBusMessage, timeout: Duration, cancellable: Bool = true) async throws -> DBusMessage {
        var message = message
        message.kind = .methodCall
        message.noReplyExpected = false
        let raw = RawMessage(pointer: try MessageWriter.make(message))
        let deadline = EventLoop.now() + Self.nanoseconds(timeout)
        let calls = loop.calls
        let waiter = ReplyWaiter(serial: calls.nextSerial())
        guard cancellable else {
            return try await withUnsafeThrowingContinuation { continuation in
                waiter.install(continuation)
                startCall(raw, deadline, waiter)
            }
        }
        return try await withTaskCancellationHandler {
            // Unchecked: the waiter's state resumes it exactly once (reply, error, timeout,
            // cancellation or disconnection, whichever is first); the check cost shows at
            // tens of thousands of calls a second.
            try await withUnsafeThrowingContinuation { continuation in
                waiter.install(continuation)
                startCall(raw, deadline, waiter)
            }
        } onCancel: {
            waiter.finish(.failure(CancellationError()))
            _ = calls.take(waiter.serial)
        }
    }

    /// Sends every message as a method call at once, in order, then waits for all their
    /// replies; each call's outcome in the same order. Cancellation ends every call that is
    /// still waiting.
    func callInOrder(_ messages: [DBusMessage], timeout: Duration) async -> [Result<DBusMessage, any Error>] {
        let deadline = EventLoop.now() + Self.nanoseconds(timeout)
        let calls = loop.calls
        let waiters = messages.map { _ in ReplyWaiter(serial: calls.nextSerial()) }
        let cancelAll: @Sendable () -> Void = {
            for waiter in waiters {
                waiter.finish(.failure(CancellationError()))
                _ = calls.take(waiter.serial)
            }
        }
        return await withTaskCancellationHandler {
            if Task.isCancelled { cancelAll() }
            // All sent from this thread before any reply is awaited: libdbus queues them in
            // this order, and the bus delivers one connection's messages in the order sent.
            for (message, waiter) in zip(messages, waiters) {
                var message = message
                message.kind = .methodCall
                message.noReplyExpected = false
                do {
                    startCall(RawMessage(pointer: try MessageWriter.make(message)), deadline, waiter)
                } catch {
                    waiter.finish(.failure(error))
                }
            }
            var results: [Result<DBusMessage, any Error>] = []
            for waiter in waiters {
                do {
                    results.append(.success(try await withUnsafeThrowingContinuation { waiter.install($0) }))
                } catch {
                    results.append(.failure(error))
                }
            }
            return results
        } onCancel: {
            cancelAll()
        }
    }

    /// A call's timeout in nanoseconds: at least 1 ms, as libdbus rounds, and far from overflow.
    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        let total = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        return UInt64(max(1e6, min(total.rounded(.up), 1e17)))
    }

    /// Registers the call, then sends it from the caller's thread (libdbus writes it at
    /// once); the I/O thread matches the reply by serial (see ``PendingCalls``).
    private func startCall(_ raw: RawMessage, _ deadline: UInt64, _ waiter: ReplyWaiter) {
        defer { dbus_message_unref(raw.pointer) }
        // Cancelled before it was sent: it never leaves.
        guard !waiter.isFinished else { return }
        // libdbus would drop such a message without a word, and the call would wait out its timeout.
        if dbus_message_contains_unix_fds(raw.pointer) != 0, !canPassFileDescriptors {
            waiter.finish(.failure(DBusError.disconnected("this connection cannot pass Unix file descriptors")))
            return
        }
        dbus_message_set_serial(raw.pointer, waiter.serial)
        switch loop.calls.register(waiter, deadline: deadline) {
        case .closed:
            waiter.finish(.failure(DBusError.disconnected()))
            return
        case .registered(let wakeLoop):
            if wakeLoop { loop.wake() }
        }
        let sent = withConnection { dbus_connection_send($0, raw.pointer, nil) != 0 }
        guard sent == true else {
            _ = loop.calls.take(waiter.serial)
            waiter.finish(.failure(sent == nil ? DBusError.disconnected()
                : DBusError(name: DBusError.Name.noMemory, message: "libdbus could not queue the call")))
            return
        }
        // Cancelled while being sent: its reply, if any, will find no call and be dropped.
        if waiter.isFinished { _ = loop.calls.take(waiter.serial) }
    }

    // MARK: Signals

    /// Registers a subscription locally, then with the bus (AddMatch), and returns once the
    /// bus has acknowledged it: signals sent after this returns are delivered. A signal that
    /// matches several of `rules` is delivered once, and all arrive in bus order.
    /// At most `backlogLimit` signals wait unread; one more ends the stream with
    /// ``DBusSignalBacklogFull`` (after the ones waiting).
    func subscribe(_ rules: [DBusMatchRule], backlogLimit: Int) async throws -> AsyncThrowingStream<DBusSignal, any Error> {
        try await subscribe(rules, backlogLimit: backlogLimit) { $0 }
    }

    /// The same, each signal mapped by `transform` as it is routed (nil: skipped), so a typed
    /// stream needs no task of its own between the connection and its reader.
    func subscribe<Value: Sendable>(_ rules: [DBusMatchRule], backlogLimit: Int = DBusConnection.signalBacklogLimit,
                                    transform: @escaping @Sendable (DBusSignal) -> Value?) async throws
        -> AsyncThrowingStream<Value, any Error>
    {
        let limit = max(1, backlogLimit)
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: Value.self, bufferingPolicy: .bufferingOldest(limit))
        let full = DBusSignalBacklogFull(limit: limit, rules: rules.map(\.description))
        let sink = SignalSink.stream(
            yield: { signal in
                guard let value = transform(signal) else { return }
                if case .dropped = continuation.yield(value) { continuation.finish(throwing: full) }
            },
            finish: { error in
                if let error { continuation.finish(throwing: error) } else { continuation.finish() }
            })
        let id = try await subscribe(rules, sink: sink)
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return stream
    }

    /// The same with any sink; returns the id for ``unsubscribe(_:)``.
    func subscribe(_ rules: [DBusMatchRule], sink: SignalSink) async throws -> UInt64 {
        guard !rules.isEmpty else { throw DBusValidationError(kind: "match rule list", value: "(empty)") }
        for rule in rules { try rule.validate() }
        let id = nextSubscriptionID.wrappingAdd(1, ordering: .relaxed).oldValue
        let wellKnown = Array(Set(rules.compactMap(\.wellKnownSender))).sorted()
        let added = loop.enqueue { [self] _ in
            subscriptions.append((id, Subscription(rules: rules, sink: sink)))
            for name in wellKnown { trackedNames[name, default: 0] += 1 }
        }
        guard added else { throw DBusError.disconnected() }
        do {
            for name in wellKnown {
                _ = try await busCall("AddMatch", [.string(Self.ownerRule(name).description)])
                let owner = try? await busCall("GetNameOwner", [.string(name)])
                let ownerName: String = if case .string(let unique)? = owner?.body.first { unique } else { "" }
                loop.enqueue { [self] _ in
                    // A NameOwnerChanged processed meanwhile is newer than this answer.
                    if trackedNames[name] != nil, nameOwners[name] == nil { nameOwners[name] = ownerName }
                }
            }
            for rule in rules { _ = try await busCall("AddMatch", [.string(rule.description)]) }
        } catch {
            unsubscribe(id)
            // A stream ends with the error; a handler's caller gets it thrown instead.
            if case .stream = sink { sink.finish(throwing: error) }
            throw error
        }
        return id
    }

    /// Removes a subscription locally and from the bus (any thread; nothing if already gone).
    func unsubscribe(_ id: UInt64) {
        loop.enqueue { [self] connection in
            guard let index = subscriptions.firstIndex(where: { $0.id == id }) else { return }
            let removed = subscriptions.remove(at: index).subscription
            for rule in removed.rules { sendBusCall(connection, "RemoveMatch", rule.description) }
            for name in Set(removed.rules.compactMap(\.wellKnownSender)) {
                trackedNames[name, default: 1] -= 1
                if trackedNames[name] == 0 {
                    trackedNames[name] = nil
                    nameOwners[name] = nil
                    sendBusCall(connection, "RemoveMatch", Self.ownerRule(name).description)
                }
            }
        }
    }

    private static func ownerRule(_ name: String) -> DBusMatchRule {
        DBusMatchRule(sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
                      member: "NameOwnerChanged", arguments: [0: name])
    }

    func busCall(_ member: String, _ arguments: [DBusValue]) async throws -> DBusMessage {
        try await call(.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                   interface: "org.freedesktop.DBus", member: member, body: arguments),
                       timeout: .seconds(25))
    }

    /// I/O thread: a bus call whose reply is not needed.
    private func sendBusCall(_ connection: OpaquePointer, _ member: String, _ argument: String) {
        var message = DBusMessage.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                             interface: "org.freedesktop.DBus", member: member, body: [.string(argument)])
        message.noReplyExpected = true
        guard let raw = try? MessageWriter.make(message) else { return }
        dbus_connection_send(connection, raw, nil)
        dbus_message_unref(raw)
    }

    // MARK: Incoming messages (I/O thread, from dispatch)

    private func filter(_ raw: OpaquePointer) -> DBusHandlerResult {
        switch dbus_message_get_type(raw) {
        case CDBUS_MESSAGE_TYPE_SIGNAL:
            if dbus_message_is_signal(raw, "org.freedesktop.DBus.Local", "Disconnected") != 0 {
                disconnectSeen = true
                return DBUS_HANDLER_RESULT_HANDLED
            }
            routeSignal(raw)
            // Handled: no libdbus object paths are registered (exported objects answer from
            // this filter), and its object-tree lookup would split the path into freshly
            // allocated components for every signal.
            return DBUS_HANDLER_RESULT_HANDLED
        case CDBUS_MESSAGE_TYPE_METHOD_RETURN, CDBUS_MESSAGE_TYPE_ERROR:
            guard let waiter = loop.calls.take(dbus_message_get_reply_serial(raw)) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            waiter.deliver(raw, loop: loop)
            return DBUS_HANDLER_RESULT_HANDLED
        case CDBUS_MESSAGE_TYPE_METHOD_CALL:
            guard let message = try? MessageReader.read(raw) else { return DBUS_HANDLER_RESULT_NOT_YET_HANDLED }
            incoming.accept(message, core: self)
            return DBUS_HANDLER_RESULT_HANDLED
        default:
            return DBUS_HANDLER_RESULT_NOT_YET_HANDLED
        }
    }

    private func routeSignal(_ raw: OpaquePointer) {
        guard !subscriptions.isEmpty else { return }
        let view = DBusSignalView(raw)
        if !trackedNames.isEmpty, view.senderIs("org.freedesktop.DBus"), view.memberIs("NameOwnerChanged"),
           case .string(let name)? = try? view.argument(0), trackedNames[name] != nil,
           case .string(let newOwner)? = try? view.argument(2)
        {
            nameOwners[name] = newOwner
        }
        // Decoded once, and only when a stream wants it: handlers read the view in place.
        var decoded: DBusSignal?
        for (_, subscription) in subscriptions {
            guard subscription.rules.contains(where: { rule in
                rule.matches(view, senderOwner: rule.wellKnownSender.flatMap { nameOwners[$0] })
            }) else { continue }
            switch subscription.sink {
            case .handler(let handler, _):
                handler(view)
            case .stream(let yield, _):
                if decoded == nil { decoded = try? view.signal() }
                if let decoded { yield(decoded) }
            }
        }
    }
}
