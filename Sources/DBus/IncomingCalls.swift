import Synchronization

/// The method calls read for a connection's exported objects, from the I/O thread to the
/// handler loop (``DBusConnection/serveCalls()``), which handles them one after another in
/// arrival order, as bluetoothd's main loop handles one connection's calls.
///
/// The buffer is bounded: a call that finds it full, or arrives when nobody serves calls any
/// more, gets an error reply at once instead of waiting out its caller's timeout.
final class IncomingCalls: Sendable {
    /// Calls read but not yet handled, at most.
    static let limit = 1024

    struct Received: Sendable {
        let message: DBusMessage
        let instant: ContinuousClock.Instant
    }

    private let calls: AsyncStream<Received>
    private let continuation: AsyncStream<Received>.Continuation
    private let served = Atomic<Bool>(false)

    init() {
        (calls, continuation) = AsyncStream.makeStream(of: Received.self, bufferingPolicy: .bufferingOldest(Self.limit))
    }

    /// I/O thread: queues `call` for the handler loop, or answers it with an error.
    func accept(_ call: DBusMessage, core: ConnectionCore) {
        let refusal: DBusError
        switch continuation.yield(Received(message: call, instant: .now)) {
        case .enqueued:
            return
        case .dropped:
            refusal = DBusError(name: DBusError.Name.limitsExceeded,
                                message: "\(core.uniqueName) has \(Self.limit) calls waiting to be handled")
        case .terminated:
            refusal = DBusError(name: DBusError.Name.failed, message: "\(core.uniqueName) no longer handles method calls")
        @unknown default:
            return
        }
        ObjectRegistry.send(ObjectRegistry.errorReply(refusal), answering: call, core: core)
    }

    /// The connection ended: the handler loop ends once it has handled what was read.
    func finish() { continuation.finish() }

    /// The handler loop: each call's ordered part in arrival order; answers that come later
    /// and work after answers run as child tasks, cancelled when the loop ends (the
    /// connection ended or the serving task was cancelled).
    func serve(_ registry: ObjectRegistry, core: ConnectionCore) async throws {
        guard !served.exchange(true, ordering: .acquiringAndReleasing) else {
            throw DBusError(name: DBusError.Name.failed, message: "\(core.uniqueName) already serves its method calls")
        }
        await withDiscardingTaskGroup { group in
            for await call in calls {
                let outcome = await registry.begin(call.message, received: call.instant, core: core)
                if let rest = outcome { group.addTask { await rest() } }
            }
            group.cancelAll()
        }
    }
}
