import Synchronization

/// The exported objects of one connection and the dispatcher for incoming method calls:
/// user interfaces plus Introspectable, Properties and the ObjectManager server.
///
/// Calls are handled one after another in arrival order by the connection's handler loop
/// (``IncomingCalls``), never on the I/O thread; a handler that answers later
/// (``DBusMethodResult/later(_:)``) does not hold the calls after it.
final class ObjectRegistry: Sendable {
    private struct State {
        var objects: [DBusObjectPath: DBusExportedObject] = [:]
        var managers: Set<DBusObjectPath> = []
        /// GetManagedObjects snapshots being built (see ``sendManagedObjectsReply(to:under:core:)``).
        var snapshotsBuilding = 0
        /// Signals sent while a snapshot was being built, in order: they go out after its reply.
        var heldSignals: [(message: DBusMessage, copies: Int)] = []
    }

    private let state = Mutex(State())

    static let managedObjectsType = DBusType.dictionary(
        key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)))

    // MARK: Registration

    /// Adds `object`'s interfaces at `path` (merging with interfaces already there). When an
    /// ObjectManager is registered above `path`, the signal `announcement` makes for that root
    /// (InterfacesAdded) is sent with the change, under the lock (``sendSignal(_:copies:core:)``).
    func add(_ object: DBusExportedObject, at path: DBusObjectPath, core: ConnectionCore,
             announcement: (_ manager: DBusObjectPath) -> DBusMessage) throws {
        for interface in object.interfaces {
            try DBusNames.validateInterface(interface.name)
            for method in interface.methods { try DBusNames.validateMember(method.name) }
            for property in interface.properties { try DBusNames.validateMember(property.name) }
            for signal in interface.signals { try DBusNames.validateMember(signal.name) }
        }
        try state.withLock { state throws in
            var merged = state.objects[path] ?? DBusExportedObject(interfaces: [])
            for interface in object.interfaces {
                guard merged.interface(interface.name) == nil else {
                    throw DBusError(name: DBusError.Name.failed,
                                    message: "interface \(interface.name) is already exported at \(path)")
                }
                merged.interfaces.append(interface)
            }
            state.objects[path] = merged
            if let manager = Self.manager(for: path, in: state.managers) {
                try Self.send(announcement(manager), copies: 1, in: &state, core: core)
            }
        }
    }

    /// Removes the named interfaces (all when nil) at `path`; the signal `announcement` makes
    /// (InterfacesRemoved: removed names, ObjectManager root) is sent as in ``add``.
    func remove(at path: DBusObjectPath, interfaces names: [String]?, core: ConnectionCore,
                announcement: (_ removed: [String], _ manager: DBusObjectPath) -> DBusMessage) throws {
        try state.withLock { state throws in
            guard var object = state.objects[path] else { return }
            let removed = object.interfaces.map(\.name).filter { names?.contains($0) ?? true }
            guard !removed.isEmpty else { return }
            object.interfaces.removeAll { removed.contains($0.name) }
            state.objects[path] = object.interfaces.isEmpty ? nil : object
            if let manager = Self.manager(for: path, in: state.managers) {
                try Self.send(announcement(removed, manager), copies: 1, in: &state, core: core)
            }
        }
    }

    /// Sends a signal of this connection (`copies` times back to back), or, while a
    /// GetManagedObjects snapshot is being built, keeps it to go out right after that reply.
    ///
    /// Every signal takes this way, so signals keep their order among themselves, and a
    /// client can take the snapshot as holding every change announced before the reply
    /// (``sendManagedObjectsReply(to:under:core:)``).
    func sendSignal(_ signal: DBusMessage, copies: Int = 1, core: ConnectionCore) throws {
        try state.withLock { state throws in try Self.send(signal, copies: copies, in: &state, core: core) }
    }

    private static func send(_ signal: DBusMessage, copies: Int, in state: inout State, core: ConnectionCore) throws {
        if state.snapshotsBuilding > 0 {
            state.heldSignals.append((signal, copies))
        } else {
            try core.send(signal, copies: copies)
        }
    }

    func addManager(at path: DBusObjectPath) { _ = state.withLock { $0.managers.insert(path) } }
    func removeManager(at path: DBusObjectPath) { _ = state.withLock { $0.managers.remove(path) } }

    private static func manager(for path: DBusObjectPath, in managers: Set<DBusObjectPath>) -> DBusObjectPath? {
        managers.filter { path.isDescendant(of: $0, includingSelf: false) }.max { $0.rawValue.count < $1.rawValue.count }
    }

    /// Sends the GetManagedObjects reply for the tree below `root`.
    ///
    /// A client takes the snapshot as holding every change whose signal the service sent
    /// before the reply, and applies only the signals after it (BlueZ's single-threaded loop
    /// makes that true). Here property values are read asynchronously while other tasks go on
    /// changing the tree, so the objects are taken and the signals held in one step, the
    /// values read, and the reply sent before the signals held meanwhile: a change made during
    /// the build is announced after the reply whether or not the snapshot already shows it,
    /// and announcing a value twice changes nothing. (Rebuilding until nothing changed, as
    /// before, sent a stale snapshot under steady churn: a client then lost the changes made
    /// during the last build.) Signals wait only as long as the build's property reads.
    func sendManagedObjectsReply(to call: DBusMessage, under root: DBusObjectPath, core: ConnectionCore) async {
        let objects = state.withLock { state in
            state.snapshotsBuilding += 1
            return state.objects.filter { $0.key.isDescendant(of: root, includingSelf: false) }
        }
        var reply: DBusMessage
        do {
            try call.expect(signature: .empty)
            reply = Self.returnReply([try await Self.managedObjects(objects)])
        } catch {
            reply = Self.errorReply(Self.dbusError(from: error))
        }
        reply.destination = call.sender
        reply.replySerial = call.serial
        state.withLock { state in
            try? core.send(reply)
            state.snapshotsBuilding -= 1
            guard state.snapshotsBuilding == 0 else { return }
            // A signal the connection cannot send now has nobody left to reach.
            for held in state.heldSignals { try? core.send(held.message, copies: held.copies) }
            state.heldSignals.removeAll()
        }
    }

    /// The ObjectManager's view of `objects`: `a{oa{sa{sv}}}`.
    static func managedObjects(_ objects: [DBusObjectPath: DBusExportedObject]) async throws -> DBusValue {
        var entries: [DBusDictionaryEntry] = []
        for (path, object) in objects.sorted(by: { $0.key < $1.key }) {
            entries.append(DBusDictionaryEntry(key: .objectPath(path), value: try await Self.interfacesAndProperties(object.interfaces)))
        }
        return .dictionary(key: .objectPath, value: .dictionary(key: .string, value: .dictionary(key: .string, value: .variant)), entries)
    }

    /// `a{sa{sv}}` for InterfacesAdded and GetManagedObjects. The standard interfaces are
    /// left out (as GDBus does), so InterfacesAdded, InterfacesRemoved and the snapshot agree.
    static func interfacesAndProperties(_ interfaces: [DBusInterface]) async throws -> DBusValue {
        var entries: [DBusDictionaryEntry] = []
        for interface in interfaces {
            entries.append(DBusDictionaryEntry(key: .string(interface.name), value: try await DBusExportedObject.propertyValues(interface)))
        }
        return .dictionary(key: .string, value: .dictionary(key: .string, value: .variant), entries)
    }

    // MARK: Dispatch

    /// Handler loop (``IncomingCalls/serve(_:core:)``): handles `call` as far as its handler
    /// does before answering (the part that keeps the calls' order) and sends an answer that
    /// is ready; returns what is left (an answer that comes later, work after the answer) for
    /// the loop to run beside the calls that follow.
    func begin(_ call: DBusMessage, received: ContinuousClock.Instant, core: ConnectionCore) async
        -> (@Sendable () async -> Void)?
    {
        let path = call.path ?? .root
        if call.member == "GetManagedObjects",
           call.interface == nil || call.interface == DBusStandardInterface.objectManager,
           state.withLock({ $0.managers.contains(path) }) {
            await sendManagedObjectsReply(to: call, under: path, core: core)
            return nil
        }
        let result: DBusMethodResult
        do {
            result = try await dispatch(DBusMethodCall(message: call, received: received), core: core)
        } catch {
            Self.send(Self.errorReply(Self.dbusError(from: error)), answering: call, core: core)
            return nil
        }
        let followUp = result.followUp
        switch result.answer {
        case .values(let values):
            Self.send(Self.returnReply(values), answering: call, core: core)
            return followUp
        case .later(let work):
            return {
                let reply: DBusMessage
                do {
                    reply = Self.returnReply(try await work())
                } catch {
                    reply = Self.errorReply(Self.dbusError(from: error))
                }
                Self.send(reply, answering: call, core: core)
                await followUp?()
            }
        }
    }

    /// Sends `reply` to `call` unless the caller asked for none.
    static func send(_ reply: DBusMessage, answering call: DBusMessage, core: ConnectionCore) {
        guard !call.noReplyExpected else { return }
        func addressed(_ reply: DBusMessage) -> DBusMessage {
            var reply = reply
            reply.destination = call.sender
            reply.replySerial = call.serial
            return reply
        }
        do {
            try core.send(addressed(reply))
        } catch {
            // The handler's result could not be encoded (e.g. a string with NUL).
            try? core.send(addressed(errorReply(DBusError(name: DBusError.Name.failed, message: "cannot encode the reply: \(error)"))))
        }
    }

    static func errorReply(_ error: DBusError) -> DBusMessage {
        DBusMessage(kind: .error, errorName: error.name, body: [.string(error.message)])
    }

    static func returnReply(_ body: [DBusValue]) -> DBusMessage {
        DBusMessage(kind: .methodReturn, body: body)
    }

    static func dbusError(from error: any Error) -> DBusError {
        switch error {
        case let error as DBusError: error
        case let error as DBusTypeMismatch: DBusError(name: DBusError.Name.invalidArgs, message: error.description)
        case let error as DBusValidationError: DBusError(name: DBusError.Name.invalidArgs, message: error.description)
        case let error as DBusSignatureError: DBusError(name: DBusError.Name.invalidSignature, message: error.description)
        default: DBusError(name: DBusError.Name.failed, message: String(describing: error))
        }
    }

    private func children(of path: DBusObjectPath, in state: State) -> [String] {
        let prefix = path.rawValue == "/" ? "/" : path.rawValue + "/"
        var names = Set<String>()
        for candidate in Array(state.objects.keys) + Array(state.managers) where candidate.rawValue.hasPrefix(prefix) && candidate != path {
            if let first = candidate.rawValue.dropFirst(prefix.count).split(separator: "/").first {
                names.insert(String(first))
            }
        }
        return names.sorted()
    }

    private func dispatch(_ methodCall: DBusMethodCall, core: ConnectionCore) async throws -> DBusMethodResult {
        let call = methodCall.message
        let path = call.path ?? .root
        let member = call.member ?? ""
        let (object, isManager, children) = state.withLock { state in
            (state.objects[path], state.managers.contains(path), self.children(of: path, in: state))
        }
        let unknownObject = DBusError(name: DBusError.Name.unknownObject, message: "no object at path \(path)")

        switch (call.interface, member) {
        case (DBusStandardInterface.introspectable?, "Introspect"), (nil, "Introspect"):
            guard object != nil || isManager || !children.isEmpty || path == .root else { throw unknownObject }
            try call.expect(signature: .empty)
            return .reply([.string(Introspection.xml(object: object, isObjectManager: isManager, children: children))])
        case (DBusStandardInterface.properties?, _):
            guard let object else { throw unknownObject }
            return .reply(try await properties(call, object: object, core: core))
        default:
            break
        }
        guard let object else { throw unknownObject }
        let interface: DBusInterface
        if let name = call.interface {
            guard let found = object.interface(name) else {
                throw DBusError(name: DBusError.Name.unknownInterface, message: "object \(path) has no interface \(name)")
            }
            interface = found
        } else {
            guard let found = object.interfaces.first(where: { $0.method(member) != nil }) else {
                throw DBusError(name: DBusError.Name.unknownMethod, message: "object \(path) has no method \(member)")
            }
            interface = found
        }
        guard let method = interface.method(member) else {
            throw DBusError(name: DBusError.Name.unknownMethod, message: "interface \(interface.name) has no method \(member)")
        }
        guard call.signature == method.inSignature else {
            throw DBusError(name: DBusError.Name.invalidArgs,
                            message: "\(interface.name).\(member) expects arguments '\(method.inSignature)', got '\(call.signature)'")
        }
        let interfaceName = interface.name
        let declared = method.outSignature
        return try await method.answer(methodCall).mapValues { values in
            let produced = DBusSignature(types: values.map(\.type))
            guard produced == declared else {
                throw DBusError(name: DBusError.Name.failed,
                                message: "\(interfaceName).\(member) produced '\(produced)' but declares '\(declared)'")
            }
            return values
        }
    }

    private func properties(_ call: DBusMessage, object: DBusExportedObject, core: ConnectionCore) async throws -> [DBusValue] {
        func lookup(_ interfaceName: String) throws -> DBusInterface {
            guard let interface = object.interface(interfaceName) else {
                throw DBusError(name: DBusError.Name.unknownInterface, message: "no interface \(interfaceName) at \(call.path ?? .root)")
            }
            return interface
        }
        func property(_ interface: DBusInterface, _ name: String) throws -> DBusProperty {
            guard let property = interface.property(name) else {
                throw DBusError(name: DBusError.Name.unknownProperty, message: "\(interface.name) has no property \(name)")
            }
            return property
        }
        switch call.member {
        case "Get":
            let (interfaceName, name) = try call.decode(String.self, String.self)
            return [.variant(try await property(try lookup(interfaceName), name).getter())]
        case "GetAll":
            let interfaceName = try call.decode(String.self)
            // The empty name means "all interfaces"; no property names clash in practice.
            if interfaceName.isEmpty {
                var entries: [DBusDictionaryEntry] = []
                for interface in object.interfaces {
                    if case .dictionary(_, _, let items) = try await DBusExportedObject.propertyValues(interface) { entries += items }
                }
                return [.dictionary(key: .string, value: .variant, entries)]
            }
            return [try await DBusExportedObject.propertyValues(try lookup(interfaceName))]
        case "Set":
            let (interfaceName, name, value) = try call.decode(String.self, String.self, DBusValue.self)
            let interface = try lookup(interfaceName)
            let target = try property(interface, name)
            guard let setter = target.setter else {
                throw DBusError(name: DBusError.Name.propertyReadOnly, message: "\(interfaceName).\(name) is read-only")
            }
            guard value.type == target.type else {
                throw DBusError(name: DBusError.Name.invalidArgs,
                                message: "\(interfaceName).\(name) has type '\(target.type)', got '\(value.type)'")
            }
            try await setter(value)
            switch target.changeSignal {
            case .value:
                let current = try await target.getter()
                try sendSignal(Self.propertiesChanged(path: call.path ?? .root, interface: interfaceName,
                                                      changed: [name: current], invalidated: []), core: core)
            case .invalidates:
                try sendSignal(Self.propertiesChanged(path: call.path ?? .root, interface: interfaceName,
                                                      changed: [:], invalidated: [name]), core: core)
            case .none: break
            }
            return []
        default:
            throw DBusError(name: DBusError.Name.unknownMethod, message: "\(DBusStandardInterface.properties) has no method \(call.member ?? "")")
        }
    }

    static func propertiesChanged(path: DBusObjectPath, interface: String, changed: [String: DBusValue],
                                  invalidated: [String]) -> DBusMessage {
        let entries = changed.sorted { $0.key < $1.key }.map {
            DBusDictionaryEntry(key: .string($0.key), value: .variant($0.value))
        }
        return .signal(path: path, interface: DBusStandardInterface.properties, member: "PropertiesChanged",
                       body: [.string(interface), .dictionary(key: .string, value: .variant, entries),
                              .array(element: .string, invalidated.map { .string($0) })])
    }
}
