import BlueZ
import DBus
import TestSupport
import Testing

@Suite("Reconnection state machine (virtual clock, in-memory BlueZ)")
struct ReconnectionMachineTests {
    @Test func connectsWhenTheDeviceIsKnown() {
        var h = ReconnectionHarness()
        h.boot()
        #expect(h.readyCount == 1)
        #expect(h.machine.phase == .ready)
        #expect(h.connects == [.zero])
        #expect(h.count { $0 == .startDiscovery } == 0)
    }

    @Test func scansFirstWhenTheDeviceIsUnknownThenStopsScanning() {
        var h = ReconnectionHarness()
        h.devicePresent = false
        h.boot()
        #expect(h.machine.phase == .locating)
        #expect(h.count { $0 == .startDiscovery } == 1)
        h.advance(by: .seconds(2))
        #expect(h.readyCount == 1)
        #expect(h.count { $0 == .stopDiscovery } == 1)
        #expect(h.connects == [.seconds(1)])
    }

    @Test func waitsForBlueZAndAPoweredAdapter() {
        var h = ReconnectionHarness()
        h.send(.start)
        h.advance(by: .seconds(60))
        #expect(h.log.isEmpty)
        #expect(h.machine.phase == .waitingForBlueZ)
        h.send(.blueZAvailable(true))
        #expect(h.machine.phase == .waitingForAdapter)
        h.send(.adapterAvailable(true))
        h.send(.devicePresent(true))
        #expect(h.readyCount == 1)
    }

    @Test func transientAbortWaitsForLinkDownThenRetriesQuickly() {
        var h = ReconnectionHarness()
        h.connectScripts = [.abortWithBlip, .abortWithBlip]
        h.boot()
        // No second Connect while the blip's Connected=true is still showing.
        #expect(h.connects.count == 1)
        #expect(h.machine.phase == .awaitingLinkDown)
        h.advance(by: .seconds(2))
        #expect(h.connects == [.zero, .milliseconds(350), .milliseconds(700)])
        #expect(h.readyCount == 1)
        #expect(h.machine.consecutiveFailures == 0)
    }

    @Test func tooManyTransientAbortsBecomeHardFailuresWithBackoff() {
        let policy = ReconnectionPolicy(transientLimit: 2, escalationThreshold: 10)
        var h = ReconnectionHarness(policy: policy)
        h.connectScripts = Array(repeating: .fail(.transientAbort), count: 3)
        h.boot()
        h.advance(by: .seconds(1))
        // Two quick retries 0.25 s apart, then the third abort backs off exponentially.
        #expect(h.connects.prefix(3) == [.zero, .milliseconds(250), .milliseconds(500)])
        #expect(h.count { $0 == .disconnect } == 1)
        h.advance(by: .seconds(60))
        #expect(h.readyCount == 1)
    }

    @Test func inProgressNeverStacksASecondConnect() {
        var h = ReconnectionHarness()
        h.connectScripts = [.fail(.inProgress)]
        h.boot()
        #expect(h.machine.phase == .waitingForPendingConnect)
        h.advance(by: .seconds(5))
        #expect(h.connects.count == 1)
        // The other client's connect completes: adopt the link.
        h.schedule(.connected(true), after: .zero)
        h.advance(by: .milliseconds(1))
        h.send(.servicesResolved(true))
        #expect(h.readyCount == 1)
        #expect(h.connects.count == 1)
    }

    @Test func inProgressThatNeverCompletesIsCancelledAndRetried() {
        var h = ReconnectionHarness()
        h.connectScripts = [.fail(.inProgress)]
        h.boot()
        h.advance(by: .seconds(20))
        #expect(h.count { $0 == .disconnect } == 1)
        h.advance(by: .seconds(5))
        #expect(h.connects.count == 2)
        #expect(h.readyCount == 1)
    }

    @Test func vanishedDeviceBacksOffThenRescans() {
        var h = ReconnectionHarness()
        h.connectScripts = [.fail(.deviceGone)]
        h.boot()
        #expect(h.machine.phase == .backingOff)
        h.advance(by: .milliseconds(3999))
        #expect(h.count { $0 == .startDiscovery } == 0)
        h.advance(by: .milliseconds(1))
        #expect(h.count { $0 == .startDiscovery } == 1)
        h.advance(by: .seconds(1))
        #expect(h.connects == [.zero, .seconds(5)])
        #expect(h.readyCount == 1)
    }

