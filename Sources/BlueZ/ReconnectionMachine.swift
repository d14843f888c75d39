import Basics

/// The per-board connection/reconnection logic of reference bluez-dbus.md §2.3 as a pure
/// value: facts and call outcomes in, actions out, time passed in by the driver.
///
/// The driver (a board session) owns the I/O. It reports what it observes about BlueZ
/// (``Event``), performs each returned ``Action`` and reports its outcome, and calls
/// ``handle(_:at:)`` with ``Event/wakeUp`` when the last requested ``Action/wakeUp(at:)``
/// time has come. Times are `Duration`s since any fixed origin the driver picks (tests use a
/// virtual clock). Nothing here blocks, sleeps or talks to D-Bus.
///
/// The machine reconciles: after every event it looks at what it knows (BlueZ on the bus, a
/// powered adapter, the device object, `Connected`, `ServicesResolved`) and issues at most the
/// next step, never stacking a second `Connect` or discovery start.
public struct ReconnectionMachine: Sendable {
    /// Where the machine is.
    public enum Phase: Hashable, Sendable, CustomStringConvertible {
        case idle
        case waitingForBlueZ
        case waitingForAdapter
        /// Discovering: the device object is not there yet.
        case locating
        /// `Device1.Connect` is outstanding.
        case connecting
        /// Another client's connect is pending (`InProgress`): waiting for `Connected`.
        case waitingForPendingConnect
        /// Connected, waiting for `ServicesResolved` (or checking the GATT tree).
        case resolvingServices
        /// Waiting for `Connected=false` before the next attempt.
        case awaitingLinkDown
        /// Pausing before the next attempt.
        case backingOff
        /// Link up and GATT tree complete; the session runs the board protocol.
        case ready
        case stopped

        public var description: String {
            switch self {
            case .idle: "idle"
            case .waitingForBlueZ: "waiting for org.bluez"
            case .waitingForAdapter: "waiting for a powered adapter"
            case .locating: "scanning for the device"
            case .connecting: "connecting"
            case .waitingForPendingConnect: "waiting for a pending connect"
            case .resolvingServices: "resolving services"
            case .awaitingLinkDown: "waiting for the link to go down"
            case .backingOff: "backing off"
            case .ready: "ready"
            case .stopped: "stopped"
            }
        }
    }

    /// Something the driver observed or finished.
    public enum Event: Hashable, Sendable {
        /// Begin connecting (and keep the board connected until ``stop``).
        case start
        /// Give up the board: disconnect and stay down.
        case stop
        /// `org.bluez` has (true) or has lost (false) an owner on the bus.
        case blueZAvailable(Bool)
        /// A powered adapter is (true) or is no longer (false) available.
        case adapterAvailable(Bool)
        /// The board's `Device1` object exists (true) or was removed (false).
        case devicePresent(Bool)
        /// `Device1.Connected` changed.
        case connected(Bool)
        /// `Device1.ServicesResolved` changed.
        case servicesResolved(Bool)
        /// The outstanding `Connect` returned: nil on success, else its error class.
        case connectFinished(BlueZErrorClass?)
        /// Result of ``Action/checkGATT``: whether every required characteristic is there.
        case gattChecked(complete: Bool)
        /// The board protocol on a ready link failed (handshake, stream watchdog).
        case sessionFailed(String)
        /// bluetoothd closed the ready link's notification channel (the AcquireNotify socket)
        /// without being asked: it does so when the link drops (src/gatt-client.c,
        /// `btd_gatt_client_disconnected`), whatever it signals about `Connected`.
        case notificationsClosed
        /// The time requested with ``Action/wakeUp(at:)`` has come.
        case wakeUp
    }

    /// Something the driver must do.
    public enum Action: Hashable, Sendable {
        /// `SetDiscoveryFilter` + `StartDiscovery` (shared per D-Bus connection).
        case startDiscovery
        case stopDiscovery
        /// Call `Device1.Connect` with ``ReconnectionPolicy/connectTimeout``; report
        /// ``Event/connectFinished(_:)``.
        case connect
        /// Call `Device1.Disconnect` (also cancels a pending Connect); errors are ignored.
        case disconnect
        /// Look the required characteristics up; report ``Event/gattChecked(complete:)``.
        case checkGATT
        /// `Adapter1.RemoveDevice` to flush a stale cache (escalation, or incomplete GATT).
        case removeDevice
        /// `Powered=false` then `true` on the adapter (escalation, opt-in).
        case powerCycleAdapter
        /// Call ``handle(_:at:)`` with ``Event/wakeUp`` at this time (replaces any earlier
        /// request).
        case wakeUp(at: Duration)
        /// The link is usable: start the board protocol.
        case linkReady
        /// The link the board protocol ran on is gone: stop using it.
        case linkLost(LinkLossReason)
    }

