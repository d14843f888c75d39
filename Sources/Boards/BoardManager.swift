import BlueZ
import MetaWear

/// The fleet of boards: configured addresses and, optionally, boards found by discovery
/// (filtered by an allow list). Runs one ``BoardSession`` per board and merges their events
/// into one stream. Boards can be added and removed while running (the control API does).
public actor BoardManager {
    /// How boards are found besides the configured addresses.
    public struct Discovery: Sendable {
        /// Only these addresses are adopted (nil: any board offering the MetaWear service or
        /// named with `namePrefix`).
        public var allowList: Set<BluetoothAddress>?
        /// Name prefix that also identifies a board (reference metawear-protocol §1.2).
        public var namePrefix: String?

        public init(allowList: Set<BluetoothAddress>?, namePrefix: String? = "MetaWear") {
            self.allowList = allowList
            self.namePrefix = namePrefix
        }
    }

    /// The BlueZ client every session shares.
    public nonisolated let client: BlueZClient
    /// Options for boards added without their own.
    public let defaultOptions: BoardSessionOptions
    /// Events of every board, merged in arrival order, in each session's batches; finishes
    /// after ``shutdown()``.
    public nonisolated let events: BoardEventStream

    private let continuation: AsyncStream<[BoardEvent]>.Continuation
    private var sessions: [BluetoothAddress: BoardSession] = [:]
    private var forwarders: [BluetoothAddress: Task<Void, Never>] = [:]
    private var discovery: Discovery?
    private var discoveryTask: Task<Void, Never>?
    private var isShutDown = false
    /// Set by ``setSensors(_:)``; nil: as the options say.
    private var sensorsOn: Bool?

    /// A manager on an existing client.
    public init(client: BlueZClient, defaultOptions: BoardSessionOptions) {
        self.client = client
        self.defaultOptions = defaultOptions
        (events, continuation) = BoardEventStream.makeStream()
    }

    /// Opens a BlueZ client on `busAddress` (nil: the system bus, honouring
    /// `DBUS_SYSTEM_BUS_ADDRESS`) and returns a manager on it.
    public static func open(busAddress: String? = nil, defaultOptions: BoardSessionOptions) async throws -> BoardManager {
        let client = try await BlueZClient.open(busAddress: busAddress, discoveryUUIDs: [MetaWearGATT.service])
        return BoardManager(client: client, defaultOptions: defaultOptions)
    }

    /// Addresses of the boards being run.
    public var boards: [BluetoothAddress] { sessions.keys.sorted() }

    /// The session of one board.
    public func session(for address: BluetoothAddress) -> BoardSession? { sessions[address] }

    /// Adds a board and starts its session (no-op if already present).
    public func add(_ address: BluetoothAddress, options: BoardSessionOptions? = nil) async {
        guard !isShutDown, sessions[address] == nil else { return }
        var options = options ?? defaultOptions
        if let sensorsOn { options.sensorsOnConnect = sensorsOn }
        let session = BoardSession(address: address, client: client, options: options)
        sessions[address] = session
        let continuation = continuation
        // The session runs beside its forwarder; its events finish when it has stopped.
        forwarders[address] = Task {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await session.run() }
                for await batch in session.events.batches { continuation.yield(batch) }
            }
        }
    }

    /// Stops a board cleanly and forgets it. Discovery will not re-adopt it unless it is
    /// added again.
    public func remove(_ address: BluetoothAddress) async {
        guard let session = sessions.removeValue(forKey: address) else { return }
        removed.insert(address)
        await session.stop()
        await forwarders.removeValue(forKey: address)?.value
    }

    private var removed: Set<BluetoothAddress> = []

    /// Starts or stops the sensors of every board (see ``BoardSession/setSensors(_:)``), and
    /// of boards added later.
    public func setSensors(_ on: Bool) async {
        sensorsOn = on
        let all = Array(sessions.values)
        await withTaskGroup(of: Void.self) { group in
            for session in all { group.addTask { await session.setSensors(on) } }
        }
    }

    /// Starts adopting boards found by discovery (replacing any earlier discovery settings).
    public func startDiscovery(_ settings: Discovery) async {
        discoveryTask?.cancel()
        discovery = settings
        removed.removeAll()
        let advertisements = await client.advertisements(namePrefix: settings.namePrefix, addresses: settings.allowList ?? [])
        discoveryTask = Task { [weak self] in
            for await advertisement in advertisements {
                guard let self else { return }
                await self.consider(advertisement)
            }
        }
    }

    /// Stops adopting new boards (running sessions continue).
    public func stopDiscovery() {
        discoveryTask?.cancel()
        discoveryTask = nil
        discovery = nil
    }

    private func consider(_ advertisement: Advertisement) async {
        guard let discovery, !removed.contains(advertisement.address) else { return }
        if let allowList = discovery.allowList, !allowList.contains(advertisement.address) { return }
        await add(advertisement.address)
    }

    /// Stops every board cleanly (in parallel), ends discovery, closes the BlueZ client and
    /// finishes ``events``.
    public func shutdown() async {
        guard !isShutDown else { return }
        isShutDown = true
        stopDiscovery()
        let all = sessions
        sessions.removeAll()
        await withTaskGroup(of: Void.self) { group in
            for session in all.values { group.addTask { await session.stop() } }
        }
        for task in forwarders.values { await task.value }
        forwarders.removeAll()
        await client.close()
        continuation.finish()
    }
}
