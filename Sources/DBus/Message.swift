/// A D-Bus message in Swift form: header fields plus the decoded body.
///
/// Received messages (replies, signals, incoming calls) arrive fully decoded, so a
/// `DBusMessage` is a plain value that can cross tasks freely.
public struct DBusMessage: Sendable, Hashable {
    /// The four message kinds.
    public enum Kind: Sendable, Hashable {
        case methodCall, methodReturn, error, signal
    }

    public var kind: Kind
    /// The sender's unique name (set by the bus on received messages).
    public var sender: String?
    public var destination: String?
    public var path: DBusObjectPath?
    public var interface: String?
    public var member: String?
    /// For `.error` messages: the error name.
    public var errorName: String?
    public var serial: UInt32 = 0
    public var replySerial: UInt32 = 0
    /// For method calls: whether the caller asked for no reply.
    public var noReplyExpected = false
    /// The body values in order.
    public var body: [DBusValue]

    /// The body's signature.
    public var signature: DBusSignature { DBusSignature(types: body.map(\.type)) }

    public init(kind: Kind, sender: String? = nil, destination: String? = nil,
                path: DBusObjectPath? = nil, interface: String? = nil, member: String? = nil,
                errorName: String? = nil, body: [DBusValue] = []) {
        self.kind = kind
        self.sender = sender
        self.destination = destination
        self.path = path
        self.interface = interface
        self.member = member
        self.errorName = errorName
        self.body = body
    }

    /// A method call message.
    public static func methodCall(destination: String?, path: DBusObjectPath, interface: String?,
                                  member: String, body: [DBusValue] = []) -> DBusMessage {
        DBusMessage(kind: .methodCall, destination: destination, path: path, interface: interface,
                    member: member, body: body)
    }

    /// A signal message.
    public static func signal(path: DBusObjectPath, interface: String, member: String,
                              body: [DBusValue] = [], destination: String? = nil) -> DBusMessage {
        DBusMessage(kind: .signal, destination: destination, path: path, interface: interface,
                    member: member, body: body)
    }

    /// For error messages, the error as a Swift ``DBusError`` (first string argument as text).
    public var error: DBusError? {
        guard kind == .error else { return nil }
        var text = ""
        if case .string(let first)? = body.first { text = first }
        return DBusError(name: errorName ?? DBusError.Name.failed, message: text)
    }

    /// Throws ``DBusTypeMismatch`` unless the body's signature is exactly `expected`.
    public func expect(signature expected: DBusSignature) throws(DBusTypeMismatch) {
        let actual = signature
        guard actual == expected else {
            throw DBusTypeMismatch(expected: expected.description, actual: actual.description, context: contextName)
        }
    }

    /// Decodes the whole body into typed values, checking the complete signature first:
    /// `let (name, props) = try reply.decode(String.self, [String: DBusValue].self)`.
    /// A different signature throws ``DBusTypeMismatch`` naming both signatures.
    public func decode<each T: DBusRepresentable>(_ types: repeat (each T).Type) throws(DBusTypeMismatch)
        -> (repeat each T)
    {
        var expected: [DBusType] = []
        for type in repeat each types { expected.append(type.dbusType) }
        try expect(signature: DBusSignature(types: expected))
        var index = 0
        func next<U: DBusRepresentable>(_ type: U.Type) throws(DBusTypeMismatch) -> U {
            defer { index += 1 }
            return try U(dbusValue: body[index])
        }
        return (repeat try next(each types))
    }

    var contextName: String {
        [interface, member].compactMap { $0 }.joined(separator: ".")
    }
}
