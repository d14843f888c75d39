import DBus
import MetaWearBoardModel

/// `io.mwgate.Simulator1` at `/io/mwgate/Simulator1`: fault injection and observation for
/// end-to-end tests, on the simulator's control connection (bus name `io.mwgate.Simulator`).
///
/// Boards are numbered from 0 (`u board`):
/// - `DropLink(u board)`: link loss (supervision timeout).
/// - `Stall(u board, d seconds)`: no stream notifications for the period.
/// - `RefuseNextConnect(u board, s error)`: the next Connect fails; `error` is a reason for
///   `org.bluez.Error.Failed` (e.g. `le-connection-abort-by-local`) or a full error name
///   (e.g. `org.bluez.Error.InProgress`).
/// - `VanishDevice(u board)` / `RestoreDevice(u board)`: out of / back in radio range.
/// - `RestartBluetoothd()`: org.bluez released and re-taken, every object rebuilt.
/// - `PowerCycleAdapter()`: Powered false then true.
/// - `DropNotifications(u board, d fraction)`: seeded loss on the link (0 turns it off).
/// - `PressButton(u board)`: button press and release.
/// - `SetReadoutRate(u board, u notificationsPerSecond)`: paces the board's flash-log readouts
///   (1…10000 notifications/s, two entries each) from now on, as `--readout-rate` does at start.
/// - `GetCommandLog(u board) → aay`: every write the central made, in order.
/// - `GetStats(u board) → a{sv}`: samples emitted per sensor, last indices, delivered and
///   dropped notifications (see ``BoardStats``).
/// - `GetDeliveredRuns(u board, s sensor) → a(tttt)`: the stream samples of `sensor` (`gyro`
///   or `accelerometer`) that reached a subscriber, as runs of consecutive board-side indices:
///   first index, last index, and the wall-clock µs (Unix epoch) the first and last were handed
///   over (see ``DeliveredRun``).
/// - `GetMeasuredRuns(u board, s sensor) → a(tttt)`: every sample of `sensor` the board took,
///   streamed or not (while its link was down, stalled or out of range too), as runs with the
///   wall-clock µs the first and last were taken: what backfill from the flash log can recover.
/// - `ListBoards() → a(uoss)`: index, Device1 path, address, profile name.
public enum SimulatorControlInterface {
    /// Interface name.
    public static let interfaceName = "io.mwgate.Simulator1"
    /// Object path.
    public static let path: DBusObjectPath = "/io/mwgate/Simulator1"

    @Sendable static func board(_ call: DBusMethodCall) throws -> Int {
        let index: UInt32 = try call.decode(UInt32.self)
        return Int(index)
    }

    @Sendable static func boardAnd<T: DBusRepresentable>(_ call: DBusMethodCall, _ type: T.Type) throws -> (Int, T) {
        let (index, value) = try call.decode(UInt32.self, T.self)
        return (Int(index), value)
    }

    /// `name(u board, s sensor) → a(tttt)`: a board's runs of samples of one sensor, from `runs`.
    static func runsMethod(_ name: String, _ simulator: BlueZSimulator,
                           _ runs: @escaping @Sendable (BlueZSimulator, Int, SimulatedSensorKind) async throws -> [DeliveredRun]) -> DBusMethod {
        DBusMethod(name, in: [.uint32, .string], out: [.array(.structure([.uint64, .uint64, .uint64, .uint64]))],
                   inNames: ["board", "sensor"], outNames: ["runs"]) { [weak simulator] call in
            guard let simulator else { throw DBusError.disconnected() }
            let (index, sensorName) = try boardAnd(call, String.self)
            guard let sensor = SimulatedSensorKind(rawValue: sensorName) else {
                throw DBusError(name: "org.freedesktop.DBus.Error.InvalidArgs", message: "unknown sensor '\(sensorName)' (gyro or accelerometer)")
            }
            return [.array(element: .structure([.uint64, .uint64, .uint64, .uint64]), try await runs(simulator, index, sensor).map {
                .structure([.uint64($0.first), .uint64($0.last), .uint64($0.firstMicroseconds), .uint64($0.lastMicroseconds)])
            })]
        }
    }

