import DBus

/// How the reconnection logic reacts to a failed BlueZ call (reference bluez-dbus.md §2.3
/// step 6). Derived from the D-Bus error name and, for `Failed`, its message text.
public enum BlueZErrorClass: Hashable, Sendable, CustomStringConvertible {
    /// `Failed: le-connection-abort-by-local`, "Software caused connection abort",
    /// `br-connection-canceled`: RF trouble; retry quickly once the link is seen down.
    case transientAbort
    /// `InProgress`: another operation is pending; do not stack another call.
    case inProgress
    /// `UnknownObject` / `DoesNotExist`: the device object vanished; rescan after a pause.
    /// (`UnknownMethod` too: dbus-python peers answer calls on removed paths with it.)
    case deviceGone
    /// `NotReady` (adapter off or missing).
    case adapterNotReady
    /// `AlreadyConnected`: treat as success.
    case alreadyConnected
    /// `NoReply`, timeouts, `Disconnected`, `ServiceUnknown`: BlueZ did not answer (or left).
    case noReply
    /// `NotPermitted`, `NotAuthorized`, `NotSupported`: the operation is refused as asked.
    case notPermitted
    /// `NotConnected`: the link is already gone.
    case notConnected
    /// `Failed` with any other text, or an unknown error: counts toward the hard-failure limit.
    case failed

    /// Classifies a D-Bus error.
    public init(_ error: DBusError) {
        let message = error.message.lowercased()
        switch error.name {
        case "org.bluez.Error.Failed":
            if message.contains("le-connection-abort-by-local") || message.contains("software caused connection abort")
                || message.contains("br-connection-canceled") || message.contains("connection-abort")
            {
                self = .transientAbort
            } else {
                self = .failed
            }
        case "org.bluez.Error.InProgress": self = .inProgress
        case DBusError.Name.unknownObject, "org.bluez.Error.DoesNotExist", DBusError.Name.unknownMethod:
            self = .deviceGone
        case "org.bluez.Error.NotReady": self = .adapterNotReady
        case "org.bluez.Error.AlreadyConnected": self = .alreadyConnected
        case DBusError.Name.noReply, DBusError.Name.timeout, DBusError.Name.disconnected,
            DBusError.Name.serviceUnknown, DBusError.Name.nameHasNoOwner:
            self = .noReply
        case "org.bluez.Error.NotPermitted", "org.bluez.Error.NotAuthorized", "org.bluez.Error.NotSupported",
            DBusError.Name.accessDenied:
            self = .notPermitted
        case "org.bluez.Error.NotConnected": self = .notConnected
        default: self = .failed
        }
    }

    /// Classifies any error thrown by a BlueZ call (non-D-Bus errors count as `.failed`).
    public init(any error: any Error) {
        if let error = error as? DBusError { self.init(error) } else { self = .failed }
    }

    public var description: String {
        switch self {
        case .transientAbort: "transient connection abort"
        case .inProgress: "operation in progress"
        case .deviceGone: "device object gone"
        case .adapterNotReady: "adapter not ready"
        case .alreadyConnected: "already connected"
        case .noReply: "no reply"
        case .notPermitted: "not permitted"
        case .notConnected: "not connected"
        case .failed: "failed"
        }
    }
}
