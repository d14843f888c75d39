import CDBus

/// Flags for ``DBusConnection/requestName(_:flags:)``.
public struct DBusNameFlags: OptionSet, Sendable, Hashable {
    public let rawValue: UInt32
    /// Flags from their libdbus bit values.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// Let another connection take the name with `replaceExisting`.
    public static let allowReplacement = DBusNameFlags(rawValue: CDBUS_NAME_FLAG_ALLOW_REPLACEMENT)
    /// Take the name from its owner if the owner allowed replacement.
    public static let replaceExisting = DBusNameFlags(rawValue: CDBUS_NAME_FLAG_REPLACE_EXISTING)
    /// Fail instead of waiting in the queue when the name is taken.
    public static let doNotQueue = DBusNameFlags(rawValue: CDBUS_NAME_FLAG_DO_NOT_QUEUE)
}

/// The bus's answer to RequestName.
public enum DBusRequestNameReply: UInt32, Sendable {
    case primaryOwner = 1, inQueue = 2, exists = 3, alreadyOwner = 4
}

/// The bus's answer to ReleaseName.
public enum DBusReleaseNameReply: UInt32, Sendable {
    case released = 1, nonExistent = 2, notOwner = 3
}

/// A private connection to a D-Bus bus, driven by its own I/O thread.
///
/// Everything is safe to use from any task. Method calls are `async` with an explicit
/// timeout; signals arrive as `AsyncThrowingStream`s; exported objects answer calls, in
/// arrival order, while ``serveCalls()`` runs. The connection never exits the process when
/// the bus goes away (libdbus's default): calls fail with ``DBusError/Name/disconnected``
/// and signal streams end with that error instead. Call ``close()`` when done; releasing the last reference also closes.
public final class DBusConnection: Sendable {
    let core: ConnectionCore

    private init(core: ConnectionCore) { self.core = core }

    /// Connects to the system bus (`DBUS_SYSTEM_BUS_ADDRESS` when set, else the standard
    /// socket).
    public static func system() async throws -> DBusConnection {
        DBusConnection(core: try await ConnectionCore.open(.system))
    }

    /// Connects to the session bus (`DBUS_SESSION_BUS_ADDRESS`).
    public static func session() async throws -> DBusConnection {
        DBusConnection(core: try await ConnectionCore.open(.session))
    }

    /// Connects to the bus at `address` (e.g. `unix:path=/run/x/bus`) and registers on it.
    public init(address: String) async throws {
        core = try await ConnectionCore.open(.address(address))
    }

    deinit { core.close() }

    /// This connection's unique bus name, e.g. `:1.42`.
    public var uniqueName: String { core.uniqueName }
    /// Whether the connection is still open.
    public var isConnected: Bool { core.isConnected }
    /// Whether Unix file descriptors can be passed (negotiated on Unix transports).
    public var canPassFileDescriptors: Bool { core.canPassFileDescriptors }

    /// Closes the connection. Outstanding calls fail with `Disconnected`; signal streams
    /// finish normally.
    public func close() { core.close() }

    /// The connection's I/O thread as a task executor. A task that mostly talks to this
    /// connection (many calls in flight, a fast signal stream) can prefer it, e.g.
    /// `Task(executorPreference: connection.executor) { ... }` or
    /// `group.addTask(executorPreference: connection.executor) { ... }`: its replies and
    /// signals then resume it on the thread that read them, with no hand-off to the
    /// cooperative pool, which costs more CPU than the D-Bus work itself. Such a task must
    /// not block (it would stall the connection); it may await anything. After the
    /// connection closes, tasks that prefer it run on the global executor.
    public var executor: any TaskExecutor { core.loop }

    // MARK: Names