    @Test func adapterNotReadyWaitsForTheAdapter() {
        var h = ReconnectionHarness()
        h.connectScripts = [.fail(.adapterNotReady)]
        h.boot()
        #expect(h.machine.phase == .waitingForAdapter)
        h.advance(by: .seconds(30))
        #expect(h.connects.count == 1)
        h.send(.adapterAvailable(true))
        #expect(h.readyCount == 1)
    }

    @Test func alreadyConnectedCountsAsSuccess() {
        var h = ReconnectionHarness()
        h.connectScripts = [.fail(.alreadyConnected)]
        h.boot()
        h.send(.connected(true))
        h.send(.servicesResolved(true))
        #expect(h.readyCount == 1)
    }

    @Test func noReplyDisconnectsAndBacksOffWithJitter() {
        var h = ReconnectionHarness()
        h.connectScripts = [.fail(.noReply)]
        h.boot()
        #expect(h.log.contains { $0.action == .disconnect })
        h.advance(by: .seconds(1))
        #expect(h.connects.count == 2)
        // First failure: full jitter within [base/10, base].
        let gap = h.connects[1] - h.connects[0]
        #expect(gap >= .milliseconds(50) && gap <= .milliseconds(500))
        #expect(h.readyCount == 1)
    }

    @Test func hardFailuresBackOffExponentiallyUpToTheCapAndEscalate() {
        let policy = ReconnectionPolicy(baseBackoff: .seconds(1), maximumBackoff: .seconds(8), escalationThreshold: 4)
        var h = ReconnectionHarness(policy: policy, seed: 42)
        h.connectScripts = Array(repeating: .fail(.failed), count: 10)
        h.boot()
        h.advance(by: .seconds(600))
        #expect(h.readyCount == 1)
        let gaps = zip(h.connects.dropFirst(), h.connects).map { $0 - $1 }
        // Windows 1, 2, 4, 8, 8, … s (plus rescans after each cache flush).
        for (index, gap) in gaps.enumerated() {
            let window = min(Duration.seconds(8), .seconds(1) * (1 << min(index, 10)))
            #expect(gap <= window + .seconds(1), "gap \(index) = \(gap)")
        }
        // After 4 hard failures in a row the cache is flushed (twice in 10 failures).
        #expect(h.count { $0 == .removeDevice } == 2)
        #expect(h.count { $0 == .powerCycleAdapter } == 0)
    }

    @Test func adapterPowerCycleIsOptIn() {
        let policy = ReconnectionPolicy(baseBackoff: .milliseconds(100), escalationThreshold: 2, allowAdapterPowerCycle: true)
        var h = ReconnectionHarness(policy: policy)
        h.connectScripts = Array(repeating: .fail(.failed), count: 4)
        h.boot()
        h.advance(by: .seconds(60))
        #expect(h.count { $0 == .removeDevice } == 1)
        #expect(h.count { $0 == .powerCycleAdapter } == 1)
        #expect(h.readyCount == 1)
    }

    @Test func linkDropWhileReadyReconnectsAtOnce() {
        var h = ReconnectionHarness()
        h.boot()
        h.schedule(.connected(false), after: .seconds(10))
        h.advance(by: .seconds(10))
        #expect(h.losses == [.linkDropped])
        #expect(h.connects == [.zero, .seconds(10)])
        #expect(h.readyCount == 2)
    }

    /// After 5.66's connect race the machine never saw Connected=true, so the drop's
    /// Connected=false is no change: ServicesResolved going false is the sign.
    @Test func dropAfterAnUnsignalledConnectIsSeenFromServicesResolved() {
        var h = ReconnectionHarness()
        h.connectScripts = [.connectedNotSignalled]
        h.boot()
        #expect(h.readyCount == 1)
        h.schedule(.servicesResolved(false), after: .seconds(10))
        h.schedule(.connected(false), after: .seconds(10))
        h.advance(by: .seconds(10))
        #expect(h.losses == [.linkDropped])
        #expect(h.connects == [.zero, .seconds(10)])
        #expect(h.readyCount == 2)
    }

