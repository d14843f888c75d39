import ArgumentParser
import Buffer
import ControlAPI
import Foundation

/// `--state-dir DIR` for `history` and `export`: read the buffer database directly,
/// read-only, without the daemon (a stopped gateway, a copied SD card). Needs read access to
/// DIR/buffer.sqlite; without the option both commands ask the daemon over D-Bus.
struct OfflineOption: ParsableArguments {
    @Option(name: .customLong("state-dir"),
            help: ArgumentHelp("Read the buffer in DIR directly instead of asking the daemon (offline).", valueName: "DIR"))
    var stateDirectory: String?

    /// Opens the buffer read-only, or exits with a one-line error.
    func openBuffer(_ directory: String) throws -> BufferStore {
        let path = BufferStore.path(inStateDirectory: directory)
        do {
            return try BufferStore(readOnlyPath: path, configuration: .init(userID: "", log: { _ in }))
        } catch {
            throw MWCtlExit.fail("cannot open \(path): \(error) (check the path and read permission)", MWCtlExit.failed)
        }
    }

    func history(days: UInt32) throws -> [HistoryDayPayload]? {
        guard let stateDirectory else { return nil }
        let store = try openBuffer(stateDirectory)
        do {
            return try store.history(days: Int(days)).map {
                HistoryDayPayload(day: $0.day, sessions: $0.sessions, walkingMinutes: $0.walkingMinutes, distanceMetres: $0.distanceMetres,
                                  samples: $0.samples, hazards: $0.hazards, synced: $0.synced, unsynced: $0.unsynced, lost: $0.lost,
                              missedSamples: $0.missedSamples)
            }
        } catch {
            throw MWCtlExit.fail("cannot read history: \(error)", MWCtlExit.failed)
        }
    }

    func export(sessionID: String, format: String) throws -> [UInt8]? {
        guard let stateDirectory else { return nil }
        guard let format = ExportFormat(rawValue: format) else {
            throw MWCtlExit.fail("unknown format '\(format)' (expected \(ExportFormat.spokenList))", MWCtlExit.usage)
        }
        let store = try openBuffer(stateDirectory)
        do {
            return Array(SessionExporter.render(try store.dataset(sessionID: sessionID), format: format).utf8)
        } catch let error as BufferStore.StoreError {
            switch error {
            case .unknownSession, .expired: throw MWCtlExit.fail("\(error)", MWCtlExit.notFound)
            default: throw MWCtlExit.fail("\(error)", MWCtlExit.failed)
            }
        }
    }
}
