import DBus

/// BlueZ's error replies, with the exact names and texts of `src/error.c` (bluez-dbus.md §1.7).
enum BlueZError {
    static func failed(_ message: String) -> DBusError { DBusError(name: "org.bluez.Error.Failed", message: message) }
    static func inProgress() -> DBusError { DBusError(name: "org.bluez.Error.InProgress", message: "In Progress") }
    /// The StartDiscovery variant (`btd_error_busy`).
    static func busy() -> DBusError { DBusError(name: "org.bluez.Error.InProgress", message: "Operation already in progress") }
    static func notReady() -> DBusError { DBusError(name: "org.bluez.Error.NotReady", message: "Resource Not Ready") }
    static func notConnected() -> DBusError { DBusError(name: "org.bluez.Error.NotConnected", message: "Not Connected") }
    static func notPermitted(_ message: String) -> DBusError { DBusError(name: "org.bluez.Error.NotPermitted", message: message) }
    static func notSupported() -> DBusError { DBusError(name: "org.bluez.Error.NotSupported", message: "Operation is not supported") }
    static func invalidArguments(_ message: String = "Invalid arguments in method call") -> DBusError {
        DBusError(name: "org.bluez.Error.InvalidArguments", message: message)
    }
    static func invalidOffset() -> DBusError { DBusError(name: "org.bluez.Error.InvalidOffset", message: "Invalid offset") }
    static func doesNotExist() -> DBusError { DBusError(name: "org.bluez.Error.DoesNotExist", message: "Does Not Exist") }

    /// A refusal from a fault: a bare reason becomes `Failed(reason)`, a dotted error name is
    /// used as is.
    static func refusal(_ text: String) -> DBusError {
        if text.contains(".") && !text.contains(" ") {
            let message = text.hasSuffix("InProgress") ? "In Progress" : "Injected by mwsim"
            return DBusError(name: text, message: message)
        }
        return failed(text)
    }
}