    /// bluetoothd shuts the AcquireNotify socket when the link drops: that alone is a drop.
    @Test func notificationChannelClosedByBlueZWhileReadyReconnects() {
        var h = ReconnectionHarness()
        h.connectScripts = [.connectedNotSignalled]
        h.boot()
        h.schedule(.notificationsClosed, after: .seconds(5))
        h.advance(by: .seconds(5))
        #expect(h.losses == [.linkDropped])
        #expect(h.connects == [.zero, .seconds(5)])
        #expect(h.readyCount == 2)
    }

    /// bluetoothd keeps the GATT objects of a device whose link dropped and, once `Connect`
    /// returns, accepts AcquireNotify on them while it still checks or rediscovers the
    /// services: a reconnect is ready then, not when `ServicesResolved` comes.
    @Test func reconnectIsReadyOnTheKeptGattBeforeServicesResolve() {
        var h = ReconnectionHarness()
        h.boot()
        h.connectScripts = [.servicesLate(.seconds(2))]
        h.schedule(.connected(false), after: .seconds(10))
        h.advance(by: .seconds(15))
        #expect(h.connects == [.zero, .seconds(10)])
        #expect(h.readyTimes == [.zero, .seconds(10)])
        #expect(h.machine.phase == .ready)
        #expect(h.machine.consecutiveFailures == 0)
    }

    /// A first connection has no objects to use before the services are resolved.
    @Test func firstConnectWaitsForServicesResolved() {
        var h = ReconnectionHarness()
        h.connectScripts = [.servicesLate(.seconds(2))]
        h.boot()
        h.advance(by: .seconds(5))
        #expect(h.readyTimes == [.seconds(2)])
        #expect(h.count { $0 == .checkGATT } == 1)
    }

    /// bluetoothd dropped the objects with the link (`Cache = no`, or an unpaired device with
    /// `Cache = yes`): the early check finds nothing, which is no failure; the link is ready
    /// once the services are resolved again.
    @Test func reconnectWithoutKeptGattWaitsForServicesResolved() {
        var h = ReconnectionHarness()
        h.gattKept = false
        h.boot()
        h.connectScripts = [.servicesLate(.seconds(2))]
        h.schedule(.connected(false), after: .seconds(10))
        h.advance(by: .seconds(15))
        #expect(h.readyTimes == [.zero, .seconds(12)])
        #expect(h.count { $0 == .removeDevice } == 0)
        #expect(h.machine.consecutiveFailures == 0)
        #expect(h.connects.count == 2)
    }

    /// A new device object (the old one removed) has none of the old object's GATT.
    @Test func aNewDeviceObjectWaitsForServicesResolved() {
        var h = ReconnectionHarness()
        h.boot()
        h.connected = false
        h.connectScripts = [.servicesLate(.seconds(2))]
        h.schedule(.devicePresent(false), after: .seconds(5))
        h.advance(by: .seconds(10))
        // Found again 1 s after the removal, connected, ready once resolved.
        #expect(h.readyTimes == [.zero, .seconds(8)])
        #expect(h.count { $0 == .checkGATT } == 2)
    }

    @Test func deviceRemovalWhileReadyRescans() {
        var h = ReconnectionHarness()
        h.boot()
        h.connected = false
        h.schedule(.devicePresent(false), after: .seconds(5))
        h.advance(by: .seconds(5))
        #expect(h.losses == [.deviceRemoved])
        #expect(h.machine.phase == .locating)
        #expect(h.count { $0 == .startDiscovery } == 1)
        h.advance(by: .seconds(2))
        #expect(h.readyCount == 2)
    }

    @Test func blueZRestartDropsEverythingAndStartsOver() {
        var h = ReconnectionHarness()
        h.boot()
        h.connected = false
        h.devicePresent = false
        h.send(.blueZAvailable(false))
        #expect(h.losses == [.blueZRestarted])
        #expect(h.machine.phase == .waitingForBlueZ)
        let before = h.log.count
        h.advance(by: .seconds(30))
        #expect(h.log.count == before)
        h.send(.blueZAvailable(true))
        h.send(.adapterAvailable(true))
        #expect(h.count { $0 == .startDiscovery } == 1)
        h.advance(by: .seconds(2))
        #expect(h.readyCount == 2)
    }

