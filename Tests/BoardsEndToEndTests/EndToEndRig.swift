import BlueZ
@testable import BlueZSimulator
import Boards
import DBus
import Foundation
import MetaWear
import MetaWearBoardModel
import TestSupport
import Testing

/// A private dbus-daemon with the BlueZ simulator in-process and our BlueZ client on it: the
/// whole Boards stack against simulated MetaWear boards, over a real bus.
final class EndToEndRig: @unchecked Sendable {
    let bus: TestBus
    let simulator: BlueZSimulator
    let client: BlueZClient
    let simulatorLog: LockedLines

    private init(bus: TestBus, simulator: BlueZSimulator, client: BlueZClient, simulatorLog: LockedLines) {
        self.bus = bus
        self.simulator = simulator
        self.client = client
        self.simulatorLog = simulatorLog
    }

    /// Runs `body` with a fresh rig and always tears it down.
    static func with(boards: Int = 1, model: SimulatorConfiguration.Model = .metamotionR,
                     configure: (inout SimulatorConfiguration) -> Void = { _ in },
                     _ body: (EndToEndRig) async throws -> Void) async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        var configuration = SimulatorConfiguration(busAddress: bus.address, boards: boards, model: model)
        configuration.discoveryDelay = .milliseconds(100)
        configuration.rssiInterval = .milliseconds(500)
        let lines = LockedLines()
        configuration.log = { lines.append($0) }
        configure(&configuration)
        try await BlueZSimulator.withRunning(configuration) { simulator in
            let client = try await BlueZClient.open(busAddress: bus.address, discoveryUUIDs: [MetaWearGATT.service])
            let rig = EndToEndRig(bus: bus, simulator: simulator, client: client, simulatorLog: lines)
            // The client follows BlueZ beside the body; closing it ends its run().
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                var failure: (any Error)?
                do { try await body(rig) } catch { failure = error }
                await client.close()
                try await group.waitForAll()
                if let failure { throw failure }
            }
        }
    }

    /// Board `index`'s address as our stack names it.
    func address(_ index: Int) async throws -> BluetoothAddress {
        let text = try await simulator.boardInfo(index).address
        return try #require(BluetoothAddress(text))
    }

    /// Runs a session for board `index` beside `body`, every event recorded (see
    /// ``RecordedSession``); a session `body` did not stop ends with it, cancelled.
    func withRecordedSession(_ index: Int = 0, options: BoardSessionOptions? = nil,
                             _ body: (RecordedSession) async throws -> Void) async throws {
        let address = try await address(index)
        let session = BoardSession(address: address, client: client, options: try options ?? testOptions())
        let recorder = EventRecorder()
        let forwarder = recordEvents(session.events, into: recorder)
        async let _ = session.run()
        try await body(RecordedSession(address: address, session: session, recorder: recorder, forwarder: forwarder))
    }

    /// Finds board `index`, connects it with `connect` (the rig's client unless another
    /// client should own the connection) and waits until its services are resolved: the
    /// device's path and its MetaWear notify characteristic.
    func connectedNotifyCharacteristic(_ index: Int, connect: ((DBusObjectPath) async throws -> Void)? = nil)
        async throws -> (device: DBusObjectPath, notify: GattCharacteristicInfo) {
        let address = try await address(index)
        await client.setScanning(true, requester: "test")
        var device: DBusObjectPath?
        try await waitUntil("the board is seen") {
            device = await client.facts(for: address).device
            return device != nil
        }
        let path = try #require(device)
        if let connect { try await connect(path) } else { try await client.connect(path, timeout: .seconds(20)) }
        await client.setScanning(false, requester: "test")
        var notify: GattCharacteristicInfo?
        try await waitUntil("services resolved") {
            guard await client.facts(for: address).servicesResolved else { return false }
            notify = await client.characteristic(MetaWearGATT.notify, under: path)
            return notify != nil
        }
        return (path, try #require(notify))
    }

    /// Whether the simulated board's sensors and button notifications are all off (what a
    /// clean stop must leave, because a real board keeps sampling after the link is gone).
    func sensorsIdle(_ index: Int) async throws -> Bool {
        try await simulator.sensorsIdle(index)
    }
}

