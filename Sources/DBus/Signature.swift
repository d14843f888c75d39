/// One complete D-Bus type, as written in a type signature.
///
/// `DBusType` is the parsed form of a single complete type such as `s`, `a{sv}` or `(hq)`.
/// A ``DBusSignature`` is a sequence of them.
public indirect enum DBusType: Sendable, Hashable, CustomStringConvertible {
    case byte, boolean, int16, uint16, int32, uint32, int64, uint64, double
    case string, objectPath, signature, unixFD
    case variant
    /// `aX`: an array of `element`.
    case array(DBusType)
    /// `a{KV}`: a dictionary; `key` is always a basic type.
    case dictionary(key: DBusType, value: DBusType)
    /// `(...)`: a struct with at least one field.
    case structure([DBusType])

    /// The type's signature text, e.g. `a{sv}`.
    public var description: String {
        switch self {
        case .byte: "y"
        case .boolean: "b"
        case .int16: "n"
        case .uint16: "q"
        case .int32: "i"
        case .uint32: "u"
        case .int64: "x"
        case .uint64: "t"
        case .double: "d"
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .unixFD: "h"
        case .variant: "v"
        case .array(let element): "a" + element.description
        case .dictionary(let key, let value): "a{" + key.description + value.description + "}"
        case .structure(let fields): "(" + fields.map(\.description).joined() + ")"
        }
    }

    /// Whether the type is basic (allowed as a dictionary key).
    public var isBasic: Bool {
        switch self {
        case .variant, .array, .dictionary, .structure: false
        default: true
        }
    }

    /// Parses exactly one complete type, e.g. `DBusType("a{sv}")`.
    public init(_ text: String) throws(DBusSignatureError) {
        let signature = try DBusSignature(text)
        guard signature.types.count == 1, let only = signature.types.first else {
            throw DBusSignatureError(signature: text, reason: "expected exactly one complete type")
        }
        self = only
    }
}

/// A signature text that is not a valid D-Bus type signature.
public struct DBusSignatureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The offending signature text.
    public let signature: String
    /// What is wrong with it.
    public let reason: String

    public var description: String { "invalid D-Bus signature '\(signature)': \(reason)" }
}

/// A validated D-Bus type signature: zero or more complete types, e.g. `sa{sv}`.
public struct DBusSignature: Sendable, Hashable, CustomStringConvertible, ExpressibleByArrayLiteral {
    /// The complete types in order.
    public let types: [DBusType]

    /// The signature text.
    public var description: String { types.map(\.description).joined() }
    /// The signature text.
    public var rawValue: String { description }

    /// The empty signature (no arguments).
    public static let empty = DBusSignature(types: [])

    /// A signature made of the given complete types.
    public init(types: [DBusType]) { self.types = types }

    public init(arrayLiteral elements: DBusType...) { self.types = elements }

    /// Parses and validates signature text, following the specification's limits (255 bytes,
    /// 32 levels of array nesting, 32 levels of struct nesting, basic dictionary keys).
    public init(_ text: String) throws(DBusSignatureError) {
        let bytes = Array(text.utf8)
        guard bytes.count <= 255 else {
            throw DBusSignatureError(signature: text, reason: "longer than 255 bytes")
        }
        var parser = SignatureParser(bytes: bytes, text: text)
        var types: [DBusType] = []
        while parser.position < bytes.count {
            types.append(try parser.parseComplete(arrayDepth: 0, structDepth: 0))
        }
        self.types = types
    }
}

private struct SignatureParser {
    let bytes: [UInt8]
    let text: String
    var position = 0

    func fail(_ reason: String) -> DBusSignatureError {
        DBusSignatureError(signature: text, reason: "\(reason) at offset \(position)")
    }

    mutating func parseComplete(arrayDepth: Int, structDepth: Int) throws(DBusSignatureError) -> DBusType {
        guard position < bytes.count else { throw fail("type expected but signature ended") }
        let code = bytes[position]
        position += 1
        switch code {
        case UInt8(ascii: "y"): return .byte
        case UInt8(ascii: "b"): return .boolean
        case UInt8(ascii: "n"): return .int16
        case UInt8(ascii: "q"): return .uint16
        case UInt8(ascii: "i"): return .int32
        case UInt8(ascii: "u"): return .uint32
        case UInt8(ascii: "x"): return .int64
        case UInt8(ascii: "t"): return .uint64
        case UInt8(ascii: "d"): return .double
        case UInt8(ascii: "s"): return .string
        case UInt8(ascii: "o"): return .objectPath
        case UInt8(ascii: "g"): return .signature
        case UInt8(ascii: "h"): return .unixFD
        case UInt8(ascii: "v"): return .variant
        case UInt8(ascii: "a"):
            guard arrayDepth < 32 else { throw fail("arrays nested deeper than 32") }
            if position < bytes.count, bytes[position] == UInt8(ascii: "{") {
                position += 1
                let key = try parseComplete(arrayDepth: arrayDepth + 1, structDepth: structDepth)
                guard key.isBasic else { throw fail("dictionary key '\(key)' is not a basic type") }
                let value = try parseComplete(arrayDepth: arrayDepth + 1, structDepth: structDepth)
                guard position < bytes.count, bytes[position] == UInt8(ascii: "}") else {
                    throw fail("dictionary entry must hold exactly one key and one value, '}' expected")
                }
                position += 1
                return .dictionary(key: key, value: value)
            }
            return .array(try parseComplete(arrayDepth: arrayDepth + 1, structDepth: structDepth))
        case UInt8(ascii: "("):
            guard structDepth < 32 else { throw fail("structs nested deeper than 32") }
            var fields: [DBusType] = []
            while position < bytes.count, bytes[position] != UInt8(ascii: ")") {
                fields.append(try parseComplete(arrayDepth: arrayDepth, structDepth: structDepth + 1))
            }
            guard position < bytes.count else { throw fail("unterminated struct, ')' expected") }
            guard !fields.isEmpty else { throw fail("empty struct") }
            position += 1
            return .structure(fields)
        default:
            position -= 1
            throw fail("unknown type code '\(String(decoding: [code], as: UTF8.self))'")
        }
    }
}
