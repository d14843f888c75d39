import BlueZ
import Boards
import Foundation
import MetaWear
import MetaWearBoardModel

/// A board behind an in-memory radio for unit tests of ``BoardSession`` without a bus: the
/// project's board model answers every write, the test decides when the board streams
/// (``InMemoryLink/stream(milliseconds:)``), drops the link or lets it go silent.
///
/// Each link the transport hands out is recorded; after a loss (``dropLink()`` or the
/// session's ``linkFailed(_:)``) it connects again at once with a fresh link to the same
/// board, which keeps its state as a real board does across a link drop.
actor InMemoryBoardTransport: BoardTransport {
    nonisolated let events: AsyncStream<BoardTransportEvent>
    private let continuation: AsyncStream<BoardTransportEvent>.Continuation
    nonisolated let board: InMemoryBoard
    private(set) var links: [InMemoryLink] = []
    private(set) var failures: [String] = []
    private(set) var stopCommands: [[UInt8]]?
    private var stopped = false
    /// See ``setSamplesOnReconnect(milliseconds:)``.
    private var reconnectSamples: UInt64 = 0
    /// What the board sent on the newest link before its handshake began.
    private(set) var sentOnReconnect: [[UInt8]] = []
    /// See ``setWhileHostIdentityIsRead(_:)``.
    private var whileHostIdentityIsRead: InMemoryLink.HostIdentityRead?
    private let ended: AsyncStream<Void>
    private let endedContinuation: AsyncStream<Void>.Continuation

    /// Board time each write call of its links takes (``InMemoryLink/init(board:millisecondsPerWrite:)``).
    private let millisecondsPerWrite: UInt64
    /// See ``holdStopAfterClose()``.
    private var stopRelease: AsyncStream<Never>?

    init(profile: BoardProfile = .metaMotionR, millisecondsPerWrite: UInt64 = 0) {
        board = InMemoryBoard(profile: profile)
        self.millisecondsPerWrite = millisecondsPerWrite
        (events, continuation) = AsyncStream.makeStream(of: BoardTransportEvent.self, bufferingPolicy: .bufferingOldest(64))
        (ended, endedContinuation) = AsyncStream.makeStream(of: Void.self)
    }

    func run() async {
        guard !stopped else { return }
        connect(failures: 0)
        for await _ in ended {}
    }

    func linkFailed(_ reason: String) async {
        guard !stopped, let link = links.last, !link.isClosed else { return }
        failures.append(reason)
        await lose(link, reason: "session failed: \(reason)", failuresAfter: failures.count)
    }

    /// The board drops the link (out of range, switched off); the transport reconnects, at
    /// once or, with `reconnecting: false`, on ``reconnect()``.
    func dropLink(reconnecting: Bool = true) async {
        guard let link = links.last, !link.isClosed else { return }
        await lose(link, reason: "link dropped", failuresAfter: 0, reconnecting: reconnecting)
    }

    /// The link dropped with ``dropLink(reconnecting:)`` comes back.
    func reconnect() {
        connect(failures: 0)
    }

    func stop(writing commands: [Packet], linkEnding: @escaping @Sendable () -> Void) async {
        guard !stopped else { return linkEnding() }
        stopped = true
        if let link = links.last, !link.isClosed {
            for packet in commands { try? await link.write(packet) }
            linkEnding()
            await link.close()
        } else {
            linkEnding()
        }
        if let stopRelease { for await _ in stopRelease {} }
        stopCommands = commands.map(\.bytes)
        continuation.finish()
        endedContinuation.finish()
    }

    /// The stop closes the link (its notifications end) and then waits until the returned
    /// continuation finishes, as ``BlueZBoardTransport``'s stop waits for bluetoothd to release
    /// the link's notifications and take its `Disconnect` after the link's last notification.
    func holdStopAfterClose() -> AsyncStream<Never>.Continuation {
        let (held, release) = AsyncStream.makeStream(of: Never.self)
        stopRelease = held
        return release
    }

    private func lose(_ link: InMemoryLink, reason: String, failuresAfter: Int, reconnecting: Bool = true) async {
        continuation.yield(.linkLost(reason: reason))
        await link.close()
        if reconnecting { connect(failures: failuresAfter) }
    }

    /// A board still streaming when the link comes back sends `milliseconds` of samples before
    /// the session has started its handshake (as a real one does the moment notifications are on).
    func setSamplesOnReconnect(milliseconds: UInt64) {
        reconnectSamples = milliseconds
    }

    /// What the links opened from now on do while the session reads what the host knows of
    /// the board (``InMemoryLink/hostReportedIdentity()``): on bluetoothd a round trip to
    /// another actor or over the bus, during which a board still streaming goes on sending.
    func setWhileHostIdentityIsRead(_ body: @escaping InMemoryLink.HostIdentityRead) {
        whileHostIdentityIsRead = body
    }

    private func connect(failures: Int) {
        continuation.yield(.connecting(failures: failures, lastFailure: self.failures.last))
        let link = InMemoryLink(board: board, millisecondsPerWrite: millisecondsPerWrite,
                                whileHostIdentityIsRead: whileHostIdentityIsRead)
        links.append(link)
        if reconnectSamples > 0, board.gyroStreaming {
            // The outage's own samples never arrive; then the board streams on the new link.
            _ = board.advance(milliseconds: 30)
            sentOnReconnect = link.stream(milliseconds: reconnectSamples)
        }
        continuation.yield(.linkReady(link))
    }
}

