import DBus
import StatusModel

/// A typed proxy for `io.mwgate.Gateway1`, used by `mwctl` and tests.
///
/// Every method throws the daemon's ``DBusError`` unchanged (its name is one of
/// ``GatewayControl/ErrorName`` or a bus error such as `ServiceUnknown`/`AccessDenied`), so
/// callers can map names to exit codes; a reply of the wrong shape throws
/// ``DBusTypeMismatch``, and a JSON payload that does not decode throws `DecodingError`.
public struct GatewayControlClient: Sendable {
    /// The connection calls go through.
    public let connection: DBusConnection
    /// Destination of calls (the well-known name, or a unique name in tests).
    public let destination: String
    /// How long a call may take before it fails with `NoReply`.
    public var timeout: Duration

    /// A proxy on `connection` for the daemon at `destination`.
    public init(connection: DBusConnection, destination: String = GatewayControl.busName, timeout: Duration = .seconds(30)) {
        self.connection = connection
        self.destination = destination
        self.timeout = timeout
    }

    /// Connects to the system bus (honouring `DBUS_SYSTEM_BUS_ADDRESS`).
    public static func systemBus(timeout: Duration = .seconds(30)) async throws -> GatewayControlClient {
        GatewayControlClient(connection: try await DBusConnection.system(), timeout: timeout)
    }

    // MARK: Status

    /// The whole gateway.
    public func status() async throws -> GatewayStatus {
        try await json(GatewayStatus.self, "GetStatus")
    }

    /// The raw JSON of `GetStatus` (for `--json` output without a decode/encode round trip).
    public func statusJSON() async throws -> String {
        try await string("GetStatus")
    }

    // MARK: Boards

    /// The boards the gateway runs.
    public func boards() async throws -> [BoardStatus] { try await json([BoardStatus].self, "ListBoards") }

    /// Boards advertising during `seconds`.
    public func scan(seconds: UInt32) async throws -> [ScanResultPayload] {
        var proxy = self
        proxy.timeout = .seconds(Int(seconds) + 30)
        return try await proxy.json([ScanResultPayload].self, "ScanBoards", [.uint32(seconds)])
    }

    /// Adds a board by address (`AA:BB:CC:DD:EE:FF`).
    public func addBoard(_ address: String) async throws {
        _ = try await call("AddBoard", [.string(address)])
    }

    /// Stops and removes a board.
    public func removeBoard(_ address: String) async throws {
        _ = try await call("RemoveBoard", [.string(address)])
    }

    // MARK: Sessions

    /// Starts a session; returns its ID.
    public func startSession() async throws -> String { try await string("StartSession") }

    /// Starts a session that ends by itself after `seconds`; returns its ID. Refused when a
    /// board's flash cannot hold that long at a logged rate.
    public func startSession(seconds: UInt32) async throws -> String { try await string("StartTimedSession", [.uint32(seconds)]) }

    /// Stops the recording session. At a rate the boards log to flash the gateway answers once
    /// their logs are downloaded, which may take minutes: this call waits up to 15 minutes.
    public func stopSession() async throws -> SessionEndPayload {
        var proxy = self
        proxy.timeout = max(timeout, .seconds(900))
        return try await proxy.json(SessionEndPayload.self, "StopSession")
    }

    /// Sessions in the buffer, newest first.
    public func sessions(limit: UInt32) async throws -> [SessionListingPayload] {
        try await json([SessionListingPayload].self, "ListSessions", [.uint32(limit)])
    }

    /// Submits hazards for `sessionID` (nil: the oldest session awaiting its survey).
    public func submitSurvey(sessionID: String?, hazards: [String: Int32]) async throws -> SurveyResultPayload {
        try await json(SurveyResultPayload.self, "SubmitSurvey", [.string(sessionID ?? ""), hazards.dbusValue])
    }