    @Test func adapterPowerCycleWhileReadyReconnects() {
        var h = ReconnectionHarness()
        h.boot()
        h.connected = false
        h.send(.adapterAvailable(false))
        #expect(h.losses == [.adapterOff])
        #expect(h.machine.phase == .waitingForAdapter)
        h.send(.connected(false))
        h.advance(by: .seconds(3))
        h.send(.adapterAvailable(true))
        #expect(h.readyCount == 2)
    }

    @Test func servicesThatNeverResolveAreAbandoned() {
        let policy = ReconnectionPolicy(servicesTimeout: .seconds(10))
        var h = ReconnectionHarness(policy: policy)
        h.connectScripts = [.noServices]
        h.boot()
        #expect(h.machine.phase == .resolvingServices)
        h.advance(by: .seconds(10))
        #expect(h.count { $0 == .disconnect } == 1)
        h.advance(by: .seconds(2))
        #expect(h.readyCount == 1)
        #expect(h.connects.count == 2)
    }

    @Test func linkLossDuringServiceDiscoveryRetries() {
        var h = ReconnectionHarness()
        h.connectScripts = [.noServices]
        h.boot()
        h.schedule(.connected(false), after: .seconds(1))
        h.advance(by: .seconds(3))
        #expect(h.connects.count == 2)
        #expect(h.readyCount == 1)
        #expect(h.losses.isEmpty)
    }

    @Test func incompleteGattIsRecheckedThenFlushed() {
        var h = ReconnectionHarness()
        h.gattComplete = false
        h.boot()
        #expect(h.count { $0 == .checkGATT } == 1)
        h.advance(by: .seconds(1))
        #expect(h.count { $0 == .checkGATT } == 2)
        #expect(h.count { $0 == .removeDevice } == 1)
        h.gattComplete = true
        h.advance(by: .seconds(10))
        #expect(h.readyCount == 1)
    }

    @Test func sessionFailureForcesAFreshLink() {
        var h = ReconnectionHarness()
        h.boot()
        h.send(.sessionFailed("stream stalled"))
        #expect(h.losses == [.sessionFailed("stream stalled")])
        #expect(h.count { $0 == .disconnect } == 1)
        h.advance(by: .seconds(5))
        #expect(h.connects.count == 2)
        #expect(h.readyCount == 2)
    }

    /// A failed session's `Disconnect` is asked once: when its backoff ends before bluetoothd
    /// reports the link down, the machine waits for that instead of asking again (the
    /// real-BlueZ VM's bus showed two `Disconnect` calls and a `Connect` within 1 ms).
    @Test func aFailedSessionAsksForTheLinksEndOnce() {
        var h = ReconnectionHarness()
        h.linkDownAfterDisconnect = .seconds(2)
        h.boot()
        h.send(.sessionFailed("write failed"))
        h.advance(by: .seconds(10))
        #expect(h.count { $0 == .disconnect } == 1)
        #expect(h.connects == [.zero, .seconds(2)], "the next Connect comes once the link is down")
        #expect(h.readyCount == 2)
    }

    @Test func adoptsALinkLeftOverFromBefore() {
        var h = ReconnectionHarness()
        h.send(.start)
        h.send(.blueZAvailable(true))
        h.send(.adapterAvailable(true))
        h.send(.connected(true))
        h.send(.servicesResolved(true))
        h.send(.devicePresent(true))
        #expect(h.readyCount == 1)
        #expect(h.connects.isEmpty)
    }

    @Test func stopDisconnectsAndGoesQuiet() {
        var h = ReconnectionHarness()
        h.boot()
        h.send(.stop)
        #expect(h.losses == [.stopped])
        #expect(h.log.last?.action == .disconnect)
        let before = h.log.count
        h.send(.connected(false))
        h.send(.blueZAvailable(false))
        h.advance(by: .seconds(100))
        #expect(h.log.count == before)
        #expect(h.machine.phase == .stopped)
    }

    /// bluetoothd 5.66's connect race: `Connect` returned and the link is up and ready, but
    /// `Connected=true` never came. A stop must still end the link (in the real-BlueZ VM it
    /// outlived mwgated); so must a stop while `Connect` is outstanding or answered.
    @Test(arguments: [ReconnectionHarness.ConnectScript.connectedNotSignalled, .success, .hang, .noServices])
    func stopEndsALinkThatMayBeUp(script: ReconnectionHarness.ConnectScript) {
        var h = ReconnectionHarness()
        h.connectScripts = [script]
        h.boot()
        #expect(h.machine.linkMayBeUp)
        let before = h.log.count
        h.send(.stop)
        #expect(h.log.dropFirst(before).contains { $0.action == .disconnect }, "no Disconnect at a stop after \(script)")
        #expect(!h.connected)
        #expect(h.machine.phase == .stopped)
    }