/// The board model behind a lock, shared by the links of one ``InMemoryBoardTransport``.
final class InMemoryBoard: @unchecked Sendable {
    private let lock = NSLock()
    private var model: SimulatedBoard

    init(profile: BoardProfile) {
        model = SimulatedBoard(profile: profile)
    }

    func write(_ bytes: [UInt8]) -> [[UInt8]] {
        lock.withLock { model.write(bytes).notifications }
    }

    func deviceInformation(_ field: DeviceInformationField) -> String? {
        lock.withLock { model.readDeviceInformation(field.shortUUID) }
    }

    /// What the board sends in the next `milliseconds` of its time (nothing unless streaming).
    func advance(milliseconds: UInt64) -> [[UInt8]] {
        lock.withLock { model.advance(to: model.nanoseconds + milliseconds * 1_000_000).map(\.bytes) }
    }

    /// Whether the gyro streams.
    var gyroStreaming: Bool { lock.withLock { model.state(.gyro).isStreaming } }

    /// Reads or changes the board model directly (as another app, or to look at its flash).
    func withModel<T>(_ body: (inout SimulatedBoard) -> T) -> T { lock.withLock { body(&model) } }
}

/// One link of an ``InMemoryBoardTransport``: writes reach the board model, its replies and
/// samples come back as notifications; everything written is recorded.
final class InMemoryLink: BoardLink, @unchecked Sendable {
    /// Runs while the session reads the host's identity of the board (the link it reads on).
    typealias HostIdentityRead = @Sendable (InMemoryLink) async -> Void

    let notifications: AsyncStream<[GattNotification]>
    private let continuation: AsyncStream<[GattNotification]>.Continuation
    private let board: InMemoryBoard
    private let lock = NSLock()
    private var written: [[UInt8]] = []
    private var deviceInformationReads: [DeviceInformationField] = []
    private var closed = false
    private var grouping: Duration?
    /// Board time (ms) each write call takes, see ``init(board:millisecondsPerWrite:)``.
    private let millisecondsPerWrite: UInt64
    private let whileHostIdentityIsRead: HostIdentityRead?
    /// See ``holdWrites()``.
    private var writesHeld = false
    private var heldWrites = 0
    /// See ``holdDeliveries()``: what the board sent meanwhile, in order; nil while delivering.
    private var heldDeliveries: [[UInt8]]?

    /// With `millisecondsPerWrite` the board's clock moves on that much (streaming what falls
    /// due) before each write call reaches it, as a real link's connection events and the
    /// write's round trip through bluetoothd do; a batch (``writeInOrder(_:)``) pays it once.
    init(board: InMemoryBoard, millisecondsPerWrite: UInt64 = 0, whileHostIdentityIsRead: HostIdentityRead? = nil) {
        self.board = board
        self.millisecondsPerWrite = millisecondsPerWrite
        self.whileHostIdentityIsRead = whileHostIdentityIsRead
        (notifications, continuation) = AsyncStream.makeStream(of: [GattNotification].self, bufferingPolicy: .bufferingOldest(4096))
    }

