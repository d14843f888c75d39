/// A Swift type with a fixed D-Bus type that converts to and from ``DBusValue``.
///
/// Conformances: the integer types, `Bool`, `Double`, `String`, ``DBusObjectPath``,
/// ``DBusSignature``, ``DBusFileDescriptor``, arrays and dictionaries of representable types,
/// and ``DBusValue`` itself, which stands for a variant (`v`), so `[String: DBusValue]` is
/// `a{sv}`.
public protocol DBusRepresentable: Sendable {
    /// The D-Bus type of every value of this Swift type.
    static var dbusType: DBusType { get }
    /// Converts from a wire value; throws ``DBusTypeMismatch`` when the type differs.
    init(dbusValue: DBusValue) throws(DBusTypeMismatch)
    /// The wire value.
    var dbusValue: DBusValue { get }
}

extension DBusValue {
    /// The bytes of a byte array (`ay`, also inside a variant), or nil for any other value.
    /// Cheaper than `as([UInt8].self)` where that cost shows (a GATT value per notification).
    public var bytes: [UInt8]? {
        switch self {
        case .variant(let inner):
            return inner.bytes
        case .array(element: .byte, let items):
            var bytes = [UInt8](repeating: 0, count: items.count)
            for index in items.indices {
                guard case .byte(let byte) = items[index] else { return nil }
                bytes[index] = byte
            }
            return bytes
        default:
            return nil
        }
    }

    /// Converts to a Swift type, e.g. `try value.as(String.self)` or
    /// `try value.as([String: DBusValue].self)` for `a{sv}`.
    ///
    /// A variant is unwrapped when the requested type is not itself a variant.
    public func `as`<T: DBusRepresentable>(_ type: T.Type) throws(DBusTypeMismatch) -> T {
        if T.dbusType != .variant, case .variant = self {
            return try T(dbusValue: unwrappingVariants)
        }
        return try T(dbusValue: self)
    }

    /// The fields of a struct value; throws unless it is a struct of `count` fields (any count
    /// when nil).
    public func structFields(count: Int? = nil) throws(DBusTypeMismatch) -> [DBusValue] {
        guard case .structure(let fields) = unwrappingVariants, count == nil || fields.count == count else {
            throw DBusTypeMismatch(expected: count.map { "struct of \($0) fields" } ?? "struct",
                                   actual: unwrappingVariants.type.description)
        }
        return fields
    }

    func mismatch(_ expected: DBusType) -> DBusTypeMismatch {
        DBusTypeMismatch(expected: expected.description, actual: type.description)
    }
}

extension DBusValue: DBusRepresentable {
    /// A `DBusValue` used as a typed value stands for a variant.
    public static var dbusType: DBusType { .variant }
    public init(dbusValue: DBusValue) throws(DBusTypeMismatch) {
        guard case .variant(let inner) = dbusValue else { throw dbusValue.mismatch(.variant) }
        self = inner
    }
    public var dbusValue: DBusValue { .variant(self) }
}

private protocol BasicRepresentable: DBusRepresentable {
    static func extract(_ value: DBusValue) -> Self?
}

extension BasicRepresentable {
    public init(dbusValue: DBusValue) throws(DBusTypeMismatch) {
        guard let value = Self.extract(dbusValue) else { throw dbusValue.mismatch(Self.dbusType) }
        self = value
    }
}

