#if canImport(Glibc)
import Glibc
#endif
import CDBus

/// A value as it travels on the wire, in any D-Bus type.
///
/// Containers carry their element types so that empty arrays and dictionaries keep their
/// signature. Use ``DBusValue/as(_:)`` or the typed initialisers of ``DBusRepresentable`` to
/// convert to and from Swift types.
// Only the containers are indirect: scalars (every byte of a GATT value) stay inline
// instead of taking one heap box each.
public enum DBusValue: Sendable, Hashable {
    case byte(UInt8)
    case boolean(Bool)
    case int16(Int16)
    case uint16(UInt16)
    case int32(Int32)
    case uint32(UInt32)
    case int64(Int64)
    case uint64(UInt64)
    case double(Double)
    case string(String)
    case objectPath(DBusObjectPath)
    case signature(DBusSignature)
    case unixFD(DBusFileDescriptor)
    /// A variant: the inner value carries its own type on the wire.
    indirect case variant(DBusValue)
    /// An array whose elements all have type `element`.
    indirect case array(element: DBusType, [DBusValue])
    /// A dictionary (`a{KV}`), in wire order.
    indirect case dictionary(key: DBusType, value: DBusType, [DBusDictionaryEntry])
    /// A struct with at least one field.
    indirect case structure([DBusValue])

    /// The value's complete type.
    public var type: DBusType {
        switch self {
        case .byte: .byte
        case .boolean: .boolean
        case .int16: .int16
        case .uint16: .uint16
        case .int32: .int32
        case .uint32: .uint32
        case .int64: .int64
        case .uint64: .uint64
        case .double: .double
        case .string: .string
        case .objectPath: .objectPath
        case .signature: .signature
        case .unixFD: .unixFD
        case .variant: .variant
        case .array(let element, _): .array(element)
        case .dictionary(let key, let value, _): .dictionary(key: key, value: value)
        case .structure(let fields): .structure(fields.map(\.type))
        }
    }

    /// The value with any number of variant wrappers removed.
    public var unwrappingVariants: DBusValue {
        var value = self
        while case .variant(let inner) = value { value = inner }
        return value
    }
}

/// One key/value pair of a ``DBusValue/dictionary(key:value:_:)``.
public struct DBusDictionaryEntry: Sendable, Hashable {
    public var key: DBusValue
    public var value: DBusValue
    public init(key: DBusValue, value: DBusValue) {
        self.key = key
        self.value = value
    }
}

/// A validated D-Bus object path such as `/org/bluez/hci0`.
public struct DBusObjectPath: Sendable, Hashable, Comparable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    /// The path text.
    public let rawValue: String

    /// Validates `rawValue` (`/`, or `/`-separated non-empty `[A-Za-z0-9_]` elements).
    public init(_ rawValue: String) throws(DBusValidationError) {
        guard DBusObjectPath.isValid(rawValue) else {
            throw DBusValidationError(kind: "object path", value: rawValue)
        }
        self.rawValue = rawValue
    }

    /// A path literal; an invalid literal is a programming error and traps.
    public init(stringLiteral value: String) {
        precondition(DBusObjectPath.isValid(value), "invalid D-Bus object path literal '\(value)'")
        self.rawValue = value
    }

    /// The root path `/`.
    public static let root: DBusObjectPath = "/"

    public var description: String { rawValue }

    public static func < (lhs: DBusObjectPath, rhs: DBusObjectPath) -> Bool { lhs.rawValue < rhs.rawValue }

    /// A path libdbus has already validated (read from a received message): checking it
    /// again would cost a pass over every path of every message.
    init(validated rawValue: String) {
        self.rawValue = rawValue
    }

    /// Whether `rawValue` is a syntactically valid object path.
    public static func isValid(_ rawValue: String) -> Bool {
        let bytes = rawValue.utf8
        guard bytes.first == UInt8(ascii: "/") else { return false }
        if bytes.count == 1 { return true }
        var previousSlash = true
        for byte in bytes.dropFirst() {
            if byte == UInt8(ascii: "/") {
                if previousSlash { return false }
                previousSlash = true
            } else {
                guard isNameByte(byte) else { return false }
                previousSlash = false
            }
        }
        return !previousSlash
    }

    /// Whether this path equals `ancestor` or lies beneath it.
    public func isDescendant(of ancestor: DBusObjectPath, includingSelf: Bool = true) -> Bool {
        if self == ancestor { return includingSelf }
        if ancestor.rawValue == "/" { return true }
        return rawValue.hasPrefix(ancestor.rawValue + "/")
    }

    /// The child path `self/element`; `element` must be a valid path element.
    public func appending(_ element: String) throws(DBusValidationError) -> DBusObjectPath {
        try DBusObjectPath(rawValue == "/" ? "/" + element : rawValue + "/" + element)
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "_")
    }
}

/// A Unix file descriptor received from or to be sent over D-Bus.
///
/// The object owns its descriptor and closes it when released, so received descriptors
/// never leak. Call ``duplicate()`` to keep a descriptor beyond the object's lifetime.
public final class DBusFileDescriptor: Sendable, Hashable, CustomStringConvertible {
    /// The descriptor number, valid while this object is alive.
    public let rawValue: Int32

    /// Takes ownership of `fd`; it is closed when this object is released.
    public init(owning fd: Int32) { self.rawValue = fd }

    /// Duplicates `fd` (close-on-exec); the caller keeps ownership of `fd`.
    public init(duplicating fd: Int32) throws(DBusError) {
        let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else {
            throw DBusError(name: DBusError.Name.failed, message: "cannot duplicate fd \(fd): errno \(errno)")
        }
        self.rawValue = copy
    }

    /// A new close-on-exec descriptor for the same open file, owned by the caller.
    public func duplicate() -> Int32 { fcntl(rawValue, F_DUPFD_CLOEXEC, 0) }

    deinit { close(rawValue) }

    public var description: String { "fd \(rawValue)" }
    public static func == (lhs: DBusFileDescriptor, rhs: DBusFileDescriptor) -> Bool { lhs === rhs }
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// A name (bus name, interface, member, error name, path) that D-Bus would reject.
public struct DBusValidationError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of name it was meant to be.
    public let kind: String
    /// The rejected text.
    public let value: String
    public var description: String { "invalid D-Bus \(kind): '\(value)'" }
}

/// Validation of the names libdbus would otherwise reject with a fatal check failure.
enum DBusNames {
    static func validateInterface(_ name: String) throws(DBusValidationError) {
        guard name.utf8.count <= 255, dbus_validate_interface(name, nil) != 0 else {
            throw DBusValidationError(kind: "interface name", value: name)
        }
    }
    static func validateMember(_ name: String) throws(DBusValidationError) {
        guard name.utf8.count <= 255, dbus_validate_member(name, nil) != 0 else {
            throw DBusValidationError(kind: "member name", value: name)
        }
    }
    static func validateBusName(_ name: String) throws(DBusValidationError) {
        guard name.utf8.count <= 255, dbus_validate_bus_name(name, nil) != 0 else {
            throw DBusValidationError(kind: "bus name", value: name)
        }
    }
    static func validateErrorName(_ name: String) throws(DBusValidationError) {
        guard name.utf8.count <= 255, dbus_validate_error_name(name, nil) != 0 else {
            throw DBusValidationError(kind: "error name", value: name)
        }
    }
    static func validateString(_ text: String) throws(DBusValidationError) {
        guard !text.utf8.contains(0) else { throw DBusValidationError(kind: "string (contains NUL)", value: text) }
    }
}
