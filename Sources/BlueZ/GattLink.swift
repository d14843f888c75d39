import DBus
import Foundation
import Synchronization

/// One notification as received, with the host's receive times.
public struct GattNotification: Hashable, Sendable {
    /// The characteristic value.
    public var bytes: [UInt8]
    /// Monotonic receive time (for ordering and rate checks).
    public var receivedAt: ContinuousClock.Instant
    /// Wall-clock receive time (for humans and the recording's time base).
    public var wallClock: Date

    public init(bytes: [UInt8], receivedAt: ContinuousClock.Instant, wallClock: Date) {
        self.bytes = bytes
        self.receivedAt = receivedAt
        self.wallClock = wallClock
    }
}

/// How notifications are delivered.
public enum NotificationDelivery: Hashable, Sendable {
    /// `AcquireNotify` where BlueZ offers it, else `StartNotify`.
    case automatic
    /// Always `StartNotify` + `PropertiesChanged(Value)` (bleak's default since 2026).
    case propertiesChanged
    /// `StartNotify`, with the session held through link drops: its owner keeps the link's
    /// D-Bus connection open while the board is away, and bluetoothd 5.66 writes the board's
    /// CCCD for every session it still holds as soon as the link is attached again
    /// (src/gatt-client.c `btd_gatt_client_connected`), before its GATT client is ready, and
    /// signals each value at once. An acquired socket, by contrast, is shut down at every
    /// drop and handed out again only once the GATT client is ready. `GattLink` itself
    /// treats it as ``propertiesChanged``; keeping the connection is the owner's part.
    case sessionKeptOverDrops
}

