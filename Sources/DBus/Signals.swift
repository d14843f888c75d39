/// Typed forms of the standard signals, and subscriptions that deliver them.

/// `org.freedesktop.DBus.Properties.PropertiesChanged`.
public struct DBusPropertiesChanged: Sendable, Hashable {
    public let sender: String
    public let path: DBusObjectPath
    public let interface: String
    public let changed: [String: DBusValue]
    public let invalidated: [String]

    /// Decodes the signal; throws ``DBusTypeMismatch`` unless it is `(sa{sv}as)`.
    public init(_ signal: DBusSignal) throws(DBusTypeMismatch) {
        (interface, changed, invalidated) = try signal.message.decode(String.self, [String: DBusValue].self, [String].self)
        sender = signal.sender
        path = signal.path
    }
}

/// `org.freedesktop.DBus.ObjectManager.InterfacesAdded`.
public struct DBusInterfacesAdded: Sendable, Hashable {
    public let sender: String
    public let path: DBusObjectPath
    /// Interface name → its properties.
    public let interfaces: [String: [String: DBusValue]]

    public init(_ signal: DBusSignal) throws(DBusTypeMismatch) {
        (path, interfaces) = try signal.message.decode(DBusObjectPath.self, [String: [String: DBusValue]].self)
        sender = signal.sender
    }
}

/// `org.freedesktop.DBus.ObjectManager.InterfacesRemoved`.
public struct DBusInterfacesRemoved: Sendable, Hashable {
    public let sender: String
    public let path: DBusObjectPath
    public let interfaces: [String]

    public init(_ signal: DBusSignal) throws(DBusTypeMismatch) {
        (path, interfaces) = try signal.message.decode(DBusObjectPath.self, [String].self)
        sender = signal.sender
    }
}

/// `org.freedesktop.DBus.NameOwnerChanged`: a name got, changed or lost its owner
/// (empty strings mean "no owner").
public struct DBusNameOwnerChanged: Sendable, Hashable {
    public let name: String
    public let oldOwner: String
    public let newOwner: String

    public init(_ signal: DBusSignal) throws(DBusTypeMismatch) {
        (name, oldOwner, newOwner) = try signal.message.decode(String.self, String.self, String.self)
    }
}

extension DBusConnection {
    /// PropertiesChanged from `sender`, for objects at or below `pathNamespace`, optionally
    /// only for one interface (matched on the bus with `arg0`). Signals with a wrong
    /// signature are skipped.
    public func propertiesChanged(sender: String?, pathNamespace: DBusObjectPath? = nil, interface: String? = nil)
        async throws -> AsyncThrowingStream<DBusPropertiesChanged, any Error>
    {
        let rule = DBusMatchRule(sender: sender, interface: DBusStandardInterface.properties, member: "PropertiesChanged",
                                 pathNamespace: pathNamespace, arguments: interface.map { [0: $0] } ?? [:])
        return try await core.subscribe([rule]) { try? DBusPropertiesChanged($0) }
    }

    /// InterfacesAdded from `sender`'s ObjectManager.
    public func interfacesAdded(sender: String?, managerPath: DBusObjectPath? = nil)
        async throws -> AsyncThrowingStream<DBusInterfacesAdded, any Error>
    {
        let rule = DBusMatchRule(sender: sender, interface: DBusStandardInterface.objectManager,
                                 member: "InterfacesAdded", path: managerPath)
        return try await core.subscribe([rule]) { try? DBusInterfacesAdded($0) }
    }

    /// InterfacesRemoved from `sender`'s ObjectManager.
    public func interfacesRemoved(sender: String?, managerPath: DBusObjectPath? = nil)
        async throws -> AsyncThrowingStream<DBusInterfacesRemoved, any Error>
    {
        let rule = DBusMatchRule(sender: sender, interface: DBusStandardInterface.objectManager,
                                 member: "InterfacesRemoved", path: managerPath)
        return try await core.subscribe([rule]) { try? DBusInterfacesRemoved($0) }
    }

    /// NameOwnerChanged from the bus, for one name or (nil) all names.
    public func nameOwnerChanged(name: String? = nil) async throws -> AsyncThrowingStream<DBusNameOwnerChanged, any Error> {
        let rule = DBusMatchRule(sender: DBusStandardInterface.bus, interface: DBusStandardInterface.bus,
                                 member: "NameOwnerChanged", path: "/org/freedesktop/DBus",
                                 arguments: name.map { [0: $0] } ?? [:])
        return try await core.subscribe([rule]) { try? DBusNameOwnerChanged($0) }
    }
}