    /// A stop between attempts, with no link, disconnects nothing.
    @Test func stopWhileBackingOffWithoutALinkSendsNoDisconnect() {
        var h = ReconnectionHarness()
        h.connectScripts = [.fail(.failed)]
        h.boot()
        #expect(h.machine.phase == .backingOff)
        #expect(!h.machine.linkMayBeUp)
        let before = h.log.count
        h.send(.stop)
        #expect(!h.log.dropFirst(before).contains { $0.action == .disconnect })
    }

    @Test func stopWhileScanningStopsDiscovery() {
        var h = ReconnectionHarness()
        h.devicePresent = false
        h.deviceAdvertising = false
        h.boot()
        h.send(.stop)
        #expect(h.log.last?.action == .stopDiscovery)
    }

    @Test func scanThatFindsNothingIsRestarted() {
        let policy = ReconnectionPolicy(scanRestartInterval: .seconds(10))
        var h = ReconnectionHarness(policy: policy)
        h.devicePresent = false
        h.deviceAdvertising = false
        h.boot()
        h.advance(by: .seconds(25))
        #expect(h.count { $0 == .startDiscovery } == 3)
        #expect(h.count { $0 == .stopDiscovery } == 2)
    }

    @Test func staleConnectResultsAreIgnored() {
        var h = ReconnectionHarness()
        h.boot()
        let before = h.log.count
        h.send(.connectFinished(.transientAbort))
        h.send(.gattChecked(complete: false))
        #expect(h.log.count == before)
        #expect(h.machine.phase == .ready)
    }
}

@Suite("BlueZ error classes")
struct BlueZErrorClassTests {
    @Test(arguments: [
        ("org.bluez.Error.Failed", "le-connection-abort-by-local", BlueZErrorClass.transientAbort),
        ("org.bluez.Error.Failed", "Software caused connection abort", .transientAbort),
        ("org.bluez.Error.Failed", "br-connection-canceled", .transientAbort),
        ("org.bluez.Error.Failed", "Host is down", .failed),
        ("org.bluez.Error.InProgress", "In Progress", .inProgress),
        ("org.bluez.Error.InProgress", "Operation already in progress", .inProgress),
        ("org.freedesktop.DBus.Error.UnknownObject", "Method \"Connect\" doesn't exist", .deviceGone),
        ("org.bluez.Error.DoesNotExist", "Does Not Exist", .deviceGone),
        ("org.bluez.Error.NotReady", "Resource Not Ready", .adapterNotReady),
        ("org.bluez.Error.AlreadyConnected", "Already Connected", .alreadyConnected),
        ("org.freedesktop.DBus.Error.NoReply", "", .noReply),
        ("org.freedesktop.DBus.Error.Timeout", "", .noReply),
        ("org.freedesktop.DBus.Error.ServiceUnknown", "", .noReply),
        ("org.bluez.Error.NotPermitted", "Write acquired", .notPermitted),
        ("org.bluez.Error.NotAuthorized", "", .notPermitted),
        ("org.bluez.Error.NotConnected", "Not Connected", .notConnected),
        ("org.bluez.Error.ImproperlyConfigured", "", .failed),
    ])
    func classifies(name: String, message: String, expected: BlueZErrorClass) {
        #expect(BlueZErrorClass(DBusError(name: name, message: message)) == expected)
    }

    @Test func addressesAreNormalisedAndMapToDevicePaths() throws {
        let address = try #require(BluetoothAddress("c4:7c:8d:6a:11:22"))
        #expect(address.rawValue == "C4:7C:8D:6A:11:22")
        #expect(address.devicePath(on: "/org/bluez/hci0")?.rawValue == "/org/bluez/hci0/dev_C4_7C_8D_6A_11_22")
        #expect(BluetoothAddress("C4:7C:8D:6A:11") == nil)
        #expect(BluetoothAddress("C4:7C:8D:6A:11:2G") == nil)
        #expect(BluetoothAddress("") == nil)
    }
}
