import CDBus
import Synchronization

/// Decodes a libdbus message into a Swift ``DBusMessage``. Runs on the connection's I/O
/// thread; libdbus has already validated the wire data, so only our own limits can fail.
enum MessageReader {
    static func read(_ raw: OpaquePointer) throws(DBusTypeMismatch) -> DBusMessage {
        let kind: DBusMessage.Kind
        switch dbus_message_get_type(raw) {
        case CDBUS_MESSAGE_TYPE_METHOD_CALL: kind = .methodCall
        case CDBUS_MESSAGE_TYPE_METHOD_RETURN: kind = .methodReturn
        case CDBUS_MESSAGE_TYPE_ERROR: kind = .error
        default: kind = .signal
        }
        var message = DBusMessage(kind: kind)
        message.sender = string(dbus_message_get_sender(raw))
        message.destination = string(dbus_message_get_destination(raw))
        if let path = string(dbus_message_get_path(raw)) { message.path = DBusObjectPath(validated: path) }
        message.interface = string(dbus_message_get_interface(raw))
        message.member = string(dbus_message_get_member(raw))
        message.errorName = string(dbus_message_get_error_name(raw))
        message.serial = dbus_message_get_serial(raw)
        message.replySerial = dbus_message_get_reply_serial(raw)
        message.noReplyExpected = dbus_message_get_no_reply(raw) != 0
        var iterator = DBusMessageIter()
        if dbus_message_iter_init(raw, &iterator) != 0 {
            message.body = try readAll(&iterator)
        }
        return message
    }

    private static func string(_ pointer: UnsafePointer<CChar>?) -> String? {
        pointer.map { String(cString: $0) }
    }

    private static func readAll(_ iterator: inout DBusMessageIter) throws(DBusTypeMismatch) -> [DBusValue] {
        var values: [DBusValue] = []
        while dbus_message_iter_get_arg_type(&iterator) != CDBUS_TYPE_INVALID {
            values.append(try readOne(&iterator))
            dbus_message_iter_next(&iterator)
        }
        return values
    }

    private static func signatureOf(_ iterator: inout DBusMessageIter) -> String {
        guard let raw = dbus_message_iter_get_signature(&iterator) else { return "" }
        defer { dbus_free(raw) }
        return String(cString: raw)
    }

    /// The value at `iterator` (which stays where it is).
    static func readOne(_ iterator: inout DBusMessageIter) throws(DBusTypeMismatch) -> DBusValue {
        let code = dbus_message_iter_get_arg_type(&iterator)
        var basic = DBusBasicValue()
        switch code {
        case CDBUS_TYPE_BYTE: dbus_message_iter_get_basic(&iterator, &basic); return .byte(basic.byt)
        case CDBUS_TYPE_BOOLEAN: dbus_message_iter_get_basic(&iterator, &basic); return .boolean(basic.bool_val != 0)
        case CDBUS_TYPE_INT16: dbus_message_iter_get_basic(&iterator, &basic); return .int16(basic.i16)
        case CDBUS_TYPE_UINT16: dbus_message_iter_get_basic(&iterator, &basic); return .uint16(basic.u16)
        case CDBUS_TYPE_INT32: dbus_message_iter_get_basic(&iterator, &basic); return .int32(basic.i32)
        case CDBUS_TYPE_UINT32: dbus_message_iter_get_basic(&iterator, &basic); return .uint32(basic.u32)
        case CDBUS_TYPE_INT64: dbus_message_iter_get_basic(&iterator, &basic); return .int64(Int64(basic.i64))
        case CDBUS_TYPE_UINT64: dbus_message_iter_get_basic(&iterator, &basic); return .uint64(UInt64(basic.u64))
        case CDBUS_TYPE_DOUBLE: dbus_message_iter_get_basic(&iterator, &basic); return .double(basic.dbl)
        case CDBUS_TYPE_STRING:
            dbus_message_iter_get_basic(&iterator, &basic)
            return .string(basic.str.map { String(cString: $0) } ?? "")
        case CDBUS_TYPE_OBJECT_PATH:
            dbus_message_iter_get_basic(&iterator, &basic)
            return .objectPath(DBusObjectPath(validated: basic.str.map { String(cString: $0) } ?? "/"))
        case CDBUS_TYPE_SIGNATURE:
            dbus_message_iter_get_basic(&iterator, &basic)
            let text = basic.str.map { String(cString: $0) } ?? ""
            guard let signature = try? DBusSignature(text) else {
                throw DBusTypeMismatch(expected: "valid signature", actual: text)
            }
            return .signature(signature)
        case CDBUS_TYPE_UNIX_FD:
            // libdbus hands out a fresh close-on-exec duplicate that we now own.
            dbus_message_iter_get_basic(&iterator, &basic)
            return .unixFD(DBusFileDescriptor(owning: basic.fd))
        case CDBUS_TYPE_VARIANT:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return .variant(try readOne(&inner))
        case CDBUS_TYPE_STRUCT:
            var inner = DBusMessageIter()
            dbus_message_iter_recurse(&iterator, &inner)
            return .structure(try readAll(&inner))
        case CDBUS_TYPE_ARRAY:
            return try readArray(&iterator)
        default:
            throw DBusTypeMismatch(expected: "a known D-Bus type code", actual: String(code))
        }
    }

