import CDBus

/// A received signal read in place: header fields and arguments become Swift values only
/// when asked for, so a handler that wants one property of a PropertiesChanged pays for that
/// one and not for the whole message.
///
/// Handlers installed with ``DBusConnection/addSignalHandler(matchingAny:onEnd:_:)`` get a
/// view for the duration of the call. It borrows libdbus's message, which is released after
/// dispatch, so the view cannot be copied or kept: call ``signal()`` for a ``DBusSignal``
/// that can.
public struct DBusSignalView: ~Copyable {
    private let raw: OpaquePointer

    init(_ raw: OpaquePointer) { self.raw = raw }

    /// The sender's unique name.
    public var sender: String { Self.string(dbus_message_get_sender(raw)) }
    /// The sender's serial number of this message (consecutive for the messages one
    /// connection sends, in the order it sent them).
    public var serial: UInt32 { dbus_message_get_serial(raw) }
    /// The emitting object's path.
    public var path: DBusObjectPath {
        // libdbus validated the path when it read the message.
        DBusObjectPath(validated: Self.string(dbus_message_get_path(raw), default: "/"))
    }
    public var interface: String { Self.string(dbus_message_get_interface(raw)) }
    public var member: String { Self.string(dbus_message_get_member(raw)) }

    /// The whole signal decoded, to keep beyond the handler call.
    public func signal() throws(DBusTypeMismatch) -> DBusSignal {
        DBusSignal(message: try MessageReader.read(raw))
    }

    /// Argument `index` decoded by itself (the ones before it are skipped, not decoded);
    /// nil when the signal has fewer arguments.
    public func argument(_ index: Int) throws(DBusTypeMismatch) -> DBusValue? {
        var iterator = DBusMessageIter()
        guard moveTo(argument: index, &iterator) else { return nil }
        return try MessageReader.readOne(&iterator)
    }

    /// For `org.freedesktop.DBus.Properties.PropertiesChanged` `(s a{sv} as)`: the new value
    /// of property `name`, decoded by itself; nil when it is not among the changes or the
    /// signal has another shape.
    public func changedProperty(_ name: String) throws(DBusTypeMismatch) -> DBusValue? {
        var value = DBusMessageIter()
        guard findChangedProperty(name, &value) else { return nil }
        return try MessageReader.readOne(&value)
    }

    /// The same for a byte-array property (a GATT characteristic's `Value`), copied out of
    /// the message in one block; nil when it is absent or not an `ay`.
    public func changedBytes(_ name: String) -> [UInt8]? {
        var value = DBusMessageIter()
        guard findChangedProperty(name, &value), dbus_message_iter_get_arg_type(&value) == CDBUS_TYPE_ARRAY,
              dbus_message_iter_get_element_type(&value) == CDBUS_TYPE_BYTE
        else { return nil }
        var elements = DBusMessageIter()
        dbus_message_iter_recurse(&value, &elements)
        var pointer: UnsafeMutableRawPointer?
        var count: Int32 = 0
        if dbus_message_iter_get_arg_type(&elements) == CDBUS_TYPE_BYTE {
            withUnsafeMutablePointer(to: &pointer) { out in dbus_message_iter_get_fixed_array(&elements, out, &count) }
        }
        guard let pointer, count > 0 else { return [] }
        return Array(UnsafeRawBufferPointer(start: pointer, count: Int(count)))
    }

    // MARK: Matching without decoding (I/O thread, for every signal read)

    func senderIs(_ name: String) -> Bool { Self.equal(dbus_message_get_sender(raw), name) }
    func interfaceIs(_ name: String) -> Bool { Self.equal(dbus_message_get_interface(raw), name) }
    func memberIs(_ name: String) -> Bool { Self.equal(dbus_message_get_member(raw), name) }
    func destinationIs(_ name: String) -> Bool { Self.equal(dbus_message_get_destination(raw), name) }
    func pathIs(_ path: DBusObjectPath) -> Bool { Self.equal(dbus_message_get_path(raw), path.rawValue) }

