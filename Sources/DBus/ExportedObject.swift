/// An incoming method call as seen by a handler.
public struct DBusMethodCall: Sendable {
    /// The whole call message (sender, path, interface, member, body).
    public let message: DBusMessage
    /// The caller's unique bus name.
    public var sender: String { message.sender ?? "" }
    /// The object path that was called.
    public var path: DBusObjectPath { message.path ?? .root }
    /// The call's arguments, already checked against the method's input signature.
    public var arguments: [DBusValue] { message.body }
    /// When the connection read the call (it may be handled later, after the calls before it).
    public let received: ContinuousClock.Instant

    init(message: DBusMessage, received: ContinuousClock.Instant) {
        self.message = message
        self.received = received
    }

    /// Decodes the arguments into typed values (see ``DBusMessage/decode(_:)``).
    public func decode<each T: DBusRepresentable>(_ types: repeat (each T).Type) throws(DBusTypeMismatch)
        -> (repeat each T)
    {
        try message.decode(repeat each types)
    }
}

/// A method of an exported interface.
///
/// A connection handles the calls to its objects one after another, in arrival order (see
/// ``DBusMethodResult``): a handler holds the calls after it until it returns.
public struct DBusMethod: Sendable {
    /// Answers with the values it returns.
    public typealias Handler = @Sendable (DBusMethodCall) async throws -> [DBusValue]
    /// Answers at once or later (see ``DBusMethodResult``).
    public typealias Answering = @Sendable (DBusMethodCall) async throws -> DBusMethodResult

    public let name: String
    /// Input signature; calls with other arguments get `InvalidArgs` before the handler runs.
    public let inSignature: DBusSignature
    /// Output signature; the handler's result is checked against it.
    public let outSignature: DBusSignature
    /// Argument names for introspection (optional, may be shorter than the signature).
    public let inNames: [String]
    public let outNames: [String]
    /// The handler. Throwing ``DBusError`` produces that error reply; ``DBusTypeMismatch``
    /// produces `InvalidArgs`; any other error produces `org.freedesktop.DBus.Error.Failed`.
    public let answer: Answering

    /// A method `name` taking `inSignature` and answering `outSignature` with what `handler`
    /// returns, once it returns.
    public init(_ name: String, in inSignature: DBusSignature = .empty, out outSignature: DBusSignature = .empty,
                inNames: [String] = [], outNames: [String] = [], handler: @escaping Handler) {
        self.init(name, in: inSignature, out: outSignature, inNames: inNames, outNames: outNames) { call in
            .reply(try await handler(call))
        }
    }

    /// A method `name` taking `inSignature` and answering `outSignature` as `answer` says: at
    /// once, or later while the calls after it are handled (``DBusMethodResult/later(_:)``).
    public init(_ name: String, in inSignature: DBusSignature = .empty, out outSignature: DBusSignature = .empty,
                inNames: [String] = [], outNames: [String] = [], answer: @escaping Answering) {
        self.name = name
        self.inSignature = inSignature
        self.outSignature = outSignature
        self.inNames = inNames
        self.outNames = outNames
        self.answer = answer
    }
}

/// A property of an exported interface.
public struct DBusProperty: Sendable {
    /// How changes are announced (the `EmitsChangedSignal` annotation).
    public enum ChangeSignal: Sendable {
        /// PropertiesChanged carries the new value (default).
        case value
        /// PropertiesChanged lists the name as invalidated.
        case invalidates
        /// No signal (constant or volatile value).
        case none
    }

    public typealias Getter = @Sendable () async throws -> DBusValue
    public typealias Setter = @Sendable (DBusValue) async throws -> Void

    public let name: String
    public let type: DBusType
    public let getter: Getter
    /// nil for read-only properties.
    public let setter: Setter?
    public let changeSignal: ChangeSignal

    /// A property of `type`; read-only unless `setter` is given. A successful remote Set is
    /// followed by PropertiesChanged according to `changeSignal`.
    public init(_ name: String, type: DBusType, changeSignal: ChangeSignal = .value,
                get getter: @escaping Getter, set setter: Setter? = nil) {
        self.name = name
        self.type = type
        self.getter = getter
        self.setter = setter
        self.changeSignal = changeSignal
    }

    /// `read`, `write` or `readwrite` for introspection.
    var access: String { setter == nil ? "read" : "readwrite" }
}

/// A signal of an exported interface (for introspection; emit with ``DBusConnection/emit(path:interface:member:arguments:destination:)``).
public struct DBusSignalDescription: Sendable {
    public let name: String
    public let signature: DBusSignature
    public let argumentNames: [String]

    /// A signal `name` with arguments of `signature`.
    public init(_ name: String, signature: DBusSignature = .empty, argumentNames: [String] = []) {
        self.name = name
        self.signature = signature
        self.argumentNames = argumentNames
    }
}

/// An interface implemented by an exported object.
public struct DBusInterface: Sendable {
    public let name: String
    public var methods: [DBusMethod]
    public var properties: [DBusProperty]
    public var signals: [DBusSignalDescription]

    /// An interface `name` with its members.
    public init(_ name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [],
                signals: [DBusSignalDescription] = []) {
        self.name = name
        self.methods = methods
        self.properties = properties
        self.signals = signals
    }

    func method(_ name: String) -> DBusMethod? { methods.first { $0.name == name } }
    func property(_ name: String) -> DBusProperty? { properties.first { $0.name == name } }
}

/// An object to export at a path: a set of interfaces. The standard interfaces
/// (Introspectable, Properties, Peer) are provided by the connection.
public struct DBusExportedObject: Sendable {
    public var interfaces: [DBusInterface]

    /// An object implementing `interfaces`.
    public init(interfaces: [DBusInterface]) { self.interfaces = interfaces }
    /// An object implementing `interfaces`.
    public init(_ interfaces: DBusInterface...) { self.interfaces = interfaces }

    func interface(_ name: String) -> DBusInterface? { interfaces.first { $0.name == name } }

    /// Current values of all properties of `interface`, for GetAll and InterfacesAdded.
    /// A getter that throws `UnknownProperty` has no value now and is left out, as BlueZ
    /// leaves out a property whose `exists` callback says no (`Device1.Modalias` before the
    /// PnP ID was read).
    static func propertyValues(_ interface: DBusInterface) async throws -> DBusValue {
        var entries: [DBusDictionaryEntry] = []
        for property in interface.properties {
            let value: DBusValue
            do {
                value = try await property.getter()
            } catch let error as DBusError where error.name == DBusError.Name.unknownProperty {
                continue
            }
            entries.append(DBusDictionaryEntry(key: .string(property.name), value: .variant(value)))
        }
        return .dictionary(key: .string, value: .variant, entries)
    }
}

/// Names of the standard interfaces.
public enum DBusStandardInterface {
    public static let introspectable = "org.freedesktop.DBus.Introspectable"
    public static let properties = "org.freedesktop.DBus.Properties"
    public static let peer = "org.freedesktop.DBus.Peer"
    public static let objectManager = "org.freedesktop.DBus.ObjectManager"
    public static let bus = "org.freedesktop.DBus"
}
