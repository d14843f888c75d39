import CDBus

/// Encodes a Swift ``DBusMessage`` into a new libdbus message (returned with one reference
/// the caller owns). Everything libdbus would reject with a fatal check failure (bad names,
/// NUL in strings, elements of the wrong type) is checked first and thrown as a Swift error.
enum MessageWriter {
    static func make(_ message: DBusMessage) throws -> OpaquePointer {
        try validate(message)
        guard let raw = try newMessage(message) else {
            throw DBusError(name: DBusError.Name.noMemory, message: "libdbus could not allocate a message")
        }
        var iterator = DBusMessageIter()
        dbus_message_iter_init_append(raw, &iterator)
        for value in message.body {
            guard append(value, to: &iterator) else {
                dbus_message_unref(raw)
                throw DBusError(name: DBusError.Name.noMemory, message: "libdbus could not append \(value.type)")
            }
        }
        return raw
    }

    private static func newMessage(_ message: DBusMessage) throws -> OpaquePointer? {
        let raw: OpaquePointer?
        switch message.kind {
        case .methodCall:
            guard let path = message.path, let member = message.member else {
                throw DBusError(name: DBusError.Name.invalidArgs, message: "a method call needs a path and a member")
            }
            raw = dbus_message_new_method_call(message.destination, path.rawValue, message.interface, member)
            if let raw, message.noReplyExpected { dbus_message_set_no_reply(raw, 1) }
        case .signal:
            guard let path = message.path, let interface = message.interface, let member = message.member else {
                throw DBusError(name: DBusError.Name.invalidArgs, message: "a signal needs a path, an interface and a member")
            }
            raw = dbus_message_new_signal(path.rawValue, interface, member)
            if let raw, let destination = message.destination { dbus_message_set_destination(raw, destination) }
        case .methodReturn, .error:
            // Built from scratch (not from the call) so that replies can be composed on any
            // task after the incoming call's libdbus message is gone.
            raw = dbus_message_new(message.kind == .error ? CDBUS_MESSAGE_TYPE_ERROR : CDBUS_MESSAGE_TYPE_METHOD_RETURN)
            if let raw {
                dbus_message_set_no_reply(raw, 1)
                dbus_message_set_reply_serial(raw, message.replySerial)
                if let destination = message.destination { dbus_message_set_destination(raw, destination) }
                if message.kind == .error { dbus_message_set_error_name(raw, message.errorName ?? DBusError.Name.failed) }
            }
        }
        return raw
    }

    static func validate(_ message: DBusMessage) throws {
        if let destination = message.destination { try DBusNames.validateBusName(destination) }
        if let interface = message.interface { try DBusNames.validateInterface(interface) }
        if let member = message.member { try DBusNames.validateMember(member) }
        if let errorName = message.errorName { try DBusNames.validateErrorName(errorName) }
        if message.kind == .error, message.errorName == nil {
            throw DBusError(name: DBusError.Name.invalidArgs, message: "an error message needs an error name")
        }
        for value in message.body { try validate(value) }
        // Re-parsing enforces the nesting and length limits on the complete signature. A
        // body of up to 255 basic values (most calls) is within both, and skipping the
        // re-parse spares every such call two allocations.
        if message.body.count > 255 || message.body.contains(where: { !$0.type.isBasic }) {
            _ = try DBusSignature(message.signature.description)
        }
    }

    private static func validate(_ value: DBusValue) throws {
        switch value {
        case .string(let text): try DBusNames.validateString(text)
        case .variant(let inner): try validate(inner)
        case .structure(let fields):
            guard !fields.isEmpty else { throw DBusTypeMismatch(expected: "struct with fields", actual: "()") }
            for field in fields { try validate(field) }
        case .array(let element, let items):
            for item in items {
                guard item.type == element else {
                    throw DBusTypeMismatch(expected: element.description, actual: item.type.description,
                                           context: "array element")
                }
                try validate(item)
            }
        case .dictionary(let key, let valueType, let entries):
            guard key.isBasic else {
                throw DBusTypeMismatch(expected: "basic dictionary key", actual: key.description)
            }
            for entry in entries {
                guard entry.key.type == key, entry.value.type == valueType else {
                    throw DBusTypeMismatch(expected: "{\(key)\(valueType)}",
                                           actual: "{\(entry.key.type)\(entry.value.type)}", context: "dictionary entry")
                }
                try validate(entry.key)
                try validate(entry.value)
            }
        default: break
        }
    }

