import BlueZ
import Boards
import Buffer
import ControlAPI
import ExportFormats
import DBus
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Gateway
import Recording
import StatusModel

/// The method implementations of `io.mwgate.Gateway1`: validate, call the gateway, map its
/// refusals to the API's error names.
final class ControlHandlers: Sendable {
    let pipeline: RecordingPipeline
    let store: BufferStore
    let manager: BoardManager
    let sync: (any SyncControl)?
    let catalogue: [String]
    let budget: BufferBudget
    let stateDirectory: String
    private let exports = ExportCache()

    /// The largest slice `Export` returns at once (the system bus caps messages at 128 MiB;
    /// smaller slices keep the daemon responsive and let the client show progress).
    static let maximumSlice: UInt32 = 8 << 20

    init(gateway: Gateway, sync: (any SyncControl)?) {
        pipeline = gateway.pipeline
        store = gateway.store
        manager = gateway.boards.manager
        self.sync = sync
        catalogue = gateway.settings.hazardCatalogue
        budget = gateway.settings.budget
        stateDirectory = gateway.settings.stateDirectory
    }

    typealias E = GatewayControl.ErrorName

    static func error(_ name: String, _ message: String) -> DBusError { DBusError(name: name, message: message) }

    // MARK: Status

    func statusJSON() async throws -> String {
        var status = await pipeline.status
        // The pipeline re-reads the backlog on its clock; a command answers with the buffer's now.
        if let fresh = try? store.backlogStats() { status.backlog = BacklogStatus(fresh) }
        status.boards = await runningBoards(status.boards)
        status.sync = await sync?.syncStatus() ?? .notConfigured
        status.storage = storage()
        return try ControlJSON.encode(status)
    }

    func storage() -> StorageStatus {
        var stats = statvfs()
        let free: Int64? = statvfs(stateDirectory, &stats) == 0 ? Int64(stats.f_bavail) * Int64(stats.f_frsize) : nil
        let sizes = BufferStore.files(inStateDirectory: stateDirectory).compactMap {
            (try? FileManager.default.attributesOfItem(atPath: $0))?[.size] as? NSNumber
        }
        return StorageStatus(stateDirectory: stateDirectory, freeBytes: free,
                              bufferBytes: sizes.isEmpty ? nil : sizes.reduce(0) { $0 + $1.int64Value },
                              budgetMaxBytes: budget.maxBytes, budgetMinFreeBytes: budget.minFreeBytes)
    }

    // MARK: Boards

    func boardsJSON() async throws -> String {
        try ControlJSON.encode(await runningBoards(await pipeline.status.boards))
    }

    /// The pipeline remembers every board it saw; the API shows those the manager runs.
    func runningBoards(_ boards: [BoardStatus]) async -> [BoardStatus] {
        let running = Set(await manager.boards.map(\.rawValue))
        return boards.filter { running.contains($0.address) }
    }

    func scan(seconds: UInt32) async throws -> String {
        guard (1...120).contains(seconds) else {
            throw Self.error(E.invalidArgument, "scan duration must be 1 to 120 seconds, got \(seconds)")
        }
        let running = Set(await manager.boards)
        let advertisements = await manager.client.advertisements(namePrefix: "MetaWear")
        var seen: [BluetoothAddress: Advertisement] = [:]
        // Collect until the window closes; the stream itself never ends while BlueZ runs.
        await withTaskGroup(of: Void.self) { group in
            let collector = Collector()
            group.addTask {
                for await advertisement in advertisements { await collector.add(advertisement) }
            }
            try? await Task.sleep(for: .seconds(Int(seconds)))
            group.cancelAll()
            seen = await collector.found
        }
        let results = seen.values.sorted { $0.address < $1.address }.map {
            ScanResultPayload(address: $0.address.rawValue, name: $0.name, rssi: $0.rssi.map(Int.init),
                              added: running.contains($0.address))
        }
        return try ControlJSON.encode(results)
    }

    func addBoard(_ text: String) async throws {
        let address = try Self.address(text)
        await manager.add(address)
    }

    func removeBoard(_ text: String) async throws {
        let address = try Self.address(text)
        guard await manager.boards.contains(address) else {
            throw Self.error(E.unknownBoard, "board \(address.rawValue) is not run by the gateway (see ListBoards)")
        }
        await manager.remove(address)
    }

