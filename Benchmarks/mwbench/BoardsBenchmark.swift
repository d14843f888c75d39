import BlueZ
import Boards
import Foundation
import MetaWear

/// Boards: CPU per 1,000 gyro samples received through a real dbus-daemon from mwsim (a
/// separate process), for our BoardSession with StartNotify or AcquireNotify. Measures this
/// process (getrusage), dbus-daemon and mwsim (``ProcessCPU``) over the same window.
///
/// `mwbench boards --bus ADDR --delivery startnotify|acquirenotify [--seconds N] [--rate HZ]
///  [--packed] [--coalescing-ms MS] [--signal-coalescing-ms MS] [--label KEY] [--dbus-pid PID] [--sim-pid PID]
///  [--board AA:BB:…]`
/// Prints `key=value` lines; scripts/bench/boards.sh turns them into Markdown.
enum BoardsBenchmark {
    struct Settings {
        var bus: String?
        var delivery = NotificationDelivery.automatic
        var deliveryName = "acquirenotify"
        var seconds = 10.0
        var rate = 800.0
        var packed = true
        var dbusPID: Int32?
        var simPID: Int32?
        var board: BluetoothAddress?
        /// nil: the session's default.
        var coalescing: Duration?
        /// nil: the session's default (StartNotify reads at once).
        var signalCoalescing: Duration?
        /// Prefix of the printed keys (default: the delivery name).
        var label: String?
    }

    static func parse(_ arguments: [String]) -> Settings {
        var settings = Settings()
        var iterator = arguments.makeIterator()
        func value(_ name: String) -> String {
            guard let next = iterator.next() else { fail("mwbench boards: \(name) needs a value") }
            return next
        }
        while let argument = iterator.next() {
            switch argument {
            case "--bus": settings.bus = value(argument)
            case "--delivery":
                settings.deliveryName = value(argument)
                switch settings.deliveryName {
                case "startnotify": settings.delivery = .propertiesChanged
                case "acquirenotify": settings.delivery = .automatic
                default: fail("mwbench boards: --delivery must be startnotify or acquirenotify")
                }
            case "--seconds": settings.seconds = Double(value(argument)) ?? 0
            case "--rate": settings.rate = Double(value(argument)) ?? 0
            case "--packed": settings.packed = true
            case "--single": settings.packed = false
            case "--coalescing-ms": settings.coalescing = .milliseconds(Int(value(argument)) ?? 0)
            case "--signal-coalescing-ms": settings.signalCoalescing = .milliseconds(Int(value(argument)) ?? 0)
            case "--label": settings.label = value(argument)
            case "--dbus-pid": settings.dbusPID = Int32(value(argument))
            case "--sim-pid": settings.simPID = Int32(value(argument))
            case "--board":
                let text = value(argument)
                guard let address = BluetoothAddress(text) else { fail("mwbench boards: '\(text)' is not a Bluetooth address") }
                settings.board = address
            default: fail("mwbench boards: unknown option '\(argument)'")
            }
        }
        guard settings.seconds > 0 else { fail("mwbench boards: --seconds must be > 0") }
        return settings
    }

    static func run(_ arguments: [String]) async {
        let settings = parse(arguments)
        do {
            try await measure(settings)
        } catch {
            fail("boards benchmark: \(error)")
        }
    }