    private static func appendBasic<T: BitwiseCopyable>(_ iterator: inout DBusMessageIter, _ code: Int32, _ value: T) -> Bool {
        withUnsafePointer(to: value) { dbus_message_iter_append_basic(&iterator, code, $0) != 0 }
    }

    private static func appendString(_ iterator: inout DBusMessageIter, _ code: Int32, _ text: String) -> Bool {
        text.withCString { pointer in
            var cString: UnsafePointer<CChar>? = pointer
            return dbus_message_iter_append_basic(&iterator, code, &cString) != 0
        }
    }

    private static func append(_ value: DBusValue, to iterator: inout DBusMessageIter) -> Bool {
        switch value {
        case .byte(let v): return appendBasic(&iterator, CDBUS_TYPE_BYTE, v)
        case .boolean(let v): return appendBasic(&iterator, CDBUS_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0))
        case .int16(let v): return appendBasic(&iterator, CDBUS_TYPE_INT16, v)
        case .uint16(let v): return appendBasic(&iterator, CDBUS_TYPE_UINT16, v)
        case .int32(let v): return appendBasic(&iterator, CDBUS_TYPE_INT32, v)
        case .uint32(let v): return appendBasic(&iterator, CDBUS_TYPE_UINT32, v)
        case .int64(let v): return appendBasic(&iterator, CDBUS_TYPE_INT64, v)
        case .uint64(let v): return appendBasic(&iterator, CDBUS_TYPE_UINT64, v)
        case .double(let v): return appendBasic(&iterator, CDBUS_TYPE_DOUBLE, v)
        case .string(let v): return appendString(&iterator, CDBUS_TYPE_STRING, v)
        case .objectPath(let v): return appendString(&iterator, CDBUS_TYPE_OBJECT_PATH, v.rawValue)
        case .signature(let v): return appendString(&iterator, CDBUS_TYPE_SIGNATURE, v.description)
        case .unixFD(let v):
            // libdbus duplicates the descriptor; the DBusFileDescriptor keeps its own.
            return appendBasic(&iterator, CDBUS_TYPE_UNIX_FD, Int32(v.rawValue))
        case .variant(let inner):
            return container(&iterator, CDBUS_TYPE_VARIANT, inner.type.description) { sub in
                append(inner, to: &sub)
            }
        case .structure(let fields):
            return container(&iterator, CDBUS_TYPE_STRUCT, nil) { sub in
                fields.allSatisfy { append($0, to: &sub) }
            }
        case .array(.byte, let items):
            return container(&iterator, CDBUS_TYPE_ARRAY, "y") { sub in
                let bytes: [UInt8] = items.map { if case .byte(let b) = $0 { b } else { 0 } }
                return bytes.withUnsafeBufferPointer { buffer in
                    var base = buffer.baseAddress
                    return dbus_message_iter_append_fixed_array(&sub, CDBUS_TYPE_BYTE, &base, Int32(buffer.count)) != 0
                }
            }
        case .array(let element, let items):
            return container(&iterator, CDBUS_TYPE_ARRAY, element.description) { sub in
                items.allSatisfy { append($0, to: &sub) }
            }
        case .dictionary(let key, let valueType, let entries):
            return container(&iterator, CDBUS_TYPE_ARRAY, "{\(key)\(valueType)}") { sub in
                entries.allSatisfy { entry in
                    container(&sub, CDBUS_TYPE_DICT_ENTRY, nil) { pair in
                        append(entry.key, to: &pair) && append(entry.value, to: &pair)
                    }
                }
            }
        }
    }

    private static func container(_ iterator: inout DBusMessageIter, _ code: Int32, _ signature: String?,
                                  _ body: (inout DBusMessageIter) -> Bool) -> Bool {
        var sub = DBusMessageIter()
        let opened: Bool
        if let signature {
            opened = signature.withCString { dbus_message_iter_open_container(&iterator, code, $0, &sub) } != 0
        } else {
            opened = dbus_message_iter_open_container(&iterator, code, nil, &sub) != 0
        }
        guard opened else { return false }
        guard body(&sub) else {
            dbus_message_iter_abandon_container(&iterator, &sub)
            return false
        }
        return dbus_message_iter_close_container(&iterator, &sub) != 0
    }
}