    static func address(_ text: String) throws -> BluetoothAddress {
        guard let address = BluetoothAddress(text) else {
            throw error(E.invalidArgument, "'\(text)' is not a Bluetooth address (expected AA:BB:CC:DD:EE:FF)")
        }
        return address
    }

    // MARK: Sessions

    /// Starts a session, ending by itself after `seconds` when given (0 is refused).
    func startSession(seconds: UInt32? = nil) async throws -> String {
        if seconds == 0 { throw Self.error(E.invalidArgument, "a session length must be at least 1 second") }
        let status = await pipeline.status
        if status.session.isRecording {
            throw Self.error(E.alreadyRecording, "session \(status.session.sessionID ?? "?") is already recording; stop it first")
        }
        do { return try await pipeline.startSession(duration: seconds.map(Double.init)) } catch { throw Self.refusal(error) }
    }

    func stopSession() async throws -> String {
        guard await pipeline.status.session.isRecording else {
            throw Self.error(E.notRecording, "no session is recording")
        }
        let end: SessionEnd
        do { end = try await pipeline.stopSession() } catch { throw Self.refusal(error) }
        return try ControlJSON.encode(SessionEndPayload(
            sessionID: end.sessionID, endedAt: end.endedAt / 1000, trigger: end.trigger.description, boards: end.boards,
            points: end.pointCount, distanceMetres: end.distance, timeSource: end.timeSource.rawValue))
    }

    func sessionsJSON(limit: UInt32) async throws -> String {
        guard (1...10_000).contains(limit) else {
            throw Self.error(E.invalidArgument, "limit must be 1 to 10000, got \(limit)")
        }
        return try ControlJSON.encode(try sessions(limit: Int(limit)))
    }

    /// Sessions in the buffer, newest first.
    func sessions(limit: Int) throws -> [SessionListingPayload] {
        try BufferQueries(store: store).sessions(limit: limit)
    }

    /// How long a survey waits for the flash-log backfill of gaps its session's stop came too
    /// early for: well within a D-Bus call's 25 s, and about a download of a minute's log.
    static let surveyBackfillWait = Duration.seconds(15)

