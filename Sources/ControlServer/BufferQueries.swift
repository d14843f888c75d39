import Buffer
import ControlAPI
import ExportFormats
import DBus

/// The control API's read-only questions about the buffer (the history, the sessions, one
/// session's export), answered from a store. The daemon answers them over D-Bus; `mwgated
/// buffer` answers them from a stopped gateway's buffer for `mwctl --state-dir`. One
/// implementation, so both give the same answer. Errors carry the API's error names.
public struct BufferQueries: Sendable {
    let store: BufferStore

    /// Questions to `store`.
    public init(store: BufferStore) { self.store = store }

    typealias E = GatewayControl.ErrorName

    /// The last `days` days of the history index, newest first.
    public func history(days: UInt32) throws(DBusError) -> [HistoryDayPayload] {
        guard (1...3660).contains(days) else { throw DBusError(name: E.invalidArgument, message: "days must be 1 to 3660, got \(days)") }
        do {
            return try store.history(days: Int(days)).map {
                HistoryDayPayload(day: $0.day, sessions: $0.sessions, walkingMinutes: $0.walkingMinutes, distanceMetres: $0.distanceMetres,
                                  samples: $0.samples, hazards: $0.hazards, synced: $0.synced, unsynced: $0.unsynced, lost: $0.lost,
                                  missedSamples: $0.missedSamples)
            }
        } catch {
            throw DBusError(name: E.failed, message: "cannot read the history: \(error)")
        }
    }

    /// Sessions in the buffer, newest first.
    public func sessions(limit: Int) throws(DBusError) -> [SessionListingPayload] {
        do {
            return try store.sessions(limit: limit).map {
                SessionListingPayload(sessionID: $0.id, startedAt: $0.startedAt / 1000, state: $0.state, points: $0.points, day: $0.day,
                                      timeSource: $0.timeSource)
            }
        } catch {
            throw DBusError(name: E.failed, message: "cannot read the sessions: \(error)")
        }
    }

    /// The export format named `text` (any case).
    public static func exportFormat(_ text: String) throws(DBusError) -> ExportFormat {
        guard let format = ExportFormat(rawValue: text.lowercased()) else {
            throw DBusError(name: E.invalidArgument, message: "unknown export format '\(text)' (expected \(ExportFormat.spokenList))")
        }
        return format
    }

    /// One session rendered in `format`.
    public func export(sessionID: String, format: ExportFormat) throws(DBusError) -> [UInt8] {
        do {
            return Array(SessionExporter.render(try store.dataset(sessionID: sessionID), format: format).utf8)
        } catch let error as BufferStore.StoreError {
            switch error {
            case .unknownSession, .expired: throw DBusError(name: E.unknownSession, message: error.description)
            default: throw DBusError(name: E.failed, message: error.description)
            }
        } catch {
            throw DBusError(name: E.failed, message: "\(error)")
        }
    }
}
