/// A D-Bus error: a dotted error name and a human-readable message.
///
/// Received error replies become a `DBusError`; a method handler that throws one produces
/// exactly that error reply. Timeouts arrive as ``Name/noReply``, a closed connection as
/// ``Name/disconnected``.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The error name, e.g. `org.bluez.Error.InProgress`.
    public var name: String
    /// The message text (may be empty).
    public var message: String

    /// An error with a dotted name (e.g. `org.bluez.Error.Failed`) and a message.
    public init(name: String, message: String = "") {
        self.name = name
        self.message = message
    }

    public var description: String { message.isEmpty ? name : "\(name): \(message)" }

    /// Well-known error names.
    public enum Name {
        public static let failed = "org.freedesktop.DBus.Error.Failed"
        public static let noReply = "org.freedesktop.DBus.Error.NoReply"
        public static let timeout = "org.freedesktop.DBus.Error.Timeout"
        public static let disconnected = "org.freedesktop.DBus.Error.Disconnected"
        public static let invalidArgs = "org.freedesktop.DBus.Error.InvalidArgs"
        public static let invalidSignature = "org.freedesktop.DBus.Error.InvalidSignature"
        public static let unknownMethod = "org.freedesktop.DBus.Error.UnknownMethod"
        public static let unknownObject = "org.freedesktop.DBus.Error.UnknownObject"
        public static let unknownInterface = "org.freedesktop.DBus.Error.UnknownInterface"
        public static let unknownProperty = "org.freedesktop.DBus.Error.UnknownProperty"
        public static let propertyReadOnly = "org.freedesktop.DBus.Error.PropertyReadOnly"
        public static let serviceUnknown = "org.freedesktop.DBus.Error.ServiceUnknown"
        public static let nameHasNoOwner = "org.freedesktop.DBus.Error.NameHasNoOwner"
        public static let accessDenied = "org.freedesktop.DBus.Error.AccessDenied"
        public static let noMemory = "org.freedesktop.DBus.Error.NoMemory"
        public static let limitsExceeded = "org.freedesktop.DBus.Error.LimitsExceeded"
    }

    /// True for the errors that mean "no answer came in time or the peer went away".
    public var isNoReply: Bool { name == Name.noReply || name == Name.timeout }

    /// The error used when the connection is closed or lost.
    public static func disconnected(_ message: String = "the D-Bus connection is closed") -> DBusError {
        DBusError(name: Name.disconnected, message: message)
    }
}

/// A value or message whose D-Bus type differs from the one the caller asked for.
public struct DBusTypeMismatch: Error, Sendable, Hashable, CustomStringConvertible {
    /// The signature the caller expected.
    public let expected: String
    /// The signature that actually came.
    public let actual: String
    /// Where the mismatch was found (e.g. a member name or a property), if known.
    public var context: String

    /// A mismatch between the `expected` and `actual` signatures, found in `context`.
    public init(expected: String, actual: String, context: String = "") {
        self.expected = expected
        self.actual = actual
        self.context = context
    }

    public var description: String {
        let place = context.isEmpty ? "" : " in \(context)"
        return "D-Bus type mismatch\(place): expected '\(expected)', got '\(actual)'"
    }
}

/// A signal subscription whose reader fell behind: more than `limit` signals waited unread.
/// The subscription ends with this error instead of dropping a signal or growing without
/// bound; the reader subscribes again and re-reads the state the signals would have reported.
public struct DBusSignalBacklogFull: Error, Sendable, Hashable, CustomStringConvertible {
    /// How many signals may wait unread.
    public let limit: Int
    /// The subscription's match rules.
    public let rules: [String]

    public var description: String {
        "more than \(limit) signals waited unread for the subscription to \(rules.joined(separator: " or ")): "
            + "its reader fell behind, and the subscription ended rather than drop one"
    }
}
