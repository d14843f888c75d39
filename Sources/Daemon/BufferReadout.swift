import Buffer
import ControlAPI
import ControlServer
import DBus
import ExportFormats
import Foundation

/// `mwgated buffer ...`: the control API's history, session list and export read straight from
/// a state directory's buffer, read-only, for a stopped gateway or a copied SD card. mwctl's
/// `--state-dir` runs this, so mwctl itself needs neither the buffer's database code nor the
/// Foundation and ICU it brings (docs/operations.md, Size). The answers are the daemon's own
/// (``BufferQueries``), written as its D-Bus methods return them.
public enum BufferReadout {
    /// What to read.
    public enum Request: Sendable {
        case history(days: UInt32)
        case sessions(limit: UInt32)
        case export(sessionID: String, format: String)
    }

    /// Why nothing was read: a one-line message and the exit status (mwctl's codes: 1 failed,
    /// 2 bad argument, 4 unknown or expired session).
    public struct Failure: Error, Sendable {
        public var message: String
        public var status: Int32
    }

    /// Writes the answer to stdout, or one `mwgated: error:` line to stderr; the exit status.
    public static func answer(_ request: Request, stateDirectory: String) -> Int32 {
        do {
            FileHandle.standardOutput.write(Data(try read(request, stateDirectory: stateDirectory)))
            return 0
        } catch {
            FileHandle.standardError.write(Data("mwgated: error: \(error.message)\n".utf8))
            return error.status
        }
    }

    /// The answer's bytes: JSON for the history and the sessions, the export itself for export.
    public static func read(_ request: Request, stateDirectory: String) throws(Failure) -> [UInt8] {
        let path = BufferStore.path(inStateDirectory: stateDirectory)
        let store: BufferStore
        do {
            store = try BufferStore(readOnlyPath: path, configuration: .init(userID: "", log: { _ in }))
        } catch {
            throw Failure(message: "cannot open \(path): \(error) (check the path and read permission)", status: 1)
        }
        let queries = BufferQueries(store: store)
        do {
            switch request {
            case .history(let days): return Array(try ControlJSON.encode(try queries.history(days: days)).utf8)
            case .sessions(let limit): return Array(try ControlJSON.encode(try queries.sessions(limit: Int(limit))).utf8)
            case .export(let sessionID, let format):
                return try queries.export(sessionID: sessionID, format: try BufferQueries.exportFormat(format))
            }
        } catch let error as DBusError {
            throw failure(error)
        } catch {
            throw Failure(message: "\(error)", status: 1)
        }
    }

    private static func failure(_ error: DBusError) -> Failure {
        let status: Int32 = switch error.name {
        case GatewayControl.ErrorName.unknownSession: 4
        case GatewayControl.ErrorName.invalidArgument: 2
        default: 1
        }
        return Failure(message: error.message, status: status)
    }
}