    /// Reports that the walk had no hazard.
    public func submitNoHazard(sessionID: String?) async throws -> SurveyResultPayload {
        try await json(SurveyResultPayload.self, "SubmitNoHazard", [.string(sessionID ?? "")])
    }

    // MARK: History and export

    /// The daily summary of the last `days` days.
    public func history(days: UInt32) async throws -> [HistoryDayPayload] {
        try await json([HistoryDayPayload].self, "History", [.uint32(days)])
    }

    /// One slice of a session export: the total size in bytes and up to `length` bytes from `offset`.
    public func exportSlice(sessionID: String, format: String, offset: UInt64, length: UInt32) async throws
        -> (total: UInt64, bytes: [UInt8])
    {
        let reply = try await call("Export", [.string(sessionID), .string(format), .uint64(offset), .uint32(length)])
        let (total, bytes) = try reply.decode(UInt64.self, [UInt8].self)
        return (total, bytes)
    }

    /// A whole session export, fetched in slices; `progress` gets (received, total) after each.
    public func export(sessionID: String, format: String, sliceBytes: UInt32 = 1 << 20,
                       progress: (UInt64, UInt64) -> Void = { _, _ in }) async throws -> [UInt8] {
        var result: [UInt8] = []
        var offset: UInt64 = 0
        while true {
            let (total, bytes) = try await exportSlice(sessionID: sessionID, format: format, offset: offset, length: sliceBytes)
            if result.isEmpty { result.reserveCapacity(Int(clamping: total)) }
            result += bytes
            offset += UInt64(bytes.count)
            progress(offset, total)
            if offset >= total || bytes.isEmpty { return result }
        }
    }

    // MARK: Sync

    /// The upstream sync's state.
    public func syncStatus() async throws -> UpstreamSyncStatus { try await json(UpstreamSyncStatus.self, "SyncStatus") }

    /// Runs one sync pass now and reports it.
    public func syncNow() async throws -> SyncRunPayload {
        var proxy = self
        proxy.timeout = .seconds(300)
        return try await proxy.json(SyncRunPayload.self, "SyncNow")
    }

    /// Puts dead documents (of `sessionID`, or all) back in the queue; returns how many.
    public func retryDead(sessionID: String?) async throws -> UInt32 {
        let reply = try await call("RetryDead", [.string(sessionID ?? "")])
        return try reply.decode(UInt32.self)
    }

    // MARK: Properties

    /// The configured hazard catalogue (empty: any name is accepted).
    public func hazardCatalogue() async throws -> [String] {
        let reply = try await connection.call(destination: destination, path: GatewayControl.objectPath,
                                              interface: DBusStandardInterface.properties, member: "Get",
                                              arguments: [.string(GatewayControl.interface),
                                                          .string(GatewayControl.Property.hazardCatalogue)],
                                              timeout: timeout)
        let value = try reply.decode(DBusValue.self)
        return try value.unwrappingVariants.as([String].self)
    }

    /// PropertiesChanged of the gateway object, for live views.
    public func propertyChanges() async throws -> AsyncThrowingStream<DBusPropertiesChanged, any Error> {
        try await connection.propertiesChanged(sender: destination, pathNamespace: GatewayControl.objectPath,
                                               interface: GatewayControl.interface)
    }

    // MARK: Plumbing

    private func call(_ member: String, _ arguments: [DBusValue] = []) async throws -> DBusMessage {
        try await connection.call(destination: destination, path: GatewayControl.objectPath,
                                  interface: GatewayControl.interface, member: member, arguments: arguments,
                                  timeout: timeout)
    }

    private func string(_ member: String, _ arguments: [DBusValue] = []) async throws -> String {
        try await call(member, arguments).decode(String.self)
    }

    private func json<T: Decodable>(_ type: T.Type, _ member: String, _ arguments: [DBusValue] = []) async throws -> T {
        try ControlJSON.decode(type, from: try await string(member, arguments))
    }
}