/// GATT I/O for one BLE session on its own D-Bus connection (reference §1.6.1: closing it
/// ends BlueZ's notify sessions for us, so a reconnect never inherits stale subscriptions).
///
/// Writes are serialised in call order and paced: at most one `WriteValue` in flight, a
/// minimum gap between writes, and `InProgress` answered with a short retry (metawear-protocol
/// §9.2, bluez-dbus §2.3 step 10).
public actor GattLink {
    /// The link's own connection.
    public nonisolated let connection: DBusConnection
    /// Minimum time between two writes.
    public let minimumWriteInterval: Duration
    /// Timeout of each call.
    public let callTimeout: Duration
    /// How notifications are actually delivered (after ``notifications(from:delivery:)``).
    public private(set) var activeDelivery: String?

    /// Whether a write holds the link's single write slot.
    private var writing = false
    /// Writes waiting for the slot, in call order.
    private var waitingWrites: [CheckedContinuation<Void, Never>] = []
    private var lastWrite: ContinuousClock.Instant?
    private var readers: [DatagramReader] = []
    private var notifyPaths: [DBusObjectPath] = []
    /// Characteristics whose notifications this link acquired (AcquireNotify).
    private var acquiredPaths: [DBusObjectPath] = []
    /// Characteristics whose `AcquireNotify` was sent and not answered: in flight (bluetoothd
    /// answers only once its GATT client is ready, seconds after a reconnect's `Connect`), or
    /// given up by a cancelled caller. bluetoothd holds each as acquired meanwhile.
    private var acquiring: [DBusObjectPath] = []
    private var groupers: [NotificationGrouper] = []
    /// The grouping interval last asked for, and whether reads ignore it for now.
    private var groupingInterval: Duration = .zero
    private var readsPromptly = false
    private var closed = false

    /// Opens a fresh connection to `busAddress` (nil: system bus).
    public static func open(busAddress: String?, minimumWriteInterval: Duration = .milliseconds(2),
                            callTimeout: Duration = .seconds(10)) async throws -> GattLink {
        GattLink(connection: try await BlueZClient.openConnection(busAddress),
                 minimumWriteInterval: minimumWriteInterval, callTimeout: callTimeout)
    }

    init(connection: DBusConnection, minimumWriteInterval: Duration, callTimeout: Duration) {
        self.connection = connection
        self.minimumWriteInterval = minimumWriteInterval
        self.callTimeout = callTimeout
    }

    // MARK: Writes

    /// Writes `bytes` to `characteristic`: `type=command` (write without response) unless
    /// `withResponse`. Returns once BlueZ accepted the write; writes leave in call order.
    public func write(_ bytes: [UInt8], to characteristic: DBusObjectPath, withResponse: Bool = false) async throws {
        await takeWriteSlot()
        defer { passWriteSlot() }
        try await performWrite(bytes, to: characteristic, withResponse: withResponse)
    }

    /// Writes `values` to `characteristic` with write-without-response (`type=command`), in
    /// order, without waiting for bluetoothd's answer to one before sending the next: one
    /// round trip instead of one per value. bluetoothd answers such a write as soon as it has
    /// queued the ATT Write Command (no write is then in flight on the characteristic, so no
    /// `InProgress`), handles one connection's calls in the order sent, and sends the queued
    /// commands in that order (bluez-dbus.md). Under load its answers come late (a busy
    /// main loop under TCG), which made a few commands take most of a second one after
    /// another. Meant for a short sequence that must reach the board quickly (a dozen
    /// commands at most); everything else goes through ``write(_:to:withResponse:)``, paced,
    /// as MbientLab's SDKs pace their writes (metawear-protocol.md §9.2). Takes the link's
    /// write slot like it; throws the first failure once every value was answered, or
    /// ``callTimeout`` passed.
    public func writeCommandsInOrder(_ values: [[UInt8]], to characteristic: DBusObjectPath) async throws {
        await takeWriteSlot()
        defer { passWriteSlot() }
        try await awaitWriteTurn()
        let results = await connection.callInOrder(values.map { BlueZClient.writeCommandMessage($0, to: characteristic) },
                                                   timeout: callTimeout)
        lastWrite = .now
        for result in results { _ = try result.get() }
    }

    /// Sends `values` to `characteristic` as write-without-response (`type=command`) calls
    /// that ask for no answer, in order, once the link's write slot is free (however long a
    /// write before them holds it); returns once they are sent. For a stop: bluetoothd handles
    /// one connection's calls in the order sent and queues each as an ATT Write Command, sent
    /// in that order (bluez-dbus.md), so its answers would say nothing the order does not, and
    /// waiting for them cost a SIGTERM a bluetoothd round trip (issue 18 §2.7). Later calls on
    /// this connection (the close's) are handled after these, and the close flushes them.
    public func sendCommandsInOrder(_ values: [[UInt8]], to characteristic: DBusObjectPath) async throws {
        await takeWriteSlot()
        defer { passWriteSlot() }
        try await awaitWriteTurn()
        for value in values { try connection.send(BlueZClient.writeCommandMessage(value, to: characteristic)) }
        lastWrite = .now
    }

    /// `Device1.Disconnect` of `device` on this link's connection, without waiting for its
    /// answer (``BlueZClient/requestDisconnect(_:)``). After a stop's commands
    /// (``sendCommandsInOrder(_:to:)``) it reaches bluetoothd behind them: the bus delivers one
    /// connection's messages in the order sent, and bluetoothd handles them in that order.
    /// Asked on another connection it could arrive first. Throws if this connection has ended.
    public nonisolated func requestDisconnect(_ device: DBusObjectPath) throws {
        try connection.send(BlueZClient.disconnectMessage(device))
    }

    /// Takes the link's single write slot. The actor is reentrant: while one write awaits
    /// BlueZ, later calls queue here and are handed the slot one at a time, oldest first.
    private func takeWriteSlot() async {
        if writing {
            await withCheckedContinuation { waitingWrites.append($0) }
        } else {
            writing = true
        }
    }

    /// Throws when the link is closed; else waits out the minimum gap after the last write.
    private func awaitWriteTurn() async throws {
        guard !closed else { throw DBusError.disconnected("the GATT link is closed") }
        if let lastWrite {
            let due = lastWrite.advanced(by: minimumWriteInterval)
            if due > .now { try await Task.sleep(until: due, clock: .continuous) }
        }
    }

    /// Hands the write slot to the oldest waiting write, or frees it.
    private func passWriteSlot() {
        if waitingWrites.isEmpty {
            writing = false
        } else {
            waitingWrites.removeFirst().resume()
        }
    }

    private func performWrite(_ bytes: [UInt8], to characteristic: DBusObjectPath, withResponse: Bool) async throws {
        try await awaitWriteTurn()
        let options: [String: DBusValue] = ["type": .string(withResponse ? "request" : "command")]
        var attempts = 0
        while true {
            do {
                _ = try await connection.call(destination: BlueZNames.service, path: characteristic,
                                              interface: BlueZNames.gattCharacteristic, member: "WriteValue",
                                              arguments: [bytes.dbusValue, options.dbusValue], timeout: callTimeout)
                lastWrite = .now
                return
            } catch let error as DBusError where BlueZErrorClass(error) == .inProgress && attempts < 50 {
                // One write per characteristic may be in flight in BlueZ; try again shortly.
                attempts += 1
                try await Task.sleep(for: .milliseconds(10))
            }
        }
    }

    // MARK: Reads

    /// `ReadValue` (used for the Device Information strings).
    public func read(_ characteristic: DBusObjectPath) async throws -> [UInt8] {
        let reply = try await connection.call(destination: BlueZNames.service, path: characteristic,
                                              interface: BlueZNames.gattCharacteristic, member: "ReadValue",
                                              arguments: [[String: DBusValue]().dbusValue], timeout: callTimeout)
        return try reply.decode([UInt8].self)
    }

    // MARK: Notifications

    /// Enables notifications on `characteristic` and returns them in arrival order. The
    /// handler is installed before the CCCD is written, so the first notifications are not
    /// missed. The stream ends when the link goes away (fd hang-up) or the link is closed.
    ///
    /// The stream holds at most `bufferedNotifications` that were not read yet and refuses
    /// what comes beyond them (a reader that stops reading must not grow the process without
    /// bound); the boards' data path uses ``subscribe(to:delivery:coalescing:onBatch:onEnd:)``
    /// with its own counted bound instead.
    public func notifications(from characteristic: GattCharacteristicInfo,
                              delivery: NotificationDelivery = .automatic,
                              bufferedNotifications: Int = 4096) async throws -> AsyncStream<GattNotification> {
        let (stream, continuation) = AsyncStream.makeStream(of: GattNotification.self,
                                                            bufferingPolicy: .bufferingOldest(bufferedNotifications))
        try await subscribe(to: characteristic, delivery: delivery, coalescing: .zero,
                            onBatch: { batch in for notification in batch { continuation.yield(notification) } },
                            onEnd: { continuation.finish() })
        return stream
    }

    /// Enables notifications on `characteristic` and hands them to `onBatch` in arrival
    /// order, several at a time when several are waiting, without an intermediate stream:
    /// at hundreds of notifications a second every async hop counts. `onBatch` runs on the
    /// reading thread and must return quickly (e.g. yield into the consumer's own stream);
    /// `onEnd` is called once when the link goes away or is closed.
    ///
    /// With `AcquireNotify`, `coalescing` lets the reader wait that long after each wake-up
    /// before reading again, trading that much latency for fewer wake-ups; receive times
    /// stay the kernel's arrival times. With `StartNotify` each signal is its own batch until
    /// ``groupNotifications(_:)`` groups them.
    public func subscribe(to characteristic: GattCharacteristicInfo, delivery: NotificationDelivery = .automatic,
                          coalescing: Duration = .zero,
                          onBatch: @escaping @Sendable ([GattNotification]) -> Void,
                          onEnd: @escaping @Sendable () -> Void) async throws {
        if delivery == .automatic, characteristic.offersAcquireNotify, connection.canPassFileDescriptors {
            var refusals = 0
            while true {
                do {
                    acquiring.append(characteristic.path)
                    let reply: DBusMessage
                    do {
                        reply = try await connection.call(destination: BlueZNames.service, path: characteristic.path,
                                                          interface: BlueZNames.gattCharacteristic, member: "AcquireNotify",
                                                          arguments: [[String: DBusValue]().dbusValue], timeout: callTimeout)
                    } catch is CancellationError {
                        // Unanswered as far as we know: it stays in `acquiring` for close().
                        throw CancellationError()
                    } catch {
                        acquiring.removeAll { $0 == characteristic.path }
                        throw error
                    }
                    acquiring.removeAll { $0 == characteristic.path }
                    // Closed while the answer was on its way: its descriptor closes with the
                    // reply, which bluetoothd sees as the hang-up that releases it.
                    guard !closed else { throw DBusError.disconnected("the GATT link is closed") }
                    let (descriptor, _) = try reply.decode(DBusFileDescriptor.self, UInt16.self)
                    let fd = descriptor.duplicate()
                    if fd >= 0 {
                        readers.append(DatagramReader(owning: fd, coalescing: coalescing, deliver: onBatch, finish: onEnd))
                        acquiredPaths.append(characteristic.path)
                        activeDelivery = "AcquireNotify"
                        return
                    }
                } catch is CancellationError {
                    throw CancellationError()
                } catch let error as DBusError where BlueZErrorClass(error) == .noReply || closed {
                    throw error
                } catch let error as DBusError where Self.isHeldElsewhere(error) && refusals < Self.acquireRetries {
                    // Still held by a link we just closed (a quick reconnect): BlueZ frees it
                    // when it sees that fd hang up. Falling back now would leave this whole
                    // connection on the slower StartNotify path, or fail outright, since
                    // StartNotify is refused while the notify is acquired.
                    refusals += 1
                    try await Task.sleep(for: Self.acquireRetryInterval)
                    continue
                } catch {
                    // NotSupported / odd reply / still held after the retries: StartNotify below.
                }
                break
            }
        }
        // Exactly this characteristic's GattCharacteristic1 changes: the bus routes nothing else.
        let rule = DBusMatchRule(sender: BlueZNames.service, interface: DBusStandardInterface.properties,
                                 member: "PropertiesChanged", path: characteristic.path,
                                 arguments: [0: BlueZNames.gattCharacteristic])
        let grouper = NotificationGrouper(connection: connection, deliver: onBatch)
        groupers.append(grouper)
        // bluetoothd signals each notification once per notify client on the characteristic:
        // only the first of each notification's copies is one (NotificationCopies).
        let copies = Mutex(NotificationCopies())
        // On the connection's I/O thread, as each signal is read: the receive time is taken
        // there, with no task or thread between the read and the stamp.
        // It lives as long as the connection, which ``close()`` closes: that ends it (onEnd).
        _ = try await connection.addSignalHandler(matchingAny: [rule], onEnd: { _ in
            grouper.flush()
            onEnd()
        }) { signal in
            guard let bytes = signal.changedBytes("Value") else { return }
            let serial = signal.serial
            guard copies.withLock({ $0.isNotification(serial: serial, bytes: bytes) }) else { return }
            grouper.receive(GattNotification(bytes: bytes, receivedAt: .now, wallClock: Date()))
        }
        _ = try await connection.call(destination: BlueZNames.service, path: characteristic.path,
                                      interface: BlueZNames.gattCharacteristic, member: "StartNotify", timeout: callTimeout)
        notifyPaths.append(characteristic.path)
        activeDelivery = "StartNotify"
    }

    /// Groups notifications for a steady stream, one hand-off per `interval` instead of one
    /// per notification (a thread wake-up each). With `AcquireNotify` the reader rests
    /// `interval` after each read (the `coalescing` of ``subscribe(to:delivery:coalescing:onBatch:onEnd:)``
    /// from now on); datagrams keep their kernel arrival times. With `StartNotify` each
    /// signal is still read and stamped as it arrives, and only the hand-off is grouped: a
    /// notification after a quiet spell at once, later ones within `interval` at its end.
    /// Call it once a handshake's request-and-reply exchange is over (grouping would hold
    /// each reply); `.zero` hands each notification on by itself again.
    public func groupNotifications(_ interval: Duration) {
        groupingInterval = interval
        for grouper in groupers { grouper.setInterval(interval) }
        for reader in readers { reader.setCoalescing(readsPromptly ? .zero : interval) }
    }

    /// With `true`, an `AcquireNotify` reader reads as soon as datagrams arrive instead of
    /// resting the grouping interval after each read, until `false`. bluetoothd sends each
    /// notification into the socket without waiting and drops what does not fit (278 small
    /// datagrams on a default kernel, `net.core.wmem_default`): a reader resting 250 ms loses
    /// notifications from about 1,100 a second, which a flash-log readout reaches. Reading at
    /// once costs a wake-up per connection event (at most 134 a second), only while it lasts.
    /// `StartNotify` signals are read at once anyway (bluetoothd does not drop them); their
    /// grouping hands on what each read round brought instead of holding it to the window's
    /// end, as the reader does with what each wake-up finds.
    public func readPromptly(_ promptly: Bool) {
        readsPromptly = promptly
        for reader in readers { reader.setCoalescing(promptly ? .zero : groupingInterval) }
        for grouper in groupers { grouper.setPrompt(promptly) }
    }

    /// Hands on every `StartNotify` notification held by the grouping now, on the
    /// connection's I/O thread (where the signals are read, so none overtakes another), and
    /// returns once that is done: the link dropped and what it received goes to its consumer
    /// before anything the next link brings. Returns at once when the connection has ended
    /// (its end already handed everything on).
    public func flushGroupedNotifications() async {
        let groupers = groupers
        guard !groupers.isEmpty else { return }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            let scheduled = connection.schedule(after: .zero) {
                for grouper in groupers { grouper.flush() }
                done.resume()
            }
            if !scheduled { done.resume() }
        }
    }

    /// How often a refused `AcquireNotify` (notify acquired or in progress) is retried.
    static let acquireRetries = 8
    /// The pause before each retry.
    static let acquireRetryInterval: Duration = .milliseconds(100)

    /// `NotPermitted: Notify acquired` or `InProgress`: someone (typically our own previous
    /// link, closed a moment ago) still holds the notification channel.
    static func isHeldElsewhere(_ error: DBusError) -> Bool {
        switch error.name {
        case "org.bluez.Error.InProgress": true
        case "org.bluez.Error.NotPermitted": error.message.lowercased().contains("acquired")
        default: false
        }
    }

    /// Groups notification reads for the steady stream: with `StartNotify`, the link's
    /// connection then reads its socket at most once per `interval` after it ran dry (see
    /// ``DBusConnection/setReadCoalescing(_:)``), which also delays write replies by up to
    /// `interval`, so call it once the handshake is over and with `.zero` before a sequence
    /// of writes that should be fast. With `AcquireNotify` the reader already coalesces and
    /// this does nothing.
    public func coalesceNotificationReads(_ interval: Duration) {
        guard activeDelivery == "StartNotify" else { return }
        connection.setReadCoalescing(interval)
    }

    /// Turns notifications off (StopNotify / closing the fd) and closes the connection.
    /// Best effort with a short timeout: the link may already be gone. Every step runs even
    /// when the calling task is cancelled (a stop cancels a link that is still opening, and
    /// its calls must still reach bluetoothd before the connection leaves the bus).
    ///
    /// An acquired notification is released first and the connection closed only once
    /// bluetoothd has seen the descriptor hang up (`NotifyAcquired` false): bluetoothd 5.66
    /// frees the notify client when its owner leaves the bus and then, handling the hang-up,
    /// uses it again and crashes (fixed upstream after 5.66; real-bluez-vm.md, docs/bluez-vm.md),
    /// taking every board's link down with it. An `AcquireNotify` not answered yet gets a
    /// `StopNotify`: 5.66 holds such a call's notification as acquired from the start, and
    /// when its owner leaves the bus before the answer it frees the owner's client but keeps
    /// the acquisition, so the board's notifications are refused to every client ("Notify
    /// acquired") until its device object goes, and that removal uses the freed client
    /// (docs/bluez-vm.md, "The stop group and bluetoothd's acquired notifications").
    /// `StopNotify` releases it cleanly while the link is up (src/gatt-client.c
    /// `characteristic_stop_notify` -> `destroy_sock`).
    public func close() async {
        guard !closed else { return }
        closed = true
        // Waited for no longer than the release below: a StartNotify session whose StopNotify
        // a busy bluetoothd has not answered by then ends with this connection anyway (only an
        // acquired notify must be released first, the 5.66 crash), and a stop has 2 s in all.
        var unanswered: [DBusObjectPath] = []
        for path in acquiring where await linkIsUp(under: path) { unanswered.append(path) }
        for path in notifyPaths + unanswered {
            _ = try? await connection.callDespiteCancellation(destination: BlueZNames.service, path: path,
                                                              interface: BlueZNames.gattCharacteristic, member: "StopNotify",
                                                              timeout: Self.releaseWait)
        }
        readers.forEach { $0.stop() }
        for reader in readers { await reader.closed() }
        await awaitNotifyReleased(deadline: .now + Self.releaseWait)
        connection.close()
    }

    /// The longest a close waits for bluetoothd to release an acquired notification; past it
    /// the connection is closed anyway (a link that is already gone answers nothing).
    static let releaseWait: Duration = .milliseconds(400)

    /// Waits until bluetoothd reports every acquired notification of this link released, or
    /// `deadline`. Polled: bluetoothd sends no signal we could wait on without a match rule
    /// installed before the hang-up, and it usually answers `false` at the first read.
    private func awaitNotifyReleased(deadline: ContinuousClock.Instant) async {
        for path in acquiredPaths {
            while ContinuousClock.now < deadline {
                let remaining = deadline - .now
                guard let reply = try? await connection.callDespiteCancellation(
                    destination: BlueZNames.service, path: path, interface: DBusStandardInterface.properties,
                    member: "Get", arguments: [.string(BlueZNames.gattCharacteristic), .string("NotifyAcquired")],
                    timeout: min(remaining, .milliseconds(200))),
                      let value = try? reply.decode(DBusValue.self), value.unwrappingVariants == .boolean(true)
                else { break }
                await pause(.milliseconds(10))
            }
        }
    }

    /// Whether bluetoothd counts the device owning `characteristic` as connected (read, not
    /// signalled: after 5.66's connect race the property reads true though it was never
    /// signalled). With the link gone, an unanswered `AcquireNotify` must not get a
    /// `StopNotify`: 5.66 freed its client when the subscription's CCCD write failed and keeps
    /// the acquisition pointing at it, so a `StopNotify` then uses the freed client (fixed
    /// upstream after 5.66, bluez 476ae809a "gatt-client: avoid UAF after acquire notify failure").
    private func linkIsUp(under characteristic: DBusObjectPath) async -> Bool {
        // /org/bluez/hciN/dev_XX_XX_XX_XX_XX_XX/serviceNNNN/charNNNN
        let parts = characteristic.rawValue.split(separator: "/")
        guard parts.count > 4, let device = try? DBusObjectPath("/" + parts.prefix(4).joined(separator: "/")),
              let reply = try? await connection.callDespiteCancellation(
                  destination: BlueZNames.service, path: device, interface: DBusStandardInterface.properties,
                  member: "Get", arguments: [.string(BlueZNames.device), .string("Connected")], timeout: Self.releaseWait),
              let value = try? reply.decode(DBusValue.self)
        else { return false }
        return value.unwrappingVariants == .boolean(true)
    }

    /// Waits `duration` on the connection's I/O thread, cancelled or not (see ``close()``).
    private func pause(_ duration: Duration) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            if !connection.schedule(after: duration, { done.resume() }) { done.resume() }
        }
    }
}
