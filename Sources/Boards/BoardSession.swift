import Basics
import BlueZ
import Foundation
import MetaWear

/// One MetaWear board, kept streaming: a ``BoardTransport`` finds, connects and reconnects it;
/// the session runs the handshake on each link (driving MetaWear's ``HandshakeSequencer``),
/// starts the sensors, decodes notifications and supervises the stream. ``stop()`` ends
/// cleanly: sensors off, notifications off, disconnected.
///
/// Everything runs inside ``run()``: the transport and, per link, the handshake's writes and
/// timers, the stream watchdog and the battery reads are child tasks of its task groups, so
/// nothing outlives the session and a link's work ends with the link.
public actor BoardSession {
    /// The board's address.
    public nonisolated let address: BluetoothAddress
    /// The options in force.
    public nonisolated let options: BoardSessionOptions
    /// Events in order, in batches (see ``BoardEventStream``); finishes when ``run()`` ends.
    public nonisolated let events: BoardEventStream

    let transport: any BoardTransport
    let eventContinuation: AsyncStream<[BoardEvent]>.Continuation
    var state: BoardState?
    /// The board as its last handshake described it (kept across links: no re-probe).
    var description: BoardDescription?
    /// The plan streaming on the current link; nil until its handshake finished.
    var plan: StreamingPlan?
    /// The last plan that streamed: decodes what a board still streaming from before a
    /// reconnect sends during the shortened handshake (issue 18 defect 3).
    var knownPlan: StreamingPlan?
    /// Whether the sensors should stream (see ``setSensors(_:)``).
    var sensorsOn: Bool
    /// Whether the board runs ``knownPlan``'s sensors as we last set them up: its start
    /// commands were written and no stop since. A board keeps them through a link drop until
    /// it resets, so a reconnect whose board clock shows the same boot writes them no more.
    var boardRunsPlan = false
    var ledSignal: LEDSignal = .off
    /// Handshakes that reached streaming; after the first, the settle pause is skipped.
    var completedHandshakes = 0
    /// The current link's work; nil between links.
    var current: LinkWork?
    var tap: StreamingTap
    /// The flash loggers found or made on an earlier link (reused without asking again).
    var flashLoggers: [MotionSensor: LoggerIDs]?
    /// The flash log's last reported status, and its last `.logging` one (shown again after a
    /// download).
    var flashLogStatus: FlashLogStatus?
    var flashLogLogging: FlashLogStatus?
    /// A download was asked for while no link logged: it starts once one does.
    var flashLogDownloadWanted = false
    /// A readout of the whole log is wanted once the flash log's loggers are found (``drainFlashLog()``).
    var flashLogDrainWanted = false
    var streamRestarts = 0
    private var lifecycle = Lifecycle.new
    private var finishWaiters: [CheckedContinuation<Void, Never>] = []

    private enum Lifecycle { case new, running, stopping, finished }

    /// A session for `address` through BlueZ on `client`; call ``run()``.
    public init(address: BluetoothAddress, client: BlueZClient, options: BoardSessionOptions) {
        self.init(address: address, options: options,
                  transport: BlueZBoardTransport(address: address, client: client, options: options))
    }

    /// A session for `address` over `transport`; call ``run()``.
    public init(address: BluetoothAddress, options: BoardSessionOptions, transport: any BoardTransport) {
        self.address = address
        self.options = options
        self.transport = transport
        sensorsOn = options.sensorsOnConnect
        (events, eventContinuation) = BoardEventStream.makeStream(gauge: BoardEventStream.sessionGauge)
        tap = StreamingTap(board: address)
    }

    /// Connects the board and keeps it connected, handshaken and streaming until ``stop()``
    /// (or cancellation, which ends it without the stop commands); then finishes ``events``.
    public func run() async {
        guard lifecycle == .new else { return }
        lifecycle = .running
        let transport = transport
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await transport.run() }
            for await event in transport.events {
                switch event {
                case .connecting(let failures, let lastFailure):
                    reportConnecting(failures: failures, lastFailure: lastFailure)
                case .linkReady(let link):
                    await run(link)
                    // A stop closed this link and its last notifications are handed on: the
                    // board delivers nothing more, so it is reported stopped now. What the stop
                    // still does (waiting for bluetoothd to report the notify released, up to
                    // 400 ms, the connection's close, scanning off) brings no sample, and a
                    // shutdown's seal, which waits for this event, runs beside it instead of
                    // after it (issue 18 §2.7: 2 s in all).
                    if isStopping { emit(.state(.stopped)) }
                case .linkLost(let reason):
                    emit(.state(.lost(reason: reason)))
                }
            }
            group.cancelAll()
        }
        emit(.state(.stopped))
        finish()
    }

    /// Stops the board cleanly (sensors off, notifications off, disconnect) and returns once
    /// ``run()`` has ended and ``events`` finished. `linkEnding` is called once the link's end
    /// is asked for (``BoardTransport/stop(writing:linkEnding:)``), or at once when this stop
    /// has no link to end (never run, already stopped, another caller's stop under way).
    public func stop(linkEnding: @escaping @Sendable () -> Void = {}) async {
        switch lifecycle {
        case .finished:
            linkEnding()
            return
        case .new:
            finish()
            linkEnding()
            return
        case .running:
            lifecycle = .stopping
            await transport.stop(writing: stopCommands(), linkEnding: linkEnding)
        case .stopping:
            linkEnding()
        }
        if lifecycle == .finished { return }
        await withCheckedContinuation { finishWaiters.append($0) }
    }

    /// Whether ``stop()`` was asked for.
    var isStopping: Bool { lifecycle == .stopping || lifecycle == .finished }

    /// Shows an LED signal now and after every reconnect (e.g. `.recording`, `.error`, `.off`).
    public func setLED(_ signal: LEDSignal) {
        ledSignal = signal
        guard plan != nil, let description else { return }
        write(signal.commands(ledRevision: description.ledRevision ?? 1))
    }

    /// Starts or stops the sensors, now if the board is connected and after every later
    /// handshake: on, the stream starts (fast connection parameters, stream watchdog); off, the
    /// board stays connected for its button and battery with gyro and accelerometer stopped
    /// and relaxed connection parameters (``ConnectionParameters/idle``).
    public func setSensors(_ on: Bool) {
        guard on != sensorsOn else { return }
        sensorsOn = on
        // A probe of the stream before this change says nothing about the next one.
        current?.probe.settle()
        guard let plan, let description else { return }
        if on {
            emit(.state(.streaming(description)))
            tap.noteRestart()
            // The flash log's replies are not held by the grouping while it starts.
            let flashLog = startFlashLog(description)
            if current?.flashStart != nil { current?.operations.yield(.ungroupNotifications) }
            var commands = flashLog + plan.startCommands
            if let fast = options.configuration.connectionParameters, (description.settingsRevision ?? 0) >= 1 {
                commands.append(Commands.connectionParameters(fast))
            }
            write(commands)
            boardRunsPlan = true
            current?.watch.yield()
        } else {
            streamRestarts = 0
            write(sensorsOffCommands(plan, description))
            boardRunsPlan = false
            emit(.state(.idle(description)))
        }
    }

    /// The current state.
    public var currentState: BoardState? { state }

    /// The board as described by its last handshake.
    public var boardDescription: BoardDescription? { description }

    // MARK: Events

    /// Maps the transport's progress to a state: connecting the first time, reconnecting
    /// (attempt 1 right after a loss) once a link was had or an attempt failed.
    private func reportConnecting(failures: Int, lastFailure: String?) {
        if failures == 0, state == nil || state == .connecting {
            emit(.state(.connecting))
        } else if case .lost = state, failures == 0 {
            emit(.state(.reconnecting(attempt: 1, lastFailure: lastFailure)))
        } else if failures > 0 {
            emit(.state(.reconnecting(attempt: failures, lastFailure: lastFailure)))
        }
    }

    func emit(_ kind: BoardEvent.Kind, at notification: GattNotification? = nil) {
        if case .state(let new) = kind {
            // Nothing follows a stop's `stopped` (reported once its last link's notifications
            // ended): a loss the stop's own close brings is part of the stop.
            guard new != state, state != .stopped else { return }
            state = new
        }
        let event = BoardEvent(board: address, kind: kind, receivedAt: notification?.receivedAt ?? .now,
                               wallClock: notification?.wallClock ?? Date())
        BoardEventStream.sessionGauge.record(eventContinuation.yield([event]))
    }

    private func finish() {
        lifecycle = .finished
        eventContinuation.finish()
        for waiter in finishWaiters { waiter.resume() }
        finishWaiters.removeAll()
    }
}