extension BlueZSimulator {
    /// Test hook: gyro and accelerometer fully off and button notifications off.
    func sensorsIdle(_ index: Int) throws -> Bool {
        let model = try device(index).model
        return model.gyro.isIdle && model.accelerometer.isIdle && !model.buttonNotify
    }
}

/// Session options sized for tests: fast backoffs, 1 s watchdog, no periodic battery reads.
func testOptions(rateHertz: Double = 100, delivery: NotificationDelivery = .automatic,
                 pauseAfterConnectionParameters: Int = 1500, seed: UInt64 = 11) throws -> BoardSessionOptions {
    let configuration = try StreamingConfiguration(gyro: try GyroConfiguration(rateHertz: rateHertz, rangeDegreesPerSecond: 2000))
    let reconnection = ReconnectionPolicy(connectTimeout: .seconds(5), servicesTimeout: .seconds(5), linkDownTimeout: .seconds(1),
                                          scanRestartInterval: .seconds(5), transientBackoff: .milliseconds(50),
                                          deviceGoneBackoff: .milliseconds(300), baseBackoff: .milliseconds(100),
                                          maximumBackoff: .seconds(1))
    let handshake = HandshakeSequencer.Options(pauseAfterConnectionParametersMilliseconds: pauseAfterConnectionParameters)
    return BoardSessionOptions(configuration: configuration, handshake: handshake, reconnection: reconnection,
                               notificationDelivery: delivery,
                               watchdogMinimum: .seconds(1), batteryInterval: nil, seed: seed)
}

/// One gyro sample as received: raw counts, value in °/s and receive time.
struct ReceivedSample: Sendable {
    var raw: RawVector
    var value: MotionSample
    var receivedAt: ContinuousClock.Instant
}

/// Everything the sessions reported, in arrival order per board, safe to read while running.
final class EventRecorder: @unchecked Sendable {
    enum Entry: Sendable {
        case sample(ReceivedSample)
        case state(BoardState)
        case button(ButtonEvent, togglesSession: Bool)
        case flashLog(FlashLogStatus)
        case downloaded(FlashLogDownload)
        case marker(String)
        case other
    }

    private let lock = NSLock()
    private var entries: [BluetoothAddress: [Entry]] = [:]

    func record(_ event: BoardEvent) {
        let entry: Entry
        switch event.kind {
        case .sample(.gyro(let samples)):
            lock.lock()
            for i in samples.indices {
                entries[event.board, default: []].append(.sample(ReceivedSample(raw: samples.raw(i), value: samples[i],
                                                                               receivedAt: event.receivedAt)))
            }
            lock.unlock()
            return
        case .state(let state): entry = .state(state)
        case .button(let button, let toggles): entry = .button(button, togglesSession: toggles)
        case .flashLog(let status): entry = .flashLog(status)
        case .flashLogDownloaded(let download): entry = .downloaded(download)
        default: entry = .other
        }
        append(entry, for: event.board)
    }

    /// Marks a point in a board's timeline (e.g. just before a fault is injected).
    func mark(_ board: BluetoothAddress, _ name: String) { append(.marker(name), for: board) }

    private func append(_ entry: Entry, for board: BluetoothAddress) {
        lock.lock()
        entries[board, default: []].append(entry)
        lock.unlock()
    }

    func entries(_ board: BluetoothAddress) -> [Entry] {
        lock.lock()
        defer { lock.unlock() }
        return entries[board] ?? []
    }

    func samples(_ board: BluetoothAddress) -> [ReceivedSample] {
        entries(board).compactMap { if case .sample(let s) = $0 { s } else { nil } }
    }

    func flashLog(_ board: BluetoothAddress) -> [FlashLogStatus] {
        entries(board).compactMap { if case .flashLog(let s) = $0 { s } else { nil } }
    }

    /// The flash log's downloaded pages, in order.
    func downloads(_ board: BluetoothAddress) -> [FlashLogDownload] {
        entries(board).compactMap { if case .downloaded(let d) = $0 { d } else { nil } }
    }

    func states(_ board: BluetoothAddress) -> [BoardState] {
        entries(board).compactMap { if case .state(let s) = $0 { s } else { nil } }
    }

