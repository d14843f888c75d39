import ControlAPI
import DBus

/// The `io.mwgate.Gateway1` interface: every method, property and its signature.
/// docs/control-api.md documents the same table; keep them in step.
enum ControlInterface {
    static func object(handlers h: ControlHandlers, live: LiveProperties) -> DBusExportedObject {
        typealias P = GatewayControl.Property
        // Every method answers later, beside the calls after it: the calls come from clients
        // that do not wait for each other (mwctl, a watch, the web page), and a scan of several
        // seconds or an export's chunk must not hold a status query.
        func method(_ name: String, in signature: DBusSignature = [], out outSignature: DBusSignature = [],
                    inNames: [String] = [], outNames: [String] = [],
                    _ body: @escaping @Sendable (DBusMethodCall) async throws -> [DBusValue]) -> DBusMethod {
            DBusMethod(name, in: signature, out: outSignature, inNames: inNames, outNames: outNames) { call in
                .later { try await body(call) }
            }
        }
        func json(_ name: String, in signature: DBusSignature = [], inNames: [String] = [],
                  _ body: @escaping @Sendable (DBusMethodCall) async throws -> String) -> DBusMethod {
            method(name, in: signature, out: [.string], inNames: inNames, outNames: ["json"]) { call in
                [.string(try await body(call))]
            }
        }
        func liveProperty(_ name: String, _ type: DBusType) -> DBusProperty {
            DBusProperty(name, type: type) {
                guard let value = await live.value(name) else {
                    throw DBusError(name: DBusError.Name.failed, message: "\(name) is not available yet")
                }
                return value
            }
        }
        let catalogue = h.catalogue
        let methods: [DBusMethod] = [
            json("GetStatus") { _ in try await h.statusJSON() },
            json("ListBoards") { _ in try await h.boardsJSON() },
            json("ScanBoards", in: [.uint32], inNames: ["seconds"]) { call in
                try await h.scan(seconds: try call.decode(UInt32.self))
            },
            method("AddBoard", in: [.string], inNames: ["address"]) { call in
                try await h.addBoard(try call.decode(String.self))
                return []
            },
            method("RemoveBoard", in: [.string], inNames: ["address"]) { call in
                try await h.removeBoard(try call.decode(String.self))
                return []
            },
            method("StartSession", out: [.string], outNames: ["session_id"]) { _ in
                [.string(try await h.startSession())]
            },
            method("StartTimedSession", in: [.uint32], out: [.string], inNames: ["seconds"], outNames: ["session_id"]) { call in
                [.string(try await h.startSession(seconds: try call.decode(UInt32.self)))]
            },
            json("StopSession") { _ in try await h.stopSession() },
            json("ListSessions", in: [.uint32], inNames: ["limit"]) { call in
                try await h.sessionsJSON(limit: try call.decode(UInt32.self))
            },
            json("SubmitSurvey", in: [.string, .dictionary(key: .string, value: .int32)], inNames: ["session_id", "hazards"]) { call in
                let (session, hazards) = try call.decode(String.self, [String: Int32].self)
                return try await h.submitSurvey(sessionID: session, hazards: hazards)
            },
            json("SubmitNoHazard", in: [.string], inNames: ["session_id"]) { call in
                try await h.submitSurvey(sessionID: try call.decode(String.self), hazards: nil)
            },
            json("History", in: [.uint32], inNames: ["days"]) { call in
                try await h.historyJSON(days: try call.decode(UInt32.self))
            },
            method("Export", in: [.string, .string, .uint64, .uint32], out: [.uint64, .array(.byte)],
                       inNames: ["session_id", "format", "offset", "length"], outNames: ["total", "data"]) { call in
                let (session, format, offset, length) = try call.decode(String.self, String.self, UInt64.self, UInt32.self)
                return try await h.export(sessionID: session, format: format, offset: offset, length: length)
            },
            json("SyncStatus") { _ in try await h.syncStatusJSON() },
            json("SyncNow") { _ in try await h.syncNow() },
            method("RetryDead", in: [.string], out: [.uint32], inNames: ["session_id"], outNames: ["requeued"]) { call in
                [.uint32(try await h.retryDead(sessionID: try call.decode(String.self)))]
            },
        ]
        let properties: [DBusProperty] = [
            liveProperty(P.state, .string),
            liveProperty(P.sessionID, .string),
            liveProperty(P.awaitingSurvey, .array(.string)),
            liveProperty(P.boards, StatusMapping.boardsType),
            liveProperty(P.fix, StatusMapping.fixType),
            liveProperty(P.backlog, StatusMapping.backlogType),
            liveProperty(P.clockSynchronised, .boolean),
            DBusProperty(P.hazardCatalogue, type: .array(.string), changeSignal: .none) {
                .array(element: .string, catalogue.map { .string($0) })
            },
            DBusProperty(P.version, type: .uint32, changeSignal: .none) { .uint32(GatewayControl.version) },
        ]
        return DBusExportedObject(DBusInterface(GatewayControl.interface, methods: methods, properties: properties))
    }
}
