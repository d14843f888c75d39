/// A bus match rule for signals, e.g. "PropertiesChanged from org.bluez under /org/bluez".
///
/// The rule is registered with the bus (AddMatch) and also applied locally, so each
/// subscription receives only the signals that match its own rule even when several
/// subscriptions share the connection.
public struct DBusMatchRule: Sendable, Hashable, CustomStringConvertible {
    /// Sender bus name: a unique name (`:1.42`) or a well-known name (`org.bluez`), whose
    /// current owner is tracked.
    public var sender: String?
    public var interface: String?
    public var member: String?
    /// Exact object path.
    public var path: DBusObjectPath?
    /// Object path subtree (the path itself and everything below it).
    public var pathNamespace: DBusObjectPath?
    public var destination: String?
    /// `argN='value'`: string argument N equals value.
    public var arguments: [Int: String]
    /// `argNpath='value'`: string/path argument N equals value, or one is a `/`-terminated
    /// prefix of the other.
    public var argumentPaths: [Int: String]

    /// A signal rule; nil fields match anything.
    public init(sender: String? = nil, interface: String? = nil, member: String? = nil,
                path: DBusObjectPath? = nil, pathNamespace: DBusObjectPath? = nil, destination: String? = nil,
                arguments: [Int: String] = [:], argumentPaths: [Int: String] = [:]) {
        self.sender = sender
        self.interface = interface
        self.member = member
        self.path = path
        self.pathNamespace = pathNamespace
        self.destination = destination
        self.arguments = arguments
        self.argumentPaths = argumentPaths
    }

    /// The rule in the bus's text form, e.g. `type='signal',sender='org.bluez',member='X'`.
    public var description: String {
        var parts = ["type='signal'"]
        func add(_ key: String, _ value: String?) {
            guard let value else { return }
            parts.append("\(key)='\(value.replacing("'", with: "'\\''"))'")
        }
        add("sender", sender)
        add("interface", interface)
        add("member", member)
        add("path", path?.rawValue)
        add("path_namespace", pathNamespace?.rawValue)
        add("destination", destination)
        for (index, value) in arguments.sorted(by: { $0.key < $1.key }) { add("arg\(index)", value) }
        for (index, value) in argumentPaths.sorted(by: { $0.key < $1.key }) { add("arg\(index)path", value) }
        return parts.joined(separator: ",")
    }

    func validate() throws {
        if let sender { try DBusNames.validateBusName(sender) }
        if let interface { try DBusNames.validateInterface(interface) }
        if let member { try DBusNames.validateMember(member) }
        if let destination { try DBusNames.validateBusName(destination) }
        for index in Array(arguments.keys) + Array(argumentPaths.keys) where !(0...63).contains(index) {
            throw DBusValidationError(kind: "match rule argument index", value: String(index))
        }
        if path != nil && pathNamespace != nil {
            throw DBusValidationError(kind: "match rule (path and path_namespace together)", value: description)
        }
    }

    /// Whether the well-known sender needs owner tracking to match locally.
    var wellKnownSender: String? {
        guard let sender, !sender.hasPrefix(":"), sender != "org.freedesktop.DBus" else { return nil }
        return sender
    }

    /// Local matching, on the signal as read (nothing decoded but the arguments a rule
    /// names). `owner` is the current unique owner of a well-known sender: nil when not yet
    /// known (then the bus's own filtering is trusted), "" when the name has no owner.
    func matches(_ signal: borrowing DBusSignalView, senderOwner owner: String?) -> Bool {
        if let sender, !signal.senderIs(sender) {
            if wellKnownSender == nil { return false }
            if let owner, !signal.senderIs(owner) { return false }
        }
        if let interface, !signal.interfaceIs(interface) { return false }
        if let member, !signal.memberIs(member) { return false }
        if let path, !signal.pathIs(path) { return false }
        if let pathNamespace, !signal.pathIsInside(pathNamespace) { return false }
        if let destination, !signal.destinationIs(destination) { return false }
        for (index, expected) in arguments where !signal.stringArgument(index, is: expected) { return false }
        for (index, expected) in argumentPaths {
            guard let actual = signal.pathLikeArgument(index) else { return false }
            let prefixMatch = (expected.hasSuffix("/") && actual.hasPrefix(expected))
                || (actual.hasSuffix("/") && expected.hasPrefix(actual))
            guard actual == expected || prefixMatch else { return false }
        }
        return true
    }
}

/// A received signal.
public struct DBusSignal: Sendable, Hashable {
    /// The whole message, for header fields beyond the common ones.
    public let message: DBusMessage
    /// The sender's unique name.
    public var sender: String { message.sender ?? "" }
    public var path: DBusObjectPath { message.path ?? .root }
    public var interface: String { message.interface ?? "" }
    public var member: String { message.member ?? "" }
    /// The signal's arguments.
    public var body: [DBusValue] { message.body }

    /// Wraps a received signal message.
    public init(message: DBusMessage) { self.message = message }
}