    /// Whether the path is `namespace` or lies below it.
    func pathIsInside(_ namespace: DBusObjectPath) -> Bool {
        guard let text = dbus_message_get_path(raw) else { return false }
        if namespace.rawValue == "/" { return true }
        guard let end = Self.prefixEnd(text, namespace.rawValue) else { return false }
        return text[end] == 0 || text[end] == CChar(UInt8(ascii: "/"))
    }

    /// Whether argument `index` is a string equal to `expected` (the `argN` match key).
    func stringArgument(_ index: Int, is expected: String) -> Bool {
        var iterator = DBusMessageIter()
        guard moveTo(argument: index, &iterator), dbus_message_iter_get_arg_type(&iterator) == CDBUS_TYPE_STRING
        else { return false }
        var basic = DBusBasicValue()
        dbus_message_iter_get_basic(&iterator, &basic)
        return Self.equal(basic.str, expected)
    }

    /// Argument `index` as text when it is a string or an object path (the `argNpath` key).
    func pathLikeArgument(_ index: Int) -> String? {
        var iterator = DBusMessageIter()
        guard moveTo(argument: index, &iterator) else { return nil }
        let type = dbus_message_iter_get_arg_type(&iterator)
        guard type == CDBUS_TYPE_STRING || type == CDBUS_TYPE_OBJECT_PATH else { return nil }
        var basic = DBusBasicValue()
        dbus_message_iter_get_basic(&iterator, &basic)
        return Self.string(basic.str)
    }

    // MARK: Reading in place

    private func moveTo(argument index: Int, _ iterator: inout DBusMessageIter) -> Bool {
        guard index >= 0, dbus_message_iter_init(raw, &iterator) != 0 else { return false }
        for _ in 0..<index where dbus_message_iter_next(&iterator) == 0 { return false }
        return dbus_message_iter_get_arg_type(&iterator) != CDBUS_TYPE_INVALID
    }

    /// Leaves `value` on the variant's content of entry `name` in argument 1 (`a{sv}`).
    private func findChangedProperty(_ name: String, _ value: inout DBusMessageIter) -> Bool {
        var changes = DBusMessageIter()
        guard moveTo(argument: 1, &changes), dbus_message_iter_get_arg_type(&changes) == CDBUS_TYPE_ARRAY,
              dbus_message_iter_get_element_type(&changes) == CDBUS_TYPE_DICT_ENTRY
        else { return false }
        var entries = DBusMessageIter()
        dbus_message_iter_recurse(&changes, &entries)
        while dbus_message_iter_get_arg_type(&entries) == CDBUS_TYPE_DICT_ENTRY {
            var entry = DBusMessageIter()
            dbus_message_iter_recurse(&entries, &entry)
            if dbus_message_iter_get_arg_type(&entry) == CDBUS_TYPE_STRING {
                var key = DBusBasicValue()
                dbus_message_iter_get_basic(&entry, &key)
                if Self.equal(key.str, name), dbus_message_iter_next(&entry) != 0,
                   dbus_message_iter_get_arg_type(&entry) == CDBUS_TYPE_VARIANT
                {
                    dbus_message_iter_recurse(&entry, &value)
                    return true
                }
            }
            dbus_message_iter_next(&entries)
        }
        return false
    }

    private static func string(_ text: UnsafePointer<CChar>?, default fallback: String = "") -> String {
        text.map { String(cString: $0) } ?? fallback
    }

    /// Whether the C string `text` equals `string`, without making a Swift string of it.
    /// D-Bus strings hold no NUL, so the terminator ends the comparison.
    static func equal(_ text: UnsafePointer<CChar>?, _ string: String) -> Bool {
        guard let text, let end = prefixEnd(text, string) else { return false }
        return text[end] == 0
    }

    /// The index in `text` just after `prefix` when `text` starts with it.
    private static func prefixEnd(_ text: UnsafePointer<CChar>, _ prefix: String) -> Int? {
        var index = 0
        for byte in prefix.utf8 {
            // A NUL in `prefix` would match the terminator and read past it.
            guard byte != 0, UInt8(bitPattern: text[index]) == byte else { return nil }
            index += 1
        }
        return index
    }
}