    static func export(on connection: DBusConnection, simulator: BlueZSimulator) async throws {
        let interface = DBusInterface(interfaceName, methods: [
            DBusMethod("DropLink", in: [.uint32], inNames: ["board"]) { [weak simulator] call in
                try await simulator?.dropLink(try board(call)); return []
            },
            DBusMethod("Stall", in: [.uint32, .double], inNames: ["board", "seconds"]) { [weak simulator] call in
                let (index, seconds) = try boardAnd(call, Double.self)
                try await simulator?.stall(index, seconds: seconds); return []
            },
            DBusMethod("RefuseNextConnect", in: [.uint32, .string], inNames: ["board", "error"]) { [weak simulator] call in
                let (index, error) = try boardAnd(call, String.self)
                try await simulator?.refuseNextConnect(index, error: error); return []
            },
            DBusMethod("VanishDevice", in: [.uint32], inNames: ["board"]) { [weak simulator] call in
                try await simulator?.vanishDevice(try board(call)); return []
            },
            DBusMethod("RestoreDevice", in: [.uint32], inNames: ["board"]) { [weak simulator] call in
                try await simulator?.restoreDevice(try board(call)); return []
            },
            DBusMethod("RestartBluetoothd") { [weak simulator] _ in
                try await simulator?.restartBluetoothd(); return []
            },
            DBusMethod("PowerCycleAdapter") { [weak simulator] _ in
                await simulator?.powerCycleAdapter(); return []
            },
            DBusMethod("DropNotifications", in: [.uint32, .double], inNames: ["board", "fraction"]) { [weak simulator] call in
                let (index, fraction) = try boardAnd(call, Double.self)
                try await simulator?.dropNotifications(index, fraction: fraction); return []
            },
            DBusMethod("SetReadoutRate", in: [.uint32, .uint32], inNames: ["board", "notificationsPerSecond"]) { [weak simulator] call in
                let (index, rate) = try boardAnd(call, UInt32.self)
                try await simulator?.setReadoutRate(index, notificationsPerSecond: Int(rate)); return []
            },
            DBusMethod("ResetBoard", in: [.uint32], inNames: ["board"]) { [weak simulator] call in
                try await simulator?.resetBoard(try board(call)); return []
            },
            DBusMethod("PressButton", in: [.uint32], inNames: ["board"]) { [weak simulator] call in
                try await simulator?.pressButton(try board(call)); return []
            },
            DBusMethod("GetCommandLog", in: [.uint32], out: [.array(.array(.byte))], inNames: ["board"], outNames: ["writes"]) { [weak simulator] call in
                let log = try await simulator?.commandLog(try board(call)) ?? []
                return [.array(element: .array(.byte), log.map { .array(element: .byte, $0.map { .byte($0) }) })]
            },
            DBusMethod("GetStats", in: [.uint32], out: [.dictionary(key: .string, value: .variant)], inNames: ["board"],
                       outNames: ["stats"]) { [weak simulator] call in
                guard let simulator else { throw DBusError.disconnected() }
                return [try await simulator.stats(try board(call)).dbusValue]
            },
            runsMethod("GetDeliveredRuns", simulator) { try await $0.deliveredRuns($1, sensor: $2) },
            runsMethod("GetMeasuredRuns", simulator) { try await $0.measuredRuns($1, sensor: $2) },
            DBusMethod("ListBoards", out: [.array(.structure([.uint32, .objectPath, .string, .string]))], outNames: ["boards"]) { [weak simulator] _ in
                guard let simulator else { throw DBusError.disconnected() }
                let boards = await simulator.boardList()
                return [.array(element: .structure([.uint32, .objectPath, .string, .string]), boards.map {
                    .structure([.uint32(UInt32($0.index)), .objectPath($0.path), .string($0.address), .string($0.profile)])
                })]
            },
        ])
        try await connection.export(DBusExportedObject(interface), at: path)
    }
}

extension BlueZSimulator {
    /// Every board: index, Device1 path, address and profile name.
    public func boardList() -> [(index: Int, path: DBusObjectPath, address: String, profile: String)] {
        devices.map { ($0.index, $0.path, $0.address, $0.model.profile.name) }
    }
}