    /// The policy in force.
    public let policy: ReconnectionPolicy
    /// The current phase.
    public private(set) var phase: Phase = .idle
    /// Failed attempts since the link was last ready (0 while healthy).
    public private(set) var consecutiveFailures = 0
    /// The last failure's class or reason, for status reports.
    public private(set) var lastFailure: String?

    private var blueZUp = false
    private var adapterUp = false
    /// Whether the device object exists; a new object has none of the old one's GATT objects.
    private var devicePresent = false {
        didSet { if !devicePresent { wasReady = false } }
    }
    private var isConnected = false {
        didSet { if !isConnected { disconnectAsked = false } }
    }
    /// A `Disconnect` was asked for the link that is up: the next attempt waits for the link to
    /// go down rather than asking again (a failed session's `Disconnect`, then its backoff's end
    /// before bluetoothd's `Connected=false` arrived, asked twice within a millisecond in the
    /// real-BlueZ VM).
    private var disconnectAsked = false
    private var isServicesResolved = false
    private var discovering = false
    private var checkingGATT = false
    /// The check in flight was made before `ServicesResolved`, from the GATT objects bluetoothd
    /// kept from the last link.
    private var checkingCachedGATT = false
    private var gattRechecked = false
    /// A link to this device object was ready before: bluetoothd keeps its GATT objects and
    /// database across link drops (main.conf `[GATT] Cache = always`, its default), so a
    /// reconnect can use them as soon as `Connect` returns, before `ServicesResolved`.
    private var wasReady = false
    /// Set after a deliberate disconnect or a failed session: an existing link must be torn
    /// down rather than adopted.
    private var needsFreshLink = false
    private var transientAborts = 0
    private var hardFailures = 0
    private var escalations = 0
    private var deadline: Duration?
    private var random: SeededRandom

    /// A machine for one board; `seed` fixes the backoff jitter.
    public init(policy: ReconnectionPolicy = ReconnectionPolicy(), seed: UInt64 = 0x6D77_6761_7465) {
        self.policy = policy
        random = SeededRandom(seed: seed)
    }

    /// The requested wake-up time, if any.
    public var wakeUpTime: Duration? { deadline }

    /// Whether a link to the board may be up, so that giving the board up must end it:
    /// `Connected` seen, a `Connect` outstanding (it may complete at any moment; `Disconnect`
    /// cancels it), or answered. After bluetoothd 5.66's connect race `Connect` returned and the
    /// link works with `Connected=true` never signalled, so `isConnected` alone misses a link
    /// that is up; in the real-BlueZ VM a stop then left the board's link up after mwgated
    /// had exited.
    public var linkMayBeUp: Bool {
        switch phase {
        case .connecting, .waitingForPendingConnect, .resolvingServices, .ready, .awaitingLinkDown:
            true
        case .idle, .waitingForBlueZ, .waitingForAdapter, .locating, .backingOff, .stopped:
            isConnected || isServicesResolved
        }
    }

    /// Feeds one event; returns the actions to perform, in order.
    public mutating func handle(_ event: Event, at now: Duration) -> [Action] {
        let actions = step(event, at: now)
        if actions.contains(.disconnect) { disconnectAsked = true }
        return actions
    }