    var writes: [[UInt8]] { lock.withLock { written } }
    var reads: [DeviceInformationField] { lock.withLock { deviceInformationReads } }
    var isClosed: Bool { lock.withLock { closed } }
    var groupingInterval: Duration? { lock.withLock { grouping } }

    func write(_ packet: Packet) async throws {
        try await writeInOrder([packet])
    }

    func writeInOrder(_ packets: [Packet]) async throws {
        if lock.withLock({ writesHeld }) { try await waitUntilGivenUp() }
        if millisecondsPerWrite > 0 { stream(milliseconds: millisecondsPerWrite) }
        let replies: [[UInt8]] = try lock.withLock {
            guard !closed else { throw InMemoryLinkClosed() }
            written += packets.map(\.bytes)
            return packets.flatMap { board.write($0.bytes) }
        }
        for reply in replies { deliver([reply]) }
    }

    func readDeviceInformation(_ field: DeviceInformationField) async -> DeviceInformationRead {
        lock.withLock { deviceInformationReads.append(field) }
        return board.deviceInformation(field).map { .value($0) } ?? .notExported
    }

    /// No bluetoothd here: nothing beyond the board's own answers.
    func hostReportedIdentity() async -> HostReportedIdentity {
        await whileHostIdentityIsRead?(self)
        return HostReportedIdentity()
    }

    func groupNotifications(_ interval: Duration, readCoalescing: Duration) async {
        lock.withLock { grouping = interval }
    }

    func readPromptly(_ promptly: Bool) async {}

    /// Nothing is dropped here: the tests hand the session what they choose.
    var droppedNotifications: Int { 0 }

    /// The board streams for `milliseconds` of its time; returns the notifications sent.
    @discardableResult
    func stream(milliseconds: UInt64) -> [[UInt8]] {
        let sent = board.advance(milliseconds: milliseconds)
        if !sent.isEmpty { deliver(sent) }
        return sent
    }

    /// As ``stream(milliseconds:)``, but what `lose` picks never reaches the session (lost on
    /// the way to the host, as bluetoothd drops what a full AcquireNotify socket cannot take).
    @discardableResult
    func stream(milliseconds: UInt64, losing lose: ([UInt8]) -> Bool) -> [[UInt8]] {
        let sent = board.advance(milliseconds: milliseconds).filter { !lose($0) }
        if !sent.isEmpty { deliver(sent) }
        return sent
    }

    /// Hands `notifications` to the session as one batch (unless the link is closed).
    func deliver(_ notifications: [[UInt8]]) {
        lock.withLock {
            guard !closed else { return }
            if heldDeliveries != nil {
                heldDeliveries? += notifications
                return
            }
            let now = ContinuousClock.now
            continuation.yield(notifications.map { GattNotification(bytes: $0, receivedAt: now, wallClock: Date()) })
        }
    }

    /// From now on the host hands on nothing the board sends, replies and samples alike, and
    /// loses nothing (bluetoothd slow to hand on: a loaded host, a second notify client), until
    /// ``releaseHeld()``; never released, the link is dead with the kernel not yet aware.
    func holdDeliveries() {
        lock.withLock { heldDeliveries = heldDeliveries ?? [] }
    }

    /// Hands on what was held as one late lump, in order, and delivers at once again.
    func releaseHeld() {
        // Under the lock, so nothing the board sends meanwhile overtakes the lump.
        lock.withLock {
            let held = heldDeliveries ?? []
            heldDeliveries = nil
            guard !closed, !held.isEmpty else { return }
            let now = ContinuousClock.now
            continuation.yield(held.map { GattNotification(bytes: $0, receivedAt: now, wallClock: Date()) })
        }
    }

    /// Writes from now on are never answered (a busy bluetoothd whose answer comes after the
    /// link's end reached the session): each ends only when its writer gives it up (cancelled).
    func holdWrites() {
        lock.withLock { writesHeld = true }
    }

    /// Writes waiting in ``holdWrites()``.
    var writesWaiting: Int { lock.withLock { heldWrites } }

    private func waitUntilGivenUp() async throws {
        lock.withLock { heldWrites += 1 }
        defer { lock.withLock { heldWrites -= 1 } }
        while true { try await Task.sleep(for: .milliseconds(5)) }
    }

    /// Ends the link: what was delivered stays in the stream, which then finishes.
    func close() async {
        lock.withLock {
            closed = true
            continuation.finish()
        }
    }
}

struct InMemoryLinkClosed: Error {}