    /// Samples that arrived after `marker` and after the link came back (a `.handshaking`
    /// state following the marker), so samples already in flight at the fault do not count.
    func samplesAfterRecovery(_ board: BluetoothAddress, marker: String) -> [ReceivedSample] {
        let all = entries(board)
        guard let markerIndex = all.lastIndex(where: { if case .marker(marker) = $0 { true } else { false } }) else { return [] }
        let tail = all[(markerIndex + 1)...]
        guard let relink = tail.firstIndex(where: { if case .state(.handshaking) = $0 { true } else { false } }) else { return [] }
        return all[relink...].compactMap { if case .sample(let s) = $0 { s } else { nil } }
    }

    /// Samples after `marker` (any, including ones in flight).
    func samplesAfter(_ board: BluetoothAddress, marker: String) -> [ReceivedSample] {
        let all = entries(board)
        guard let markerIndex = all.lastIndex(where: { if case .marker(marker) = $0 { true } else { false } }) else { return [] }
        return all[(markerIndex + 1)...].compactMap { if case .sample(let s) = $0 { s } else { nil } }
    }

    func isStreaming(_ board: BluetoothAddress) -> Bool {
        if case .streaming = states(board).last { return true }
        return false
    }
}

/// A board session run by ``EndToEndRig/withRecordedSession(_:options:_:)`` and its recorded events.
struct RecordedSession {
    let address: BluetoothAddress
    let session: BoardSession
    let recorder: EventRecorder
    let forwarder: Task<Void, Never>

    /// Stops the session and returns once every event it sent is recorded.
    func stop() async {
        await session.stop()
        await forwarder.value
    }
}

/// Forwards a session's or manager's events into a recorder until the stream ends.
func recordEvents(_ stream: BoardEventStream, into recorder: EventRecorder) -> Task<Void, Never> {
    Task { for await event in stream { recorder.record(event) } }
}

/// The sample index the simulator encodes in x (mod 2^16; tests stay below 2^16 samples).
func sampleIndex(_ sample: ReceivedSample) -> UInt64 { UInt64(UInt16(bitPattern: sample.raw.x)) }

/// Checks that every sample carries exactly the model's signal for its index, raw and in °/s
/// (±2000 °/s: 16.4 LSB per °/s). Returns the number of mismatches (each also recorded).
@discardableResult
func expectExactValues(_ samples: [ReceivedSample], seed: UInt32, board: String) -> Int {
    var mismatches = 0
    for sample in samples {
        let expected = SimulatedBoard.signal(.gyro, seed: seed, index: sampleIndex(sample))
        let raw = RawVector(x: expected.x, y: expected.y, z: expected.z)
        let value = MotionSample(x: Double(expected.x) / 16.4, y: Double(expected.y) / 16.4, z: Double(expected.z) / 16.4)
        if sample.raw != raw || sample.value != value {
            mismatches += 1
            if mismatches <= 3 {
                Issue.record("\(board): sample \(sampleIndex(sample)) decoded as \(sample.raw) = \(sample.value), expected \(raw) = \(value)")
            }
        }
    }
    return mismatches
}

/// Indices strictly increasing (no duplicate, no reordering).
func expectStrictlyIncreasing(_ samples: [ReceivedSample], board: String) {
    var previous: UInt64?
    var bad = 0
    for sample in samples {
        let index = sampleIndex(sample)
        if let previous, index <= previous {
            bad += 1
            if bad <= 3 { Issue.record("\(board): sample \(index) arrived after \(previous)") }
        }
        previous = index
    }
}

/// Polls until `condition` holds; generous limits for a loaded 2-core machine. At the start
/// of the first test pass the CPU-bound suites (fuzzing, gap and backfill models) hold the
/// cooperative pool for 25-30 s, and an in-memory board session that needs a second of work
/// then timed out at 30 s (BoardSessionLogicTests, one full run in three).
func waitUntil(_ what: String, within limit: Duration = .seconds(90),
               _ condition: () async throws -> Bool) async throws {
    let deadline = ContinuousClock.now + limit
    while try await !condition() {
        guard ContinuousClock.now < deadline else {
            Issue.record("timed out waiting for \(what)")
            throw TestBusError(message: "timed out waiting for \(what)")
        }
        try await Task.sleep(for: .milliseconds(20))
    }
}

/// Thread-safe line collector for the simulator's log.
final class LockedLines: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []
    func append(_ line: String) { lock.lock(); lines.append(line); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return lines }
}

extension Duration {
    var seconds: Double {
        let (s, a) = components
        return Double(s) + Double(a) / 1e18
    }
}
