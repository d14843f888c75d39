import Basics
import BlueZ
import MetaWear

/// The fleet of boards: configured addresses and, optionally, boards found by discovery
/// (filtered by an allow list). Runs one ``BoardSession`` per board and merges their events
/// into one stream. Boards can be added and removed while running (the control API does).
///
/// Everything runs inside ``run()``: each board's session with the forwarding of its events,
/// and discovery, are child tasks of it, so nothing outlives the manager. Whoever owns the
/// manager runs it beside its users; ``shutdown()`` stops the boards and ends it.
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
    /// Per board: finishes when its session has ended and its last events were forwarded.
    private var forwardings: [BluetoothAddress: Forwarding] = [:]
    private var discovery: Discovery?
    /// Finishing it ends the running discovery's child task.
    private var discoveryEnd: AsyncStream<Never>.Continuation?
    private let work = ChildTaskQueue()
    private var hasEnded = false
    private var isShutDown = false
    /// Set by ``setSensors(_:)``; nil: as the options say.
    private var sensorsOn: Bool?

    /// A manager on an existing client.
    public init(client: BlueZClient, defaultOptions: BoardSessionOptions) {
        self.client = client
        self.defaultOptions = defaultOptions
        (events, continuation) = BoardEventStream.makeStream(gauge: BoardEventStream.fleetGauge)
    }

    /// Opens a BlueZ client on `busAddress` (nil: the system bus, honouring
    /// `DBUS_SYSTEM_BUS_ADDRESS`) and returns a manager on it.
    public static func open(busAddress: String? = nil, defaultOptions: BoardSessionOptions) async throws -> BoardManager {
        let client = try await BlueZClient.open(busAddress: busAddress, discoveryUUIDs: [MetaWearGATT.service])
        return BoardManager(client: client, defaultOptions: defaultOptions)
    }

    /// Runs the boards' sessions and discovery as child tasks until ``shutdown()`` (which
    /// stops every board cleanly first) or cancellation (which ends the sessions without their
    /// stop commands). Call once, beside whatever adds boards or reads ``events``.
    public func run() async {
        await work.run()
        hasEnded = true
        // Sessions queued but never started (run() cancelled first) have nothing to wait for.
        for forwarding in forwardings.values { forwarding.markEnded.finish() }
    }

    /// Addresses of the boards being run.
    public var boards: [BluetoothAddress] { sessions.keys.sorted() }

    /// The session of one board.
    public func session(for address: BluetoothAddress) -> BoardSession? { sessions[address] }

    /// Adds a board and starts its session (no-op if already present).
    public func add(_ address: BluetoothAddress, options: BoardSessionOptions? = nil) async {
        guard !isShutDown, !hasEnded, sessions[address] == nil else { return }
        var options = options ?? defaultOptions
        if let sensorsOn { options.sensorsOnConnect = sensorsOn }
        let session = BoardSession(address: address, client: client, options: options)
        let forwarding = Forwarding()
        let continuation = continuation
        // The session runs beside its forwarder; its events finish when it has stopped.
        let queued = work.spawn {
            defer { forwarding.markEnded.finish() }
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await session.run() }
                for await batch in session.events.batches { BoardEventStream.fleetGauge.record(continuation.yield(batch)) }
            }
        }
        guard queued else { return }
        sessions[address] = session
        forwardings[address] = forwarding
    }

    /// Stops a board cleanly and forgets it. Discovery will not re-adopt it unless it is
    /// added again.
    public func remove(_ address: BluetoothAddress) async {
        guard let session = sessions.removeValue(forKey: address) else { return }
        removed.insert(address)
        await session.stop()
        await forwardings.removeValue(forKey: address)?.waitUntilEnded()
    }

    private var removed: Set<BluetoothAddress> = []

    /// Downloads `address`'s flash log in the background (see ``BoardSession/downloadFlashLog()``).
    public func downloadFlashLog(_ address: BluetoothAddress) async {
        await sessions[address]?.downloadFlashLog()
    }

    /// Reads `address`'s flash log up to its newest `leaving` (see
    /// ``BoardSession/readStreamedFlashLog(leaving:)``).
    public func readStreamedFlashLog(_ address: BluetoothAddress, leaving: Duration) async {
        await sessions[address]?.readStreamedFlashLog(leaving: leaving)
    }

    /// Notes the length of `address`'s flash log (see ``BoardSession/markFlashLogForTrim()``).
    public func markFlashLogForTrim(_ address: BluetoothAddress, askedAt: ContinuousClock.Instant) async {
        await sessions[address]?.markFlashLogForTrim(askedAt: askedAt)
    }

    /// Drops what `address`'s flash log held at the last mark (see ``BoardSession/trimFlashLog()``).
    public func trimFlashLog(_ address: BluetoothAddress) async {
        await sessions[address]?.trimFlashLog()
    }

    /// Stops `address`'s logged sensors and its log for the session's last download (see
    /// ``BoardSession/finishFlashLog()``).
    public func finishFlashLog(_ address: BluetoothAddress) async {
        await sessions[address]?.finishFlashLog()
    }

    /// Reads out `address`'s log for a stopped session (see ``BoardSession/drainFlashLog()``).
    public func drainFlashLog(_ address: BluetoothAddress) async {
        await sessions[address]?.drainFlashLog()
    }

    /// `address`'s last reported flash log page is stored (see ``BoardSession/confirmFlashLogPage()``).
    public func confirmFlashLogPage(_ address: BluetoothAddress) async {
        await sessions[address]?.confirmFlashLogPage()
    }

    /// `address`'s last reported flash log page could not be stored (see ``BoardSession/declineFlashLogPage()``).
    public func declineFlashLogPage(_ address: BluetoothAddress) async {
        await sessions[address]?.declineFlashLogPage()
    }

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
        stopDiscovery()
        guard !isShutDown, !hasEnded else { return }
        discovery = settings
        removed.removeAll()
        let advertisements = await client.advertisements(namePrefix: settings.namePrefix, addresses: settings.allowList ?? [])
        let (end, endContinuation) = AsyncStream.makeStream(of: Never.self)
        discoveryEnd = endContinuation
        work.spawn { [weak self] in
            // Until stopDiscovery() finishes `end`, or the client's advertisements end.
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await advertisement in advertisements {
                        guard let self else { return }
                        await self.consider(advertisement)
                    }
                }
                group.addTask { for await _ in end {} }
                await group.next()
                group.cancelAll()
            }
        }
    }

    /// Stops adopting new boards (running sessions continue).
    public func stopDiscovery() {
        discoveryEnd?.finish()
        discoveryEnd = nil
        discovery = nil
    }

    private func consider(_ advertisement: Advertisement) async {
        guard let discovery, !removed.contains(advertisement.address) else { return }
        if let allowList = discovery.allowList, !allowList.contains(advertisement.address) { return }
        await add(advertisement.address)
    }

    /// Stops every board cleanly (in parallel), ends discovery, finishes ``events`` once every
    /// board's last events are in it, and closes the BlueZ client. `linksEnding` is called
    /// once every board's stop has asked for its link's end (its commands written or given
    /// up, `Disconnect` asked; ``BoardSession/stop(linkEnding:)``), before the links' close
    /// and the client's; at once when there is nothing to stop.
    public func shutdown(linksEnding: @escaping @Sendable () -> Void = {}) async {
        guard !isShutDown else { return linksEnding() }
        isShutDown = true
        stopDiscovery()
        let all = sessions
        sessions.removeAll()
        let ending = LinksEnding(boards: Set(all.keys), then: linksEnding)
        await withTaskGroup(of: Void.self) { group in
            for (address, session) in all {
                group.addTask { await session.stop(linkEnding: { ending.asked(address) }) }
            }
        }
        let forwarded = forwardings.values
        forwardings.removeAll()
        for forwarding in forwarded { await forwarding.waitUntilEnded() }
        // Every board's last events are forwarded: the reader (recording, which seals once
        // they are in) need not wait for the client's close as well.
        continuation.finish()
        await client.close()
        work.finish()
    }
}

/// The end of one board's session and event forwarding, awaited by whoever removes it.
private struct Forwarding: Sendable {
    let ended: AsyncStream<Never>
    let markEnded: AsyncStream<Never>.Continuation

    init() { (ended, markEnded) = AsyncStream.makeStream(of: Never.self) }

    func waitUntilEnded() async {
        for await _ in ended {}
    }
}
