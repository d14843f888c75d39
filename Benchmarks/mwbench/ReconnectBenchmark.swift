import BlueZ
import Boards
import DBus
import Foundation
import MetaWear

/// Reconnect: how soon samples flow again after a link drop, for a board whose configuration
/// the session already knows (issue 18 defect 3: resume within 100 ms of services resolved).
/// mwsim (a separate process) drops the link of a board streaming 100 Hz gyro `--drops` times;
/// for each, the time from `ServicesResolved=true` (and from `Connected=true`) on our BlueZ
/// client's mirror to the first gyro sample the session hands on after it, how long the link
/// was down (`Connected` false -> true), and the samples lost against that time (issue 18
/// part 3: lost <= down + 100 ms), counted from the sample numbers mwsim's checkable signal
/// carries.
///
/// `mwbench reconnect --bus ADDR --board AA:BB:… [--drops N] [--delivery startnotify|acquirenotify]`
/// Prints `reconnect_*` key=value lines; scripts/bench/boards.sh puts them in its section.
enum ReconnectBenchmark {
    /// The instants the benchmark waits for, shared by the event consumers.
    final class Marks: @unchecked Sendable {
        private let lock = NSLock()
        private var resolved: ContinuousClock.Instant?
        private var connected: ContinuousClock.Instant?
        private var disconnected: ContinuousClock.Instant?
        private var firstSample: ContinuousClock.Instant?
        private var samples = 0
        /// The board's sample number (mwsim's checkable signal carries it in x, mod 2^16) of
        /// the last sample handed on, and the holes in that numbering: one per link drop.
        private var lastIndex: UInt16?
        private var holes: [Int] = []

        func linkChanged(connected isConnected: Bool?, resolved isResolved: Bool?) {
            lock.withLock {
                if isConnected == false, disconnected == nil { disconnected = .now }
                if isConnected == true, connected == nil { connected = .now }
                if isResolved == true, resolved == nil { resolved = .now }
            }
        }

        func sample(_ samples: MotionSamples) {
            lock.withLock {
                self.samples += samples.count
                if connected != nil, firstSample == nil { firstSample = .now }
                for i in samples.indices {
                    let index = UInt16(bitPattern: samples.raw(i).x)
                    if let lastIndex, index &- lastIndex > 1, index &- lastIndex < 0x8000 {
                        holes.append(Int(index &- lastIndex) - 1)
                    }
                    lastIndex = index
                }
            }
        }

        func reset() { lock.withLock { resolved = nil; connected = nil; disconnected = nil; firstSample = nil } }
        var sampleCount: Int { lock.withLock { samples } }
        /// Samples missing between consecutive samples handed on, one entry per hole.
        var missing: [Int] { lock.withLock { holes } }
        /// One drop's timeline once the link is back and a sample came after it.
        var recovery: Recovery? {
            lock.withLock {
                guard let connected, let firstSample, firstSample >= connected else { return nil }
                return Recovery(linkDown: disconnected.map { connected - $0 },
                                fromResolved: resolved.map { firstSample - $0 },
                                fromConnected: firstSample - connected)
            }
        }
    }

    /// One drop as our BlueZ client's mirror saw it.
    struct Recovery {
        /// `Connected=false` -> `Connected=true`.
        var linkDown: Duration?
        /// `ServicesResolved=true` -> the first sample handed on (nil: none before it).
        var fromResolved: Duration?
        /// `Connected=true` -> the first sample handed on.
        var fromConnected: Duration
    }

    static func run(_ arguments: [String]) async {
        var bus: String?
        var board: BluetoothAddress?
        var drops = 10
        var delivery = NotificationDelivery.automatic
        var iterator = arguments.makeIterator()
        func value(_ name: String) -> String {
            guard let next = iterator.next() else { fail("mwbench reconnect: \(name) needs a value") }
            return next
        }
        while let argument = iterator.next() {
            switch argument {
            case "--bus": bus = value(argument)
            case "--board": board = BluetoothAddress(value(argument))
            case "--drops": drops = Int(value(argument)) ?? 0
            case "--delivery": delivery = value(argument) == "startnotify" ? .propertiesChanged : .automatic
            default: fail("mwbench reconnect: unknown option '\(argument)'")
            }
        }
        guard let board, drops > 0 else { fail("mwbench reconnect: --board and --drops > 0 are required") }
        do {
            try await measure(bus: bus, board: board, drops: drops, delivery: delivery)
        } catch {
            fail("reconnect benchmark: \(error)")
        }
    }

