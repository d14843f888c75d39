import DBus

/// Where the gateway's control API lives on the system bus, and the names of its errors.
public enum GatewayControl {
    /// The well-known bus name the daemon owns.
    public static let busName = "io.mwgate.Gateway1"
    /// The one object it exports.
    public static let objectPath: DBusObjectPath = "/io/mwgate/Gateway1"
    /// The interface of that object.
    public static let interface = "io.mwgate.Gateway1"

    /// D-Bus error names replied by the control API; each message names the problem.
    public enum ErrorName {
        /// An argument is malformed (bad address, unknown hazard, bad format, zero limit...).
        public static let invalidArgument = "io.mwgate.Error.InvalidArgument"
        /// No session with that ID is in the buffer (or its data was evicted/expired).
        public static let unknownSession = "io.mwgate.Error.UnknownSession"
        /// StopSession while idle.
        public static let notRecording = "io.mwgate.Error.NotRecording"
        /// StartSession while a session records.
        public static let alreadyRecording = "io.mwgate.Error.AlreadyRecording"
        /// SubmitSurvey for a session that is not waiting for one (or none is waiting).
        public static let notAwaitingSurvey = "io.mwgate.Error.NotAwaitingSurvey"
        /// RemoveBoard for a board the gateway does not run.
        public static let unknownBoard = "io.mwgate.Error.UnknownBoard"
        /// Sync commands while no upstream is configured.
        public static let syncNotConfigured = "io.mwgate.Error.SyncNotConfigured"
        /// The gateway is shutting down.
        public static let shuttingDown = "io.mwgate.Error.ShuttingDown"
        /// Anything else (the buffer cannot be read, an upload failed...).
        public static let failed = "io.mwgate.Error.Failed"
    }

    /// Property names of the interface (all emit PropertiesChanged with their value).
    public enum Property {
        public static let state = "State"
        public static let sessionID = "SessionID"
        public static let awaitingSurvey = "AwaitingSurvey"
        public static let boards = "Boards"
        public static let fix = "Fix"
        public static let backlog = "Backlog"
        public static let clockSynchronised = "ClockSynchronised"
        public static let hazardCatalogue = "HazardCatalogue"
        public static let version = "Version"
    }

    /// The API version reported by the `Version` property.
    public static let version: UInt32 = 1
}