    /// Requests a well-known name. With the default `.doNotQueue`, anything but
    /// `.primaryOwner`/`.alreadyOwner` means someone else holds it.
    @discardableResult
    public func requestName(_ name: String, flags: DBusNameFlags = [.doNotQueue]) async throws -> DBusRequestNameReply {
        try DBusNames.validateBusName(name)
        let reply = try await core.busCall("RequestName", [.string(name), .uint32(flags.rawValue)])
        let code = try reply.decode(UInt32.self)
        guard let result = DBusRequestNameReply(rawValue: code) else {
            throw DBusError(name: DBusError.Name.failed, message: "unknown RequestName reply \(code)")
        }
        return result
    }

    /// Releases a well-known name.
    @discardableResult
    public func releaseName(_ name: String) async throws -> DBusReleaseNameReply {
        try DBusNames.validateBusName(name)
        let reply = try await core.busCall("ReleaseName", [.string(name)])
        let code = try reply.decode(UInt32.self)
        guard let result = DBusReleaseNameReply(rawValue: code) else {
            throw DBusError(name: DBusError.Name.failed, message: "unknown ReleaseName reply \(code)")
        }
        return result
    }

    /// The unique name currently owning `name`, or nil when nobody owns it.
    public func nameOwner(_ name: String) async throws -> String? {
        do {
            return try await core.busCall("GetNameOwner", [.string(name)]).decode(String.self)
        } catch let error as DBusError where error.name == DBusError.Name.nameHasNoOwner {
            return nil
        }
    }

    // MARK: Calls

    /// Calls a method and returns the reply message.
    ///
    /// - Throws: ``DBusError`` for an error reply (with the peer's name and message),
    ///   `NoReply` when `timeout` passes or the peer leaves the bus, `Disconnected` when this
    ///   connection closes; `CancellationError` when the task is cancelled.
    public func call(destination: String?, path: DBusObjectPath, interface: String?, member: String,
                     arguments: [DBusValue] = [], timeout: Duration) async throws -> DBusMessage {
        try await core.call(.methodCall(destination: destination, path: path, interface: interface,
                                        member: member, body: arguments), timeout: timeout)
    }

    /// Calls a method and waits for its reply even when the calling task is cancelled: only
    /// the reply, an error reply, `timeout` or this connection's end finish it. For a call that
    /// must reach the peer whatever became of its caller, such as giving back what the peer
    /// holds for this connection before the connection leaves the bus (bluetoothd's acquired
    /// notification, GattLink.close()); a cancelled task's ``call(destination:path:interface:member:arguments:timeout:)``
    /// would not even be sent.
    public func callDespiteCancellation(destination: String?, path: DBusObjectPath, interface: String?, member: String,
                                        arguments: [DBusValue] = [], timeout: Duration) async throws -> DBusMessage {
        try await core.call(.methodCall(destination: destination, path: path, interface: interface,
                                        member: member, body: arguments), timeout: timeout, cancellable: false)
    }

    /// Calls a method described by a prepared message (see ``DBusMessage/methodCall(destination:path:interface:member:body:)``).
    public func call(_ message: DBusMessage, timeout: Duration) async throws -> DBusMessage {
        try await core.call(message, timeout: timeout)
    }

    /// Sends several method calls at once, in the order given, without waiting for one
    /// call's reply before sending the next, then waits for every reply: one round trip
    /// instead of one per call. The bus delivers one connection's messages in order, so a
    /// peer that handles its calls one after another (bluetoothd's main loop) handles these
    /// in this order too. Returns each call's outcome (as ``call(_:timeout:)`` would throw or
    /// return it) in the order given; `timeout` counts for each call from the start.
    public func callInOrder(_ messages: [DBusMessage], timeout: Duration) async -> [Result<DBusMessage, any Error>] {
        await core.callInOrder(messages, timeout: timeout)
    }

    /// Sends any message without waiting for a reply (a method call is flagged no-reply).
    public func send(_ message: DBusMessage) throws {
        var message = message
        if message.kind == .methodCall { message.noReplyExpected = true }
        if message.kind == .signal {
            try core.registry.sendSignal(message, core: core)
        } else {
            try core.send(message)
        }
    }

