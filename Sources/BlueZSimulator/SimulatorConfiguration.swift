#if canImport(Glibc)
import Glibc
#endif
import MetaWearBoardModel

/// Everything that shapes one simulator run.
public struct SimulatorConfiguration: Sendable {
    /// Which boards to simulate.
    public enum Model: String, Sendable, CaseIterable {
        /// MetaMotion R (BMI160).
        case metamotionR = "metamotion-r"
        /// MetaMotion S (BMI270).
        case metamotionS = "metamotion-s"
        /// R and S alternating, starting with R.
        case mixed
    }

    /// D-Bus address of the bus to own `org.bluez` on.
    public var busAddress: String
    /// One profile per board (index = board number).
    public var profiles: [BoardProfile]
    /// Boards (by index) whose Device Information (180A) and Battery (180F) services BlueZ does
    /// not export as GATT objects because its deviceinfo and battery plugins claim them.
    /// Which world a gateway meets depends on bluetoothd (BlueZ source): 5.55-5.79 mark both
    /// plugins `external` (deviceinfo from 5.36, battery from 5.55), so neither service is
    /// claimed and both are exported (Debian 12's 5.66, measured in real-bluez-vm.md); from
    /// 5.80 both are claimed and exported read-only by default, hidden with
    /// `[GATT] ExportClaimedServices = no`. Either way the plugins still run: `Device1.Modalias` (for a board
    /// with a PnP ID) and `Battery1` appear as well (see ``batteryPluginOff``).
    public var deviceInformationHidden: Set<Int> = []
    /// bluetoothd runs without its battery plugin (`--noplugin=battery`): no board gets
    /// `org.bluez.Battery1`.
    public var batteryPluginOff = false
    /// Boards (by index) whose advertisement carries no service UUID (the MetaWear service
    /// shows only once services are resolved), so a UUID discovery filter never matches them.
    public var advertisedWithoutServiceUUID: Set<Int> = []
    /// Maximum notifications per second per board on the link; nil = no cap. Excess waits in a
    /// link queue of `linkQueueLimit` notifications; what does not fit is dropped and counted.
    public var rateCap: Int?
    /// Notifications a board can hold while the link is slower than the sensor.
    public var linkQueueLimit = 256
    /// Boards (by index) whose connections bluetoothd 5.66 never announces: `Connect` returns
    /// and the link works, but `Connected=true` is not signalled (its connect race,
    /// real-bluez-vm.md §1); the property reads true and `Connected=false` is signalled when
    /// the link drops, as in 5.66.
    public var connectedSignalMissed: Set<Int> = []
    /// BlueZ's TemporaryTimeout: an unconnected device not seen for this long is removed.
    public var temporaryTimeout: Duration = .seconds(30)
    /// Time from StartDiscovery until the first advertisement is seen.
    public var discoveryDelay: Duration = .milliseconds(300)
    /// Period of RSSI updates while discovering.
    public var rssiInterval: Duration = .seconds(1)
    /// Connection interval in ms (7.5…30); a board's `11 09` request overrides it.
    public var connectionIntervalMilliseconds: Double = 15
    /// Relative jitter applied to each connection event (0.1 = ±10 %), clamped to 7.5…30 ms.
    public var connectionIntervalJitter: Double = 0.1
    /// Time bluetoothd takes to answer `Device1.Disconnect` (the link is torn down meanwhile);
    /// 2.4-3.5 s were measured on the real stack in the VM (real-bluez-vm.md).
    public var disconnectReplyDelay: Duration = .zero
    /// Logs each call to bluetoothd's objects as its handling begins ("mwsim: call MEMBER PATH
    /// from SENDER"): in the order the calls arrived, since they are handled one after another
    /// in that order, as bluetoothd's main loop reads them.
    public var logsCalls = false
    /// Time from Connect's reply until ServicesResolved.
    public var servicesResolveDelay: Duration = .milliseconds(40)
    /// The same when the device's GATT objects are kept from an earlier link (bluetoothd
    /// checks the board's Database Hash or, without one, discovers its services again while
    /// the link already works: 0.3-2.5 s in the real-BlueZ VM); nil: ``servicesResolveDelay``.
    public var keptServicesResolveDelay: Duration?
    /// Seed for jitter, RSSI and injected loss; each board's signal seed is `index + 1`.
    public var seed: UInt64 = 1
    /// What the boards' samples carry: the checkable signal (tests, the soak) or a walking gait.
    public var signal = Signal.checkable
    /// The board model's signal choice, named here so that mwsim needs no other import.
    public typealias Signal = SimulatedSignal
    /// Faults to inject at scheduled times.
    public var faults = FaultPlan()
    /// Log entries each board's flash holds; nil = the model's (MetaMotion S 66,781,184, R and
    /// RL 1,048,576). Small values make "log full" testable.
    public var flashCapacity: Int?
    /// Notifications a board sends per second while reading out its flash log.
    public var readoutNotificationsPerSecond = 200
    /// The adapter's public address.
    public var adapterAddress = "00:1A:7D:DA:71:13"
    /// Well-known name of the control interface (own connection, so it survives a simulated
    /// bluetoothd restart).
    public var controlBusName = "io.mwgate.Simulator"
    /// Receives one line per event worth logging (every central write, faults, links).
    public var log: @Sendable (String) -> Void

    /// A configuration for `count` boards of `model`; logs go to standard error.
    public init(busAddress: String, boards count: Int = 1, model: Model = .metamotionR) {
        self.busAddress = busAddress
        self.profiles = Self.profiles(model: model, count: count)
        self.log = writeToStandardError
    }

    /// Profiles with distinct random-static addresses and serial numbers per board.
    public static func profiles(model: Model, count: Int) -> [BoardProfile] {
        (0..<max(0, count)).map { index in
            var profile: BoardProfile = switch model {
            case .metamotionR: .metaMotionR
            case .metamotionS: .metaMotionS
            case .mixed: index % 2 == 0 ? .metaMotionR : .metaMotionS
            }
            var mac = profile.macAddress
            if mac.count == 6 {
                mac[4] = mac[4] &+ UInt8(truncatingIfNeeded: index >> 8)
                mac[5] = mac[5] &+ UInt8(truncatingIfNeeded: index)
            }
            profile.macAddress = mac
            profile.serialNumber = String(profile.serialNumber.prefix(4)) + hexString([UInt8(truncatingIfNeeded: index)]).uppercased()
            return profile
        }
    }
}

/// Writes one line to standard error (fd 2) in a single write, so lines from several tasks
/// never interleave.
public func writeToStandardError(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    bytes.withUnsafeBytes { buffer in _ = write(2, buffer.baseAddress, buffer.count) }
}