    func submitSurvey(sessionID: String, hazards: [String: Int32]?) async throws -> String {
        let survey: HazardSurvey
        if let hazards {
            guard !hazards.isEmpty else {
                throw Self.error(E.invalidArgument, "no hazard given; call SubmitNoHazard to report a walk without hazards")
            }
            // An empty name would print as nothing in the errors below ("unknown hazard  (known…")).
            guard !hazards.keys.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) else {
                throw Self.error(E.invalidArgument, "a hazard name is empty; name one of \(catalogue.isEmpty ? "the hazards" : catalogue.joined(separator: ", "))")
            }
            for (name, intensity) in hazards where intensity < 1 {
                throw Self.error(E.invalidArgument, "hazard \(name) has intensity \(intensity); intensities start at 1")
            }
            if !catalogue.isEmpty {
                let unknown = hazards.keys.filter { !catalogue.contains($0) }.sorted()
                guard unknown.isEmpty else {
                    throw Self.error(E.invalidArgument, "unknown hazard \(unknown.joined(separator: ", ")) (known: \(catalogue.joined(separator: ", ")))")
                }
            }
            survey = .hazards(hazards.mapValues(Int.init))
        } else {
            survey = .noHazard
        }
        let awaiting = await pipeline.awaitingSurvey
        let target: String
        if sessionID.isEmpty {
            guard let oldest = awaiting.first else { throw Self.error(E.notAwaitingSurvey, "no session is awaiting a survey") }
            target = oldest
        } else {
            target = sessionID
            if !awaiting.contains(sessionID) {
                let known = (try? sessions(limit: 100_000))?.first { $0.sessionID == sessionID }
                guard let known else { throw Self.error(E.unknownSession, "no session \(sessionID) in the buffer") }
                throw Self.error(E.notAwaitingSurvey, "session \(sessionID) is not awaiting a survey (it is \(known.state))")
            }
        }
        let record: RecordsDocument
        do {
            record = try await pipeline.submitSurvey(survey, sessionID: target, waitingForBackfillAtMost: Self.surveyBackfillWait)
        } catch { throw Self.refusal(error) }
        let map: [String: Int]
        if case .hazards(let h) = record.survey { map = h } else { map = [:] }
        return try ControlJSON.encode(SurveyResultPayload(
            sessionID: record.sessionID, document: record.name, points: record.pointCount, chunks: record.gscopeData.count,
            hazards: map, noHazard: record.survey == .noHazard))
    }

    /// A refused pipeline command as a D-Bus error.
    static func refusal(_ error: any Error) -> DBusError {
        let text = "\(error)"
        if text.contains("shutting down") { return Self.error(E.shuttingDown, text) }
        if text.contains("unknown hazard") || text.contains("invalid survey") { return Self.error(E.invalidArgument, text) }
        if text.contains("not awaiting") || text.contains("no session is awaiting") { return Self.error(E.notAwaitingSurvey, text) }
        if text.contains("already") { return Self.error(E.alreadyRecording, text) }
        if text.contains("not recording") || text.contains("no session is recording") { return Self.error(E.notRecording, text) }
        return Self.error(E.failed, text)
    }

    // MARK: History and export

    func historyJSON(days: UInt32) async throws -> String {
        try ControlJSON.encode(try BufferQueries(store: store).history(days: days))
    }

    func export(sessionID: String, format text: String, offset: UInt64, length: UInt32) async throws -> [DBusValue] {
        let format = try BufferQueries.exportFormat(text)
        guard length > 0 else { throw Self.error(E.invalidArgument, "length must be at least 1") }
        let queries = BufferQueries(store: store)
        let bytes = try await exports.rendering(sessionID: sessionID, format: format, fresh: offset == 0) {
            try queries.export(sessionID: sessionID, format: format)
        }
        guard offset <= UInt64(bytes.count) else {
            throw Self.error(E.invalidArgument, "offset \(offset) is past the end of the export (\(bytes.count) bytes)")
        }
        let start = Int(offset)
        let end = min(bytes.count, start + Int(min(length, Self.maximumSlice)))
        return [.uint64(UInt64(bytes.count)), .array(element: .byte, bytes[start..<end].map { .byte($0) })]
    }

    // MARK: Sync

    func syncStatusJSON() async throws -> String {
        try ControlJSON.encode(await sync?.syncStatus() ?? .notConfigured)
    }

    func syncNow() async throws -> String {
        guard let sync else { throw Self.error(E.syncNotConfigured, "no upstream is configured ([upstream] in the configuration)") }
        do { return try ControlJSON.encode(try await sync.syncNow()) } catch let error as DBusError { throw error } catch {
            throw Self.error(E.failed, "sync failed: \(error)")
        }
    }

    func retryDead(sessionID: String) async throws -> UInt32 {
        let session = sessionID.isEmpty ? nil : sessionID
        if let session, (try? sessions(limit: 100_000))?.contains(where: { $0.sessionID == session }) != true {
            throw Self.error(E.unknownSession, "no session \(session) in the buffer")
        }
        do {
            // Without an upstream the buffer is still requeued, ready for when one is configured
            // (a FULL-synchronous write: off the cooperative pool, as the uploader's own is).
            let count: Int
            if let sync {
                count = try await sync.requeueDead(sessionID: session)
            } else {
                let store = store
                count = try await BufferWork.run { try store.requeueDead(sessionID: session) }
            }
            return UInt32(clamping: count)
        } catch {
            throw Self.error(E.failed, "cannot requeue dead documents: \(error)")
        }
    }
}

/// Collects advertisements by address (newest wins).
private actor Collector {
    var found: [BluetoothAddress: Advertisement] = [:]
    func add(_ advertisement: Advertisement) { found[advertisement.address] = advertisement }
}

/// The last export rendered, so a client can fetch it slice by slice without re-rendering.
private actor ExportCache {
    private var key: String?
    private var bytes: [UInt8] = []

    func rendering(sessionID: String, format: ExportFormat, fresh: Bool,
                   render: @Sendable () throws -> [UInt8]) throws -> [UInt8] {
        let wanted = sessionID + "\u{1}" + format.rawValue
        if !fresh, key == wanted { return bytes }
        bytes = try render()
        key = wanted
        return bytes
    }
}