    private mutating func step(_ event: Event, at now: Duration) -> [Action] {
        if phase == .stopped { return [] }
        var actions: [Action] = []
        switch event {
        case .start:
            guard phase == .idle else { return [] }
            phase = .waitingForBlueZ
        case .stop:
            return stop()
        case .blueZAvailable(let up):
            guard up != blueZUp else { return [] }
            blueZUp = up
            if !up {
                actions += loseLink(.blueZRestarted)
                adapterUp = false
                devicePresent = false
                isConnected = false
                isServicesResolved = false
                discovering = false
                phase = .waitingForBlueZ
                deadline = nil
                return actions
            }
        case .adapterAvailable(let up):
            guard up != adapterUp else { return [] }
            adapterUp = up
            if !up {
                actions += loseLink(.adapterOff)
                isConnected = false
                isServicesResolved = false
                discovering = false
                if phase != .waitingForBlueZ { phase = .waitingForAdapter }
                deadline = nil
                return actions
            }
        case .devicePresent(let present):
            guard present != devicePresent else { return [] }
            devicePresent = present
            if !present {
                let wasActive = phase == .ready || phase == .connecting || phase == .resolvingServices
                    || phase == .waitingForPendingConnect || phase == .awaitingLinkDown
                actions += loseLink(.deviceRemoved)
                isConnected = false
                isServicesResolved = false
                if wasActive {
                    // Whatever was in flight on the old path is void; scan again at once.
                    phase = .locating
                    deadline = nil
                }
            }
        case .connected(let connected):
            guard connected != isConnected else { return [] }
            isConnected = connected
            if !connected {
                isServicesResolved = false
                switch phase {
                case .ready:
                    return linkWentDown(at: now)
                case .resolvingServices:
                    actions += fail("link lost during service discovery", hard: false, at: now)
                    return actions
                case .awaitingLinkDown:
                    phase = .backingOff
                    deadline = now + (transientAborts > 0 ? policy.transientBackoff : .zero)
                    return [.wakeUp(at: deadline ?? now)]
                default:
                    break
                }
            } else if phase == .waitingForPendingConnect {
                phase = .resolvingServices
                deadline = now + policy.servicesTimeout
                actions.append(.wakeUp(at: now + policy.servicesTimeout))
            }
        case .servicesResolved(let resolved):
            guard resolved != isServicesResolved else { return [] }
            isServicesResolved = resolved
            if resolved, phase == .resolvingServices, !checkingGATT {
                checkingGATT = true
                return [.checkGATT]
            }
            // bluetoothd 5.66 clears ServicesResolved only when the link goes down. After its
            // connect race (Connect returned, Connected=true never signalled) the Connected=false
            // that follows is no change to us, and this is the only sign of the drop.
            if !resolved, phase == .ready { return linkWentDown(at: now) }
            return []
        case .notificationsClosed:
            guard phase == .ready else { return [] }
            return linkWentDown(at: now)
        case .connectFinished(let errorClass):
            guard phase == .connecting else { return [] }
            return connectFinished(errorClass, at: now)
        case .gattChecked(let complete):
            guard checkingGATT else { return [] }
            checkingGATT = false
            let cached = checkingCachedGATT
            checkingCachedGATT = false
            guard phase == .resolvingServices else { return [] }
            if !complete, cached {
                // The kept objects are gone or changed: the usual check once services resolve.
                guard isServicesResolved else { return [] }
                checkingGATT = true
                return [.checkGATT]
            }
            if complete {
                wasReady = true
                phase = .ready
                consecutiveFailures = 0
                transientAborts = 0
                hardFailures = 0
                escalations = 0
                gattRechecked = false
                lastFailure = nil
                deadline = nil
                return [.linkReady]
            }
            if !gattRechecked {
                gattRechecked = true
                deadline = now + policy.gattRecheckDelay
                return [.wakeUp(at: now + policy.gattRecheckDelay)]
            }
            // Still incomplete: a stale cache. Flush it and find the device again.
            gattRechecked = false
            actions = [.disconnect, .removeDevice]
            devicePresent = false
            needsFreshLink = false
            actions += fail("GATT tree incomplete after services resolved", hard: true, at: now)
            return actions
        case .sessionFailed(let reason):
            guard phase == .ready else { return [] }
            actions += loseLink(.sessionFailed(reason))
            actions.append(.disconnect)
            needsFreshLink = true
            actions += fail(reason, hard: true, at: now)
            return actions
        case .wakeUp:
            guard let due = deadline, now >= due else { return deadline.map { [.wakeUp(at: $0)] } ?? [] }
            deadline = nil
            switch phase {
            case .resolvingServices:
                if gattRechecked, !checkingGATT {
                    checkingGATT = true
                    return [.checkGATT]
                }
                actions.append(.disconnect)
                needsFreshLink = true
                actions += fail("services not resolved in time", hard: false, at: now)
                return actions
            case .waitingForPendingConnect:
                actions.append(.disconnect)
                needsFreshLink = true
                actions += fail("pending connect never completed", hard: false, at: now)
                return actions
            case .awaitingLinkDown:
                // The link never went down by itself; carry on with a fresh attempt anyway
                // (asking for its end once more).
                phase = .backingOff
                disconnectAsked = false
            case .locating:
                // Restart a scan that found nothing (the adapter may have wedged).
                discovering = false
                actions.append(.stopDiscovery)
            case .backingOff:
                break
            default:
                return []
            }
        }
        actions += proceed(at: now)
        return actions
    }

