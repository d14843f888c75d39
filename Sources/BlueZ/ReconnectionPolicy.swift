/// Timings and limits of the reconnection state machine (reference bluez-dbus.md §2.3).
///
/// The defaults follow bleak-retry-connector's field experience; tests shrink them.
public struct ReconnectionPolicy: Hashable, Sendable {
    /// How long `Device1.Connect` may take before the call is given up (and cancelled with
    /// `Disconnect`).
    public var connectTimeout: Duration
    /// How long to wait for `ServicesResolved` after `Connect` replied.
    public var servicesTimeout: Duration
    /// How long to wait for `Connected=false` after a transient abort or a requested
    /// disconnect before going on anyway.
    public var linkDownTimeout: Duration
    /// How long to wait for the device to be seen while scanning before restarting discovery.
    public var scanRestartInterval: Duration
    /// Pause after a transient abort (`le-connection-abort-by-local`).
    public var transientBackoff: Duration
    /// Pause after the device object vanished (`UnknownObject`), before scanning again.
    public var deviceGoneBackoff: Duration
    /// First step of the exponential backoff for other failures.
    public var baseBackoff: Duration
    /// Cap of the exponential backoff.
    public var maximumBackoff: Duration
    /// Transient aborts in a row before they count as hard failures.
    public var transientLimit: Int
    /// Hard failures in a row before escalating (cache flush with `RemoveDevice`).
    public var escalationThreshold: Int
    /// Whether escalation may power-cycle the adapter after a cache flush did not help
    /// (off by default: it disturbs every other link on the adapter).
    public var allowAdapterPowerCycle: Bool
    /// Pause before re-checking a GATT tree that was incomplete right after
    /// `ServicesResolved` (BlueZ export race, bluez/bluez#1489).
    public var gattRecheckDelay: Duration

    public init(connectTimeout: Duration = .seconds(20), servicesTimeout: Duration = .seconds(20),
                linkDownTimeout: Duration = .seconds(5), scanRestartInterval: Duration = .seconds(30),
                transientBackoff: Duration = .milliseconds(250), deviceGoneBackoff: Duration = .seconds(4),
                baseBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(30),
                transientLimit: Int = 9, escalationThreshold: Int = 4, allowAdapterPowerCycle: Bool = false,
                gattRecheckDelay: Duration = .seconds(1)) {
        self.connectTimeout = connectTimeout
        self.servicesTimeout = servicesTimeout
        self.linkDownTimeout = linkDownTimeout
        self.scanRestartInterval = scanRestartInterval
        self.transientBackoff = transientBackoff
        self.deviceGoneBackoff = deviceGoneBackoff
        self.baseBackoff = baseBackoff
        self.maximumBackoff = maximumBackoff
        self.transientLimit = max(0, transientLimit)
        self.escalationThreshold = max(1, escalationThreshold)
        self.allowAdapterPowerCycle = allowAdapterPowerCycle
        self.gattRecheckDelay = gattRecheckDelay
    }
}
