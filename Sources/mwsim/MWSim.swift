import ArgumentParser
import BlueZSimulator
import Dispatch
#if canImport(Glibc)
import Glibc
#endif

/// `mwsim`: BlueZ plus simulated MetaWear boards on a private D-Bus bus.
@main
struct MWSim: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mwsim",
        abstract: "Simulate BlueZ (org.bluez, hci0) and MetaWear boards on a D-Bus bus, for tests and benchmarks.",
        discussion: """
            Owns org.bluez on --bus and behaves like BlueZ 5.66 for a GATT central: discovery,
            Connect, the MetaWear GATT tree (326a9000 service, 326a9001 command, 326a9006 notify,
            DIS 180a, battery 180f), StartNotify / AcquireNotify, streaming at the rate the board
            was configured for, in batches per connection interval (7.5-30 ms, seeded jitter).
            Every write the central makes is logged on stderr as one hex line with the board's
            address.

            bluetoothd's plugins: by default Device Information and Battery are exported as GATT
            objects (Debian 12's 5.66 does so: its deviceinfo and battery plugins do not claim
            them); --hide-device-information N hides both for board N, as bluetoothd 5.80+ with
            ExportClaimedServices = no does. Either way a board gets org.bluez.Battery1
            (Percentage) once its services are resolved, until the link goes (unless
            --no-battery-plugin), and Device1.Modalias when its Device Information has a PnP ID
            (--pnp-id).

            Control interface: io.mwgate.Simulator1 at /io/mwgate/Simulator1 (bus name
            io.mwgate.Simulator), boards numbered from 0: DropLink(u), Stall(u,d seconds),
            RefuseNextConnect(u,s error), VanishDevice(u), RestoreDevice(u), RestartBluetoothd(),
            PowerCycleAdapter(), DropNotifications(u,d fraction), PressButton(u), ResetBoard(u),
            GetCommandLog(u) -> aay, GetStats(u) -> a{sv}, GetDeliveredRuns(u,s sensor) -> a(tttt)
            (samples that reached a subscriber: first, last index, first, last epoch µs),
            GetMeasuredRuns(u,s sensor) -> a(tttt) (every sample the board took, streamed or
            not: first, last index, first, last epoch µs taken), ListBoards() -> a(uoss).

            Fault grammar (--fault, repeatable, or ';'-separated): KIND@TIME[,key=value...]
              TIME: seconds since start: 10s, 1.5s, 250ms or a bare number
              keys: board=N (default 0), seconds=S (stall, default 5),
                    error=TEXT (refuse-connect: a reason for org.bluez.Error.Failed such as
                    le-connection-abort-by-local, or a full error name such as
                    org.bluez.Error.InProgress), fraction=F (drop-notifications, 0...1)
              kinds: link-drop, stall, refuse-connect, vanish, restart-bluetoothd,
                     power-cycle, drop-notifications, press-button, board-reset
              example: --fault 'link-drop@10s,board=1' --fault 'stall@3s,seconds=2'

            Rate cap: --rate-cap N lets at most N notifications per second per board through
            the link; the excess waits in a queue of --link-queue notifications (delayed, as a
            real link does) and what does not fit is dropped and counted (GetStats
            DroppedByRateCap).

            Flash log: every board logs as metawear-logging.md describes (triggers, entries with
            ticks and reset UIDs, paced readout with pages, clearing, resets); it logs while its
            link is down. --flash-capacity N shrinks the flash to test a full log, --readout-rate
            paces downloads; GetStats reports FlashEntriesStored/Refused/Overwritten and ResetUID.

            Lifetime: mwsim runs until SIGTERM/SIGINT or --duration, then gives up its names and
            exits 0; if its connection to the bus is lost it exits 1 with that error, as
            bluetoothd exits when the system bus goes.
            """
    )

    @Option(help: "D-Bus address of the bus to own org.bluez on (default: $DBUS_SYSTEM_BUS_ADDRESS).")
    var bus: String?

    @Option(help: "Number of simulated boards.")
    var boards = 1

    @Option(help: "Board model: metamotion-r (BMI160), metamotion-s (BMI270) or mixed (alternating, R first).")
    var model = "metamotion-r"

    @Option(name: .customLong("rate-cap"), help: "Maximum notifications per second per board on the link (default: no cap).")
    var rateCap: Int?

    @Option(name: .customLong("link-queue"), help: "Notifications a board holds while the link is slower than the sensor.")
    var linkQueue = 256

    @Option(name: .customLong("fault"), help: "Scheduled fault, KIND@TIME[,key=value...] (see above); repeatable.")
    var faults: [String] = []

    @Option(name: .customLong("connection-interval"), help: "Connection interval in ms, 7.5...30 (a board's 11 09 request overrides).")
    var connectionInterval = 15.0

    @Option(name: .customLong("temporary-timeout"), help: "Seconds until an unconnected device no longer seen is removed (BlueZ TemporaryTimeout).")
    var temporaryTimeout = 30.0

    @Option(name: .customLong("discovery-delay"), help: "Seconds from StartDiscovery until boards are seen.")
    var discoveryDelay = 0.3

    @Option(help: "Seed for jitter, RSSI and injected loss.")
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("What the samples carry: walking (a walking gait, 1.6-1.9 steps/s, each board its own pace and phase) or checkable (sample index and a hash, checkable sample by sample; what tests and the soak use). --peripheral boards always carry the checkable signal.", valueName: "walking|checkable"))
    var signal = SimulatorConfiguration.Signal.walking.rawValue

    @Option(help: "Exit after this many seconds (default: run until SIGTERM/SIGINT).")
    var duration: Double?

    @Option(name: .customLong("flash-capacity"), help: "Log entries each board's flash holds (default: the model's, 66,781,184 on MetaMotion S, 1,048,576 on R/RL); small values test a full log.")
    var flashCapacity: Int?

    @Option(name: .customLong("readout-rate"), help: "Notifications per second a board sends while reading out its flash log (two entries each).")
    var readoutRate = 200

    @Flag(help: "Do not log every write on stderr.")
    var quiet = false

    @Option(name: .customLong("hide-device-information"),
            help: "Board index whose Device Information (180A) and Battery (180F) services BlueZ does not export, as when its plugins claim them; repeatable.")
    var hideDeviceInformation: [Int] = []

    @Flag(name: .customLong("pnp-id"),
          help: "The boards' Device Information carries a PnP ID (2A50: MbientLab, product = model number), so bluetoothd sets Device1.Modalias; also in peripheral mode.")
    var pnpID = false

    @Flag(name: .customLong("no-battery-plugin"),
          help: "Act as bluetoothd without its battery plugin (--noplugin=battery): no org.bluez.Battery1 on the boards.")
    var withoutBatteryPlugin = false

    @Option(name: .customLong("no-advertised-uuid"),
            help: "Board index whose advertisement carries no service UUID (a UUID discovery filter never matches it); repeatable.")
    var noAdvertisedUUID: [Int] = []

    @Option(name: .customLong("peripheral"), help: ArgumentHelp(
        "Be a real BLE peripheral on this adapter of the system's bluetoothd (hci1, ...); repeat for more boards.",
        discussion: "See 'Peripheral mode' above."))
    var peripheralAdapters: [String] = []

    @Flag(name: .customLong("no-service-uuid"), help: "Peripheral mode: advertise without the MetaWear service UUID.")
    var withoutServiceUUID = false

    @Option(name: .customLong("ignore-central"), help: "Peripheral mode: a central address that is not the gateway (a spare controller's dummy link); repeatable.")
    var ignoredCentrals: [String] = []

    @Flag(name: .customLong("no-device-information"), help: "Peripheral mode: offer no Device Information service (180A).")
    var withoutDeviceInformation = false

    func validate() throws {
        guard boards >= 0 && boards <= 64 else { throw ValidationError("--boards must be within 0...64") }
        guard SimulatorConfiguration.Model(rawValue: model) != nil else {
            throw ValidationError("--model must be one of \(SimulatorConfiguration.Model.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        guard SimulatorConfiguration.Signal(rawValue: signal) != nil else {
            throw ValidationError("--signal must be one of \(SimulatorConfiguration.Signal.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        if let rateCap, rateCap <= 0 { throw ValidationError("--rate-cap must be > 0") }
        if let flashCapacity, flashCapacity < 0 { throw ValidationError("--flash-capacity must be >= 0 entries") }
        guard (1...10_000).contains(readoutRate) else { throw ValidationError("--readout-rate must be within 1...10000 notifications/s") }
        guard (7.5...30).contains(connectionInterval) else { throw ValidationError("--connection-interval must be within 7.5...30 ms") }
        guard temporaryTimeout > 0, discoveryDelay >= 0, linkQueue > 0 else { throw ValidationError("timeouts and queue sizes must be positive") }
        for fault in faults {
            do { _ = try FaultPlan(parsing: fault) } catch { throw ValidationError(error.description) }
        }
    }

    func run() async throws {
        let environmentBus = getenv("DBUS_SYSTEM_BUS_ADDRESS").map { String(cString: $0) }
        guard let address = bus ?? environmentBus, !address.isEmpty else {
            throw ValidationError("no bus: pass --bus or set DBUS_SYSTEM_BUS_ADDRESS")
        }
        if !peripheralAdapters.isEmpty {
            try await runPeripherals(busAddress: address)
            return
        }
        var configuration = SimulatorConfiguration(busAddress: address, boards: boards,
                                                   model: SimulatorConfiguration.Model(rawValue: model) ?? .metamotionR)
        configuration.rateCap = rateCap
        configuration.linkQueueLimit = linkQueue
        configuration.connectionIntervalMilliseconds = connectionInterval
        configuration.temporaryTimeout = .milliseconds(Int64(temporaryTimeout * 1000))
        configuration.discoveryDelay = .milliseconds(Int64(discoveryDelay * 1000))
        configuration.seed = seed
        configuration.flashCapacity = flashCapacity
        configuration.readoutNotificationsPerSecond = readoutRate
        configuration.deviceInformationHidden = Set(hideDeviceInformation)
        configuration.batteryPluginOff = withoutBatteryPlugin
        if pnpID { configuration.profiles = configuration.profiles.map { $0.withMbientLabPnPID() } }
        configuration.advertisedWithoutServiceUUID = Set(noAdvertisedUUID)
        configuration.signal = SimulatorConfiguration.Signal(rawValue: signal) ?? .walking
        configuration.faults = FaultPlan(steps: try faults.flatMap { try FaultPlan(parsing: $0).steps })
        if quiet {
            // Wall-clock seconds first, so a soak can line these up with its faults and the daemon's log.
            configuration.log = { line in
                if !line.hasPrefix("mwsim: write ") {
                    var now = timespec()
                    clock_gettime(CLOCK_REALTIME, &now)
                    let milliseconds = String(now.tv_nsec / 1_000_000)
                    let padded = String(repeating: "0", count: 3 - milliseconds.count) + milliseconds
                    writeToStandardError("\(now.tv_sec).\(padded) " + line)
                }
            }
        }
        let simulator = BlueZSimulator(configuration: configuration)
        // Whichever ends first ends both: a termination signal (or --duration) stops the
        // simulator; a simulator that fails ends mwsim with its error.
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await simulator.run() }
            group.addTask { await waitForTermination(duration) }
            try await group.next()
            group.cancelAll()
        }
        writeToStandardError("mwsim: stopped")
    }

    /// Returns on SIGTERM, SIGINT, after `seconds` or when the calling task is cancelled.
    func waitForTermination(_ seconds: Double?) async {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGTERM, SIGINT] {
            Glibc.signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { continuation.yield() }
            source.resume()
            sources.append(source)
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in stream { break }
            }
            if let seconds {
                group.addTask { try? await Task.sleep(for: .milliseconds(Int64(seconds * 1000))) }
            }
            await group.next()
            group.cancelAll()
        }
        sources.forEach { $0.cancel() }
    }
}