    // MARK: Steps

    /// Issues the next step for the current facts (§2.3 steps 2–7).
    private mutating func proceed(at now: Duration) -> [Action] {
        switch phase {
        case .idle, .stopped, .ready, .connecting, .waitingForPendingConnect, .resolvingServices:
            return []
        case .backingOff, .awaitingLinkDown:
            if let deadline, now < deadline { return [] }
        case .waitingForBlueZ, .waitingForAdapter, .locating:
            break
        }
        guard blueZUp else {
            phase = .waitingForBlueZ
            return []
        }
        guard adapterUp else {
            phase = .waitingForAdapter
            return []
        }
        guard devicePresent else {
            if phase == .locating, discovering { return [] }
            phase = .locating
            discovering = true
            deadline = now + policy.scanRestartInterval
            return [.startDiscovery, .wakeUp(at: now + policy.scanRestartInterval)]
        }
        var actions: [Action] = []
        if discovering {
            discovering = false
            actions.append(.stopDiscovery)
        }
        if isConnected {
            if needsFreshLink {
                phase = .awaitingLinkDown
                deadline = now + policy.linkDownTimeout
                return actions + (disconnectAsked ? [] : [.disconnect]) + [.wakeUp(at: now + policy.linkDownTimeout)]
            }
            // A link left over from before (our restart, BlueZ auto-connect): adopt it (§2.3 step 4).
            phase = .resolvingServices
            deadline = now + policy.servicesTimeout
            actions.append(.wakeUp(at: now + policy.servicesTimeout))
            if isServicesResolved {
                checkingGATT = true
                actions.append(.checkGATT)
            }
            return actions
        }
        needsFreshLink = false
        phase = .connecting
        deadline = nil
        return actions + [.connect]
    }

    private mutating func connectFinished(_ errorClass: BlueZErrorClass?, at now: Duration) -> [Action] {
        switch errorClass {
        case nil, .alreadyConnected?:
            phase = .resolvingServices
            deadline = now + policy.servicesTimeout
            var actions: [Action] = [.wakeUp(at: now + policy.servicesTimeout)]
            if isServicesResolved || wasReady, !checkingGATT {
                // A reconnect does not wait for ServicesResolved: bluetoothd answers Connect
                // once its GATT client is attached to the link, and from then on accepts
                // AcquireNotify/StartNotify and writes on the objects it kept, writing the
                // board's CCCD right after the MTU exchange, while it is still checking (DB
                // Hash) or rediscovering (no DB Hash, as on a MetaWear) the services.
                // Waiting for ServicesResolved lost 0.3-2.5 s of samples a drop in the VM.
                checkingGATT = true
                checkingCachedGATT = !isServicesResolved
                actions.append(.checkGATT)
            }
            return actions
        case .transientAbort?:
            transientAborts += 1
            if transientAborts > policy.transientLimit {
                return [.disconnect] + fail("\(BlueZErrorClass.transientAbort) (\(transientAborts) in a row)", hard: true, at: now)
            }
            consecutiveFailures += 1
            lastFailure = BlueZErrorClass.transientAbort.description
            if isConnected {
                // BlueZ shows a brief Connected=true blip after this abort; retry only once it is down.
                phase = .awaitingLinkDown
                deadline = now + policy.linkDownTimeout
                return [.wakeUp(at: now + policy.linkDownTimeout)]
            }
            return backOff(for: nil, delay: policy.transientBackoff, at: now)
        case .inProgress?:
            consecutiveFailures += 1
            lastFailure = BlueZErrorClass.inProgress.description
            if isConnected {
                phase = .resolvingServices
                deadline = now + policy.servicesTimeout
                return [.wakeUp(at: now + policy.servicesTimeout)]
            }
            phase = .waitingForPendingConnect
            deadline = now + policy.connectTimeout
            return [.wakeUp(at: now + policy.connectTimeout)]
        case .deviceGone?:
            devicePresent = false
            isConnected = false
            isServicesResolved = false
            consecutiveFailures += 1
            lastFailure = BlueZErrorClass.deviceGone.description
            return backOff(for: nil, delay: policy.deviceGoneBackoff, at: now)
        case .adapterNotReady?:
            adapterUp = false
            consecutiveFailures += 1
            lastFailure = BlueZErrorClass.adapterNotReady.description
            phase = .waitingForAdapter
            deadline = nil
            return []
        case .noReply?:
            needsFreshLink = true
            return [.disconnect] + fail(BlueZErrorClass.noReply.description, hard: false, at: now)
        case .notConnected?, .notPermitted?, .failed?:
            return fail(errorClass?.description ?? "failed", hard: true, at: now)
        }
    }

