import BlueZ
import TestSupport

/// An in-memory BlueZ that reacts to the machine's actions, and a virtual clock. No D-Bus.
struct ReconnectionHarness {
    typealias Action = ReconnectionMachine.Action
    typealias Event = ReconnectionMachine.Event

    /// How the fake answers the next `Connect`.
    enum ConnectScript {
        case success
        case fail(BlueZErrorClass)
        /// `le-connection-abort-by-local`: Connected true, the error, then Connected false after a moment.
        case abortWithBlip
        /// Never answers (the call is outstanding until the driver's timeout).
        case hang
        /// Connects but ServicesResolved never comes.
        case noServices
        /// bluetoothd 5.66's connect race: Connect returns and services resolve, but
        /// `Connected=true` is never signalled.
        case connectedNotSignalled
        /// Connects; `ServicesResolved` comes this long after `Connect` returned (bluetoothd
        /// checking or rediscovering the board's services).
        case servicesLate(Duration)
    }

    var machine: ReconnectionMachine
    var now: Duration = .zero
    var connected = false
    var devicePresent = true
    /// Whether scanning finds the device (after `scanDelay`).
    var deviceAdvertising = true
    var scanDelay: Duration = .seconds(1)
    var gattComplete = true
    /// How long after a `Disconnect` bluetoothd reports the link down (`ServicesResolved` and
    /// `Connected` false): at once unless set (a busy bluetoothd, or its signal still on its way).
    var linkDownAfterDisconnect: Duration = .zero
    /// Whether bluetoothd keeps a device's GATT objects while its link is down (main.conf
    /// `[GATT] Cache = always`); otherwise they exist only while services are resolved.
    var gattKept = true
    /// bluetoothd has exported the GATT objects since the device object appeared.
    private var gattExported = false
    /// `ServicesResolved` as bluetoothd last signalled it.
    private var resolved = false
    var connectScripts: [ConnectScript] = []
    /// Every action with its time.
    private(set) var log: [(time: Duration, action: Action)] = []
    private var queue: [Event] = []
    private var delayed: [(time: Duration, event: Event)] = []

    init(policy: ReconnectionPolicy = ReconnectionPolicy(), seed: UInt64 = 1) {
        machine = ReconnectionMachine(policy: policy, seed: seed)
    }

    /// Starts with BlueZ, the device object (if `devicePresent`) and a powered adapter, in the
    /// order the session reports facts (rises last).
    mutating func boot() {
        send(.start)
        send(.blueZAvailable(true))
        send(.devicePresent(devicePresent))
        send(.adapterAvailable(true))
    }

    mutating func send(_ event: Event) {
        apply(event)
        queue.append(event)
        drain()
    }

    /// Injects an external change after `delay`.
    mutating func schedule(_ event: Event, after delay: Duration) {
        delayed.append((now + delay, event))
    }

    /// Advances virtual time, delivering scheduled events and wake-ups in order.
    mutating func advance(by duration: Duration) {
        let end = now + duration
        while true {
            let nextDelayed = delayed.map(\.time).min()
            let nextWake = machine.wakeUpTime
            let next = [nextDelayed, nextWake].compactMap { $0 }.min()
            guard let next, next <= end else { break }
            now = max(now, next)
            if let index = delayed.firstIndex(where: { $0.time <= now }) {
                let event = delayed.remove(at: index).event
                apply(event)
                queue.append(event)
            } else {
                queue.append(.wakeUp)
            }
            drain()
        }
        now = end
    }

    /// Keeps the world's facts in line with externally injected events.
    private mutating func apply(_ event: Event) {
        switch event {
        case .connected(let value):
            connected = value
            if !value { resolved = false }
        case .devicePresent(let value):
            devicePresent = value
            if !value { gattExported = false }
        case .servicesResolved(let value):
            resolved = value
            if value { gattExported = true }
        default: break
        }
    }

    /// Queues bluetoothd's `ServicesResolved=true` (the GATT objects exported by then).
    private mutating func resolveServices() {
        resolved = true
        gattExported = true
        queue.append(.servicesResolved(true))
    }

    private mutating func drain() {
        while !queue.isEmpty {
            let event = queue.removeFirst()
            for action in machine.handle(event, at: now) {
                log.append((now, action))
                react(to: action)
            }
        }
    }

    private mutating func react(to action: Action) {
        switch action {
        case .connect:
            let script = connectScripts.isEmpty ? .success : connectScripts.removeFirst()
            switch script {
            case .success:
                connected = true
                queue += [.connected(true), .connectFinished(nil)]
                resolveServices()
            case .noServices:
                connected = true
                queue += [.connected(true), .connectFinished(nil)]
            case .connectedNotSignalled:
                connected = true
                queue += [.connectFinished(nil)]
                resolveServices()
            case .servicesLate(let delay):
                connected = true
                queue += [.connected(true), .connectFinished(nil)]
                delayed.append((now + delay, .servicesResolved(true)))
            case .fail(let errorClass):
                if errorClass == .deviceGone { devicePresent = false }
                queue.append(.connectFinished(errorClass))
            case .abortWithBlip:
                connected = true
                queue += [.connected(true), .connectFinished(.transientAbort)]
                delayed.append((now + .milliseconds(100), .connected(false)))
            case .hang:
                break
            }
        case .disconnect:
            if connected, linkDownAfterDisconnect > .zero {
                delayed += [(now + linkDownAfterDisconnect, .servicesResolved(false)), (now + linkDownAfterDisconnect, .connected(false))]
            } else if connected {
                connected = false
                resolved = false
                queue += [.servicesResolved(false), .connected(false)]
            }
        case .checkGATT:
            let exported = resolved || (gattExported && gattKept)
            queue.append(.gattChecked(complete: gattComplete && exported))
        case .removeDevice:
            if devicePresent {
                devicePresent = false
                gattExported = false
                queue.append(.devicePresent(false))
            }
        case .startDiscovery:
            if deviceAdvertising, !devicePresent { delayed.append((now + scanDelay, .devicePresent(true))) }
        case .stopDiscovery, .powerCycleAdapter, .wakeUp, .linkReady, .linkLost:
            break
        }
    }

    // MARK: Queries

    func count(_ predicate: (Action) -> Bool) -> Int { log.filter { predicate($0.action) }.count }
    var connects: [Duration] { log.filter { $0.action == .connect }.map(\.time) }
    var readyCount: Int { count { $0 == .linkReady } }
    /// When the machine said the link was ready.
    var readyTimes: [Duration] { log.filter { $0.action == .linkReady }.map(\.time) }
    var losses: [LinkLossReason] {
        log.compactMap { if case .linkLost(let reason) = $0.action { reason } else { nil } }
    }
}