extension UInt8: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .byte }
    public var dbusValue: DBusValue { .byte(self) }
    fileprivate static func extract(_ value: DBusValue) -> UInt8? { if case .byte(let v) = value { v } else { nil } }
}
extension Bool: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .boolean }
    public var dbusValue: DBusValue { .boolean(self) }
    fileprivate static func extract(_ value: DBusValue) -> Bool? { if case .boolean(let v) = value { v } else { nil } }
}
extension Int16: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .int16 }
    public var dbusValue: DBusValue { .int16(self) }
    fileprivate static func extract(_ value: DBusValue) -> Int16? { if case .int16(let v) = value { v } else { nil } }
}
extension UInt16: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .uint16 }
    public var dbusValue: DBusValue { .uint16(self) }
    fileprivate static func extract(_ value: DBusValue) -> UInt16? { if case .uint16(let v) = value { v } else { nil } }
}
extension Int32: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .int32 }
    public var dbusValue: DBusValue { .int32(self) }
    fileprivate static func extract(_ value: DBusValue) -> Int32? { if case .int32(let v) = value { v } else { nil } }
}
extension UInt32: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .uint32 }
    public var dbusValue: DBusValue { .uint32(self) }
    fileprivate static func extract(_ value: DBusValue) -> UInt32? { if case .uint32(let v) = value { v } else { nil } }
}
extension Int64: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .int64 }
    public var dbusValue: DBusValue { .int64(self) }
    fileprivate static func extract(_ value: DBusValue) -> Int64? { if case .int64(let v) = value { v } else { nil } }
}
extension UInt64: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .uint64 }
    public var dbusValue: DBusValue { .uint64(self) }
    fileprivate static func extract(_ value: DBusValue) -> UInt64? { if case .uint64(let v) = value { v } else { nil } }
}
extension Double: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .double }
    public var dbusValue: DBusValue { .double(self) }
    fileprivate static func extract(_ value: DBusValue) -> Double? { if case .double(let v) = value { v } else { nil } }
}
extension String: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .string }
    public var dbusValue: DBusValue { .string(self) }
    fileprivate static func extract(_ value: DBusValue) -> String? { if case .string(let v) = value { v } else { nil } }
}
extension DBusObjectPath: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .objectPath }
    public var dbusValue: DBusValue { .objectPath(self) }
    fileprivate static func extract(_ value: DBusValue) -> DBusObjectPath? {
        if case .objectPath(let v) = value { v } else { nil }
    }
}
extension DBusSignature: DBusRepresentable, BasicRepresentable {
    public static var dbusType: DBusType { .signature }
    public var dbusValue: DBusValue { .signature(self) }
    fileprivate static func extract(_ value: DBusValue) -> DBusSignature? {
        if case .signature(let v) = value { v } else { nil }
    }
}
extension DBusFileDescriptor: DBusRepresentable {
    public static var dbusType: DBusType { .unixFD }
    public var dbusValue: DBusValue { .unixFD(self) }
    public convenience init(dbusValue: DBusValue) throws(DBusTypeMismatch) {
        guard case .unixFD(let fd) = dbusValue else { throw dbusValue.mismatch(.unixFD) }
        // The wire value keeps owning its descriptor; this object gets its own duplicate.
        self.init(owning: fd.duplicate())
    }
}

extension Array: DBusRepresentable where Element: DBusRepresentable {
    public static var dbusType: DBusType { .array(Element.dbusType) }
    public var dbusValue: DBusValue { .array(element: Element.dbusType, map(\.dbusValue)) }
    public init(dbusValue: DBusValue) throws(DBusTypeMismatch) {
        guard case .array(let element, let items) = dbusValue, element == Element.dbusType else {
            throw dbusValue.mismatch(Self.dbusType)
        }
        var result: [Element] = []
        result.reserveCapacity(items.count)
        for item in items { result.append(try Element(dbusValue: item)) }
        self = result
    }
}

extension Dictionary: DBusRepresentable where Key: DBusRepresentable, Value: DBusRepresentable {
    public static var dbusType: DBusType { .dictionary(key: Key.dbusType, value: Value.dbusType) }
    public var dbusValue: DBusValue {
        .dictionary(key: Key.dbusType, value: Value.dbusType,
                    map { DBusDictionaryEntry(key: $0.key.dbusValue, value: $0.value.dbusValue) })
    }
    public init(dbusValue: DBusValue) throws(DBusTypeMismatch) {
        guard case .dictionary(let key, let value, let entries) = dbusValue,
              key == Key.dbusType, value == Value.dbusType
        else { throw dbusValue.mismatch(Self.dbusType) }
        var result: [Key: Value] = [:]
        result.reserveCapacity(entries.count)
        for entry in entries {
            result[try Key(dbusValue: entry.key)] = try Value(dbusValue: entry.value)
        }
        self = result
    }
}