    /// Records a failed attempt and schedules the next one with full-jitter exponential backoff.
    private mutating func fail(_ reason: String, hard: Bool, at now: Duration) -> [Action] {
        consecutiveFailures += 1
        lastFailure = reason
        checkingGATT = false
        checkingCachedGATT = false
        var actions: [Action] = []
        if hard {
            hardFailures += 1
            if hardFailures >= policy.escalationThreshold {
                hardFailures = 0
                escalations += 1
                if escalations >= 2, policy.allowAdapterPowerCycle {
                    escalations = 0
                    actions.append(.powerCycleAdapter)
                } else if devicePresent {
                    actions.append(.removeDevice)
                    devicePresent = false
                }
            }
        }
        return actions + backOff(for: consecutiveFailures, delay: nil, at: now)
    }

    /// Enters `.backingOff`; `delay` nil means full jitter over the exponential window.
    private mutating func backOff(for failures: Int?, delay: Duration?, at now: Duration) -> [Action] {
        let pause = delay ?? jitteredBackoff(failures: failures ?? consecutiveFailures)
        phase = .backingOff
        deadline = now + pause
        return [.wakeUp(at: now + pause)]
    }

    /// Full jitter: uniform in [0, min(cap, base·2^(n−1))], but never below a tenth of the base
    /// so a failing board cannot spin.
    private mutating func jitteredBackoff(failures: Int) -> Duration {
        let exponent = min(max(failures - 1, 0), 20)
        let window = min(policy.maximumBackoff, policy.baseBackoff * (1 << exponent))
        let windowNanos = max(window.nanoseconds, 1)
        let floor = policy.baseBackoff.nanoseconds / 10
        let pick = Int64(UInt64.random(in: 0...UInt64(windowNanos), using: &random))
        return .nanoseconds(max(pick, floor))
    }

    /// The ready link is down (Connected, ServicesResolved or the notification channel said
    /// so, whichever came first): a clean remote disconnect is retried at once (§2.3 step 13).
    private mutating func linkWentDown(at now: Duration) -> [Action] {
        isConnected = false
        isServicesResolved = false
        return loseLink(.linkDropped) + backOff(for: nil, delay: .zero, at: now)
    }

    private mutating func loseLink(_ reason: LinkLossReason) -> [Action] {
        checkingGATT = false
        checkingCachedGATT = false
        guard phase == .ready else { return [] }
        phase = .backingOff
        return [.linkLost(reason)]
    }

    private mutating func stop() -> [Action] {
        // Judged before the link is given up below, which leaves `.ready`.
        let disconnecting = linkMayBeUp
        var actions = loseLink(.stopped)
        if discovering { actions.append(.stopDiscovery) }
        if disconnecting { actions.append(.disconnect) }
        discovering = false
        phase = .stopped
        deadline = nil
        return actions
    }
}

/// Why a ready link stopped being usable.
public enum LinkLossReason: Hashable, Sendable, CustomStringConvertible {
    /// `Connected` went false (remote disconnect, supervision timeout).
    case linkDropped
    /// The `Device1` object was removed.
    case deviceRemoved
    /// The adapter was powered off or removed.
    case adapterOff
    /// `org.bluez` lost its owner (bluetoothd stopped or restarted).
    case blueZRestarted
    /// The board protocol failed on the link (handshake, watchdog).
    case sessionFailed(String)
    /// The board was stopped on request.
    case stopped

    public var description: String {
        switch self {
        case .linkDropped: "link dropped"
        case .deviceRemoved: "device removed from BlueZ"
        case .adapterOff: "adapter powered off or removed"
        case .blueZRestarted: "bluetoothd went away"
        case .sessionFailed(let reason): "session failed: \(reason)"
        case .stopped: "stopped"
        }
    }
}

extension Duration {
    /// Whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product &+ attoseconds / 1_000_000_000
    }
}