    /// The type of a basic type code, nil for containers.
    private static func basicType(_ code: Int32) -> DBusType? {
        switch code {
        case CDBUS_TYPE_BYTE: .byte
        case CDBUS_TYPE_BOOLEAN: .boolean
        case CDBUS_TYPE_INT16: .int16
        case CDBUS_TYPE_UINT16: .uint16
        case CDBUS_TYPE_INT32: .int32
        case CDBUS_TYPE_UINT32: .uint32
        case CDBUS_TYPE_INT64: .int64
        case CDBUS_TYPE_UINT64: .uint64
        case CDBUS_TYPE_DOUBLE: .double
        case CDBUS_TYPE_STRING: .string
        case CDBUS_TYPE_OBJECT_PATH: .objectPath
        case CDBUS_TYPE_SIGNATURE: .signature
        case CDBUS_TYPE_UNIX_FD: .unixFD
        case CDBUS_TYPE_VARIANT: .variant
        default: nil
        }
    }

    /// Container signatures seen before, parsed once (the same few recur in every message).
    private static let parsedSignatures = Mutex<[String: DBusType]>([:])

    /// The array's type: from the element's type code when that is basic (no signature
    /// text to fetch and parse), else from the signature, parsed once per distinct text.
    private static func arrayType(_ iterator: inout DBusMessageIter) throws(DBusTypeMismatch) -> DBusType {
        if let element = basicType(dbus_message_iter_get_element_type(&iterator)) { return .array(element) }
        let text = signatureOf(&iterator)
        if let known = parsedSignatures.withLock({ $0[text] }) { return known }
        let type: DBusType
        do { type = try DBusType(text) } catch {
            throw DBusTypeMismatch(expected: "valid array signature", actual: text)
        }
        parsedSignatures.withLock { cache in
            // Bounded: a peer sending ever new signatures must not grow it without end.
            if cache.count >= 256 { cache.removeAll() }
            cache[text] = type
        }
        return type
    }

    private static func readArray(_ iterator: inout DBusMessageIter) throws(DBusTypeMismatch) -> DBusValue {
        let type = try arrayType(&iterator)
        var inner = DBusMessageIter()
        dbus_message_iter_recurse(&iterator, &inner)
        switch type {
        case .array(.byte):
            // Byte arrays (GATT values) come out in one block rather than element by element.
            var pointer: UnsafeMutableRawPointer?
            var count: Int32 = 0
            if dbus_message_iter_get_arg_type(&inner) == CDBUS_TYPE_BYTE {
                withUnsafeMutablePointer(to: &pointer) { out in
                    dbus_message_iter_get_fixed_array(&inner, out, &count)
                }
            }
            let bytes = UnsafeRawBufferPointer(start: pointer, count: pointer == nil ? 0 : Int(count))
            return .array(element: .byte, bytes.map { .byte($0) })
        case .array(let element):
            return .array(element: element, try readAll(&inner))
        case .dictionary(let key, let value):
            var entries: [DBusDictionaryEntry] = []
            while dbus_message_iter_get_arg_type(&inner) == CDBUS_TYPE_DICT_ENTRY {
                var entry = DBusMessageIter()
                dbus_message_iter_recurse(&inner, &entry)
                let k = try readOne(&entry)
                dbus_message_iter_next(&entry)
                let v = try readOne(&entry)
                entries.append(DBusDictionaryEntry(key: k, value: v))
                dbus_message_iter_next(&inner)
            }
            return .dictionary(key: key, value: value, entries)
        default:
            throw DBusTypeMismatch(expected: "array signature", actual: type.description)
        }
    }
}