    /// Counts samples on the main loop while the session runs; the window opens once the
    /// stream has settled (first 1 s after streaming starts is skipped).
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var samples = 0
        private var notifications = 0
        func add(_ count: Int) { lock.lock(); samples += count; notifications += 1; lock.unlock() }
        var snapshot: (samples: Int, notifications: Int) { lock.lock(); defer { lock.unlock() }; return (samples, notifications) }
    }

    static func measure(_ settings: Settings) async throws {
        let gyro = try GyroConfiguration(rateHertz: settings.rate, rangeDegreesPerSecond: 2000)
        let configuration = try StreamingConfiguration(gyro: gyro, gyroMode: settings.packed ? .packed : .single,
                                                       allowExceedingLinkBudget: true)
        var options = BoardSessionOptions(configuration: configuration, notificationDelivery: settings.delivery,
                                          batteryInterval: nil, watchButton: false, seed: 1)
        if let coalescing = settings.coalescing { options.notificationCoalescing = coalescing }
        if let coalescing = settings.signalCoalescing { options.signalReadCoalescing = coalescing }
        let client = try await BlueZClient.open(busAddress: settings.bus, discoveryUUIDs: [MetaWearGATT.service])
        let following = Task { await client.run() }
        let address: BluetoothAddress
        if let board = settings.board {
            address = board
        } else {
            guard let found = await firstBoard(client) else { fail("mwbench boards: no MetaWear board seen within 10 s") }
            address = found
        }
        let session = BoardSession(address: address, client: client, options: options)
        let counter = Counter()
        let (streaming, streamingContinuation) = AsyncStream.makeStream(of: Void.self)
        let consumer = Task {
            var announced = false
            for await event in session.events {
                switch event.kind {
                case .sample(.gyro(let samples)): counter.add(samples.count)
                case .state(.streaming):
                    if !announced { streamingContinuation.yield() }
                    announced = true
                case .state(let state): FileHandle.standardError.write(Data("mwbench boards: \(state)\n".utf8))
                default: break
                }
            }
        }
        let running = Task { await session.run() }
        let timeout = Task {
            try await Task.sleep(for: .seconds(30))
            fail("mwbench boards: board did not stream within 30 s")
        }
        for await _ in streaming { break }
        timeout.cancel()
        try await Task.sleep(for: .seconds(1))

        let start = (samples: counter.snapshot, own: ProcessCPU.ownSeconds(), dbus: settings.dbusPID.flatMap(ProcessCPU.seconds),
                     sim: settings.simPID.flatMap(ProcessCPU.seconds), wall: ContinuousClock.now)
        try await Task.sleep(for: .milliseconds(Int64(settings.seconds * 1000)))
        let end = (samples: counter.snapshot, own: ProcessCPU.ownSeconds(), dbus: settings.dbusPID.flatMap(ProcessCPU.seconds),
                   sim: settings.simPID.flatMap(ProcessCPU.seconds), wall: ContinuousClock.now)

        await session.stop()
        await running.value
        await consumer.value
        await client.close()
        await following.value

        let samples = end.samples.samples - start.samples.samples
        let notifications = end.samples.notifications - start.samples.notifications
        let wall = (end.wall - start.wall)
        let wallSeconds = Double(wall.components.seconds) + Double(wall.components.attoseconds) / 1e18
        guard samples > 0 else { fail("mwbench boards: no samples in the measuring window") }
        let own = end.own - start.own
        let perThousand = { (cpu: Double) in cpu * 1000 / Double(samples) * 1000 }  // ms per 1,000 samples
        let prefix = settings.label ?? settings.deliveryName
        print("\(prefix)_samples=\(samples)")
        print("\(prefix)_notifications=\(notifications)")
        print("\(prefix)_seconds=\(String(format: "%.2f", wallSeconds))")
        print("\(prefix)_samples_per_s=\(String(format: "%.0f", Double(samples) / wallSeconds))")
        print("\(prefix)_cpu_s=\(String(format: "%.4f", own))")
        print("\(prefix)_ms_per_1000=\(String(format: "%.3f", perThousand(own)))")
        if let a = start.dbus ?? nil, let b = end.dbus ?? nil {
            print("\(prefix)_dbus_cpu_s=\(String(format: "%.4f", b - a))")
            print("\(prefix)_dbus_ms_per_1000=\(String(format: "%.3f", perThousand(b - a)))")
        }
        if let a = start.sim ?? nil, let b = end.sim ?? nil {
            print("\(prefix)_sim_ms_per_1000=\(String(format: "%.3f", perThousand(b - a)))")
        }
    }

    /// The first board advertising the MetaWear service.
    static func firstBoard(_ client: BlueZClient) async -> BluetoothAddress? {
        let advertisements = await client.advertisements(namePrefix: "MetaWear")
        let search = Task { () -> BluetoothAddress? in
            for await advertisement in advertisements { return advertisement.address }
            return nil
        }
        let timer = Task {
            try? await Task.sleep(for: .seconds(10))
            search.cancel()
        }
        let found = await search.value
        timer.cancel()
        return found
    }
}