    // MARK: Signals

    /// Emits a signal. Signals emitted from one task leave in the order emitted.
    public func emit(path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue] = [],
                     destination: String? = nil) throws {
        try core.registry.sendSignal(.signal(path: path, interface: interface, member: member, body: arguments,
                                             destination: destination), core: core)
    }

    /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` for `path`.
    /// With `copies` > 1 the same signal goes out that many times back to back (consecutive
    /// serials, nothing else of this connection in between), as bluetoothd 5.66 announces one
    /// notification once per notify client.
    public func emitPropertiesChanged(path: DBusObjectPath, interface: String, changed: [String: DBusValue],
                                      invalidated: [String] = [], copies: Int = 1) throws {
        try core.registry.sendSignal(ObjectRegistry.propertiesChanged(path: path, interface: interface, changed: changed,
                                                                      invalidated: invalidated), copies: copies, core: core)
    }

    /// Subscribes to signals matching `rule`. Returns after the bus has installed the match,
    /// so every matching signal sent afterwards is delivered, in order. The stream ends when
    /// the connection closes (normally after ``close()``, with `Disconnected` when lost);
    /// dropping or cancelling the iteration removes the match. At most `backlogLimit` signals
    /// wait unread: one more ends the stream with ``DBusSignalBacklogFull`` (after the ones
    /// waiting), so a stuck reader neither loses a signal unnoticed nor holds memory without bound.
    public func signals(matching rule: DBusMatchRule, backlogLimit: Int = signalBacklogLimit) async throws
        -> AsyncThrowingStream<DBusSignal, any Error>
    {
        try await core.subscribe([rule], backlogLimit: backlogLimit)
    }

    /// How many signals a subscription's stream holds unread by default: far more than any
    /// burst a reader that keeps up sees (a BlueZ scan of hundreds of devices).
    public static let signalBacklogLimit = 16_384

    /// Calls `handler` for every signal matching any of `rules`, on the connection's I/O
    /// thread, as each is read, in bus order; returns after the bus has installed the
    /// matches. For fast streams (GATT notifications) where decoding whole messages, a
    /// stream element and a task resumption per signal would cost more than the signal:
    /// `handler` gets the signal as read (``DBusSignalView``: decode only what you need) and
    /// runs inside the connection's dispatch, so it must be quick and must not block or wait
    /// (hand work on, e.g. with ``schedule(after:_:)`` or into a stream of your own). `onEnd`
    /// is called once when the connection ends (nil after ``close()``, the error when it was
    /// lost), not after ``DBusSignalHandler/cancel()``.
    public func addSignalHandler(matchingAny rules: [DBusMatchRule],
                                 onEnd: @escaping @Sendable ((any Error)?) -> Void = { _ in },
                                 _ handler: @escaping @Sendable (borrowing DBusSignalView) -> Void) async throws
        -> DBusSignalHandler
    {
        let id = try await core.subscribe(rules, sink: .handler(handler, end: onEnd))
        return DBusSignalHandler(core: core, id: id)
    }

    /// Runs `job` on the connection's I/O thread once `delay` has passed (for signal
    /// handlers that hold work back, e.g. to hand on a group of signals at once). Scheduled
    /// from a handler, it costs no wake-up of its own while signals keep the thread awake.
    /// Jobs still waiting when the connection ends run then. Returns false (and never runs
    /// `job`) when the connection has already ended.
    @discardableResult
    public func schedule(after delay: Duration, _ job: @escaping @Sendable () -> Void) -> Bool {
        let (seconds, attoseconds) = delay.components
        let nanoseconds = UInt64(max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000))
        return core.loop.schedule(at: EventLoop.now() + nanoseconds) { _ in job() }
    }

    /// After reading everything waiting on the socket, leave it alone for `interval`, so a
    /// fast stream of small signals (e.g. GATT notifications via PropertiesChanged) is read
    /// and dispatched in groups instead of one wake-up per signal. Replies to calls on this
    /// connection are delayed by up to `interval` too, so enable it only on a connection
    /// that is mostly receiving. `.zero` (the default) reads as soon as data arrives.
    public func setReadCoalescing(_ interval: Duration) {
        let (seconds, attoseconds) = interval.components
        let nanoseconds = max(0, seconds) * 1_000_000_000 + max(0, attoseconds / 1_000_000_000)
        core.loop.setReadCoalescing(nanoseconds: UInt64(nanoseconds))
    }

    /// Signals matching any of `rules`, each delivered once, in the order the bus sent them.
    /// Several narrow rules (e.g. `arg0` per interface) let the bus drop what no rule wants
    /// before it is ever sent to this connection. `backlogLimit` as for ``signals(matching:backlogLimit:)``.
    public func signals(matchingAny rules: [DBusMatchRule], backlogLimit: Int = signalBacklogLimit) async throws
        -> AsyncThrowingStream<DBusSignal, any Error>
    {
        try await core.subscribe(rules, backlogLimit: backlogLimit)
    }

    // MARK: Exporting objects

    /// Handles the method calls to this connection's exported objects until the connection
    /// ends or the task is cancelled: one after another, in the order they arrived, as
    /// bluetoothd's main loop handles one connection's calls (a handler starts once the one
    /// before it has returned; answers that come later run beside, see ``DBusMethodResult``).
    /// Run it as a child task of the scope that owns the connection, once per connection;
    /// calls that arrive before it runs wait for it (up to a bound; past it a call gets
    /// `LimitsExceeded` at once), and calls that arrive after it ended get `Failed`.
    public func serveCalls() async throws {
        try await core.incoming.serve(core.registry, core: core)
    }

    /// Exports `object` at `path` (adding its interfaces to any already there). If an
    /// ObjectManager is registered above `path`, it emits InterfacesAdded.
    public func export(_ object: DBusExportedObject, at path: DBusObjectPath) async throws {
        // Property values are read first: the change and its signal then happen as one step.
        let value = try await ObjectRegistry.interfacesAndProperties(object.interfaces)
        try core.registry.add(object, at: path, core: core) { manager in
            .signal(path: manager, interface: DBusStandardInterface.objectManager, member: "InterfacesAdded",
                    body: [.objectPath(path), value])
        }
    }

    /// Removes the named interfaces (all when nil) from `path`. If an ObjectManager is
    /// registered above `path`, it emits InterfacesRemoved.
    public func unexport(_ path: DBusObjectPath, interfaces: [String]? = nil) throws {
        try core.registry.remove(at: path, interfaces: interfaces, core: core) { removed, manager in
            .signal(path: manager, interface: DBusStandardInterface.objectManager, member: "InterfacesRemoved",
                    body: [.objectPath(path), .array(element: .string, removed.map { .string($0) })])
        }
    }

    /// Serves `org.freedesktop.DBus.ObjectManager` at `path` for every object exported below
    /// it (BlueZ uses `/`).
    public func exportObjectManager(at path: DBusObjectPath) {
        core.registry.addManager(at: path)
    }

    /// Stops serving the ObjectManager at `path`.
    public func unexportObjectManager(at path: DBusObjectPath) {
        core.registry.removeManager(at: path)
    }
}

/// A signal handler installed with ``DBusConnection/addSignalHandler(matchingAny:onEnd:_:)``.
public final class DBusSignalHandler: Sendable {
    private let core: ConnectionCore
    private let id: UInt64

    init(core: ConnectionCore, id: UInt64) {
        self.core = core
        self.id = id
    }

    /// Removes the handler and its matches from the bus. A signal being dispatched may still
    /// reach the handler; none read afterwards does.
    public func cancel() { core.unsubscribe(id) }
}