    static func measure(bus: String?, board: BluetoothAddress, drops: Int, delivery: NotificationDelivery) async throws {
        let configuration = try StreamingConfiguration(gyro: try GyroConfiguration(rateHertz: 100, rangeDegreesPerSecond: 2000))
        let options = BoardSessionOptions(configuration: configuration, notificationDelivery: delivery,
                                          batteryInterval: nil, watchButton: false, seed: 1)
        let client = try await BlueZClient.open(busAddress: bus, discoveryUUIDs: [MetaWearGATT.service])
        let session = BoardSession(address: board, client: client, options: options)
        let marks = Marks()
        let changes = await client.changes(for: "the reconnect benchmark")
        var fromResolved: [Double] = []
        var fromConnected: [Double] = []
        var lostMinusDown: [Double] = []
        var linkDown: [Double] = []
        var lost: [Double] = []
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            group.addTask { await session.run() }
            group.addTask {
                for await event in session.events {
                    if case .sample(.gyro(let samples)) = event.kind { marks.sample(samples) }
                }
            }
            group.addTask {
                for await change in changes {
                    guard case .object(.propertiesChanged(_, BlueZNames.device, let changed, _)) = change else { continue }
                    marks.linkChanged(connected: try? changed["Connected"]?.as(Bool.self),
                                      resolved: try? changed["ServicesResolved"]?.as(Bool.self))
                }
            }
            try await waitFor("streaming", within: .seconds(30)) { marks.sampleCount > 0 }
            let simulator: DBusObjectPath = "/io/mwgate/Simulator1"
            for drop in 1...drops {
                try await Task.sleep(for: .seconds(1))
                marks.reset()
                let holesBefore = marks.missing.count
                _ = try await client.connection.call(destination: "io.mwgate.Simulator", path: simulator,
                                                     interface: "io.mwgate.Simulator1", member: "DropLink",
                                                     arguments: [.uint32(0)], timeout: .seconds(5))
                try await waitFor("samples after drop \(drop)", within: .seconds(20)) { marks.recovery != nil }
                // Some samples after the link came back, so the hole of this drop is closed.
                let enough = marks.sampleCount + 20
                try await waitFor("samples after drop \(drop)", within: .seconds(20)) { marks.sampleCount >= enough }
                guard let recovery = marks.recovery else { continue }
                if let resolved = recovery.fromResolved { fromResolved.append(milliseconds(resolved)) }
                fromConnected.append(milliseconds(recovery.fromConnected))
                // At 100 Hz a missing sample is 10 ms of the board's stream.
                let missing = Double(marks.missing.dropFirst(holesBefore).reduce(0, +)) * 10
                lost.append(missing)
                if let down = recovery.linkDown {
                    linkDown.append(milliseconds(down))
                    lostMinusDown.append(missing - milliseconds(down))
                }
            }
            await session.stop()
            await client.close()
            group.cancelAll()
        }
        print("reconnect_drops=\(fromConnected.count)")
        print("reconnect_link_down_ms_median=\(format(median(linkDown)))")
        print("reconnect_lost_ms_median=\(format(median(lost)))")
        print("reconnect_lost_minus_down_ms_median=\(format(median(lostMinusDown)))")
        print("reconnect_lost_minus_down_ms_max=\(format(lostMinusDown.max() ?? 0))")
        print("reconnect_resolved_to_sample_ms_median=\(format(median(fromResolved)))")
        print("reconnect_resolved_to_sample_ms_max=\(format(fromResolved.max() ?? 0))")
        print("reconnect_connected_to_sample_ms_median=\(format(median(fromConnected)))")
        print("reconnect_connected_to_sample_ms_max=\(format(fromConnected.max() ?? 0))")
    }

    private static func waitFor(_ what: String, within limit: Duration, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while !condition() {
            guard ContinuousClock.now < deadline else { fail("mwbench reconnect: no \(what) within \(limit)") }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) / 1e15
    }

    private static func median(_ values: [Double]) -> Double {
        guard !values.isEmpty else { return 0 }
        let sorted = values.sorted()
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }

    private static func format(_ value: Double) -> String { String(format: "%.1f", value) }
}
