import Basics

/// Sets up the flash loggers of a session's sensors: reuses those the board already has
/// (``LoggerDiscovery``), allocates the missing ones one trigger write at a time, matching
/// the board's `0B 02 <id>` replies by order (metawear-logging.md §4.1), and, when a reply
/// never comes, removes what it did allocate instead of leaving it on the board as the SDK
/// does (P3). Pure: the caller writes, waits (about a second per reply) and reports a timeout.
public struct LoggerSetup: Sendable {
    /// How the setup ended.
    public enum Outcome: Hashable, Sendable {
        /// Every sensor has its two loggers.
        case ready([MotionSensor: LoggerIDs])
        /// A trigger got no reply (or an impossible one): `cleanup` removes the ids allocated by
        /// this setup; `reason` names the problem.
        case failed(reason: String, cleanup: [Packet])
    }

    private let chip: IMUChip
    private var found: [MotionSensor: LoggerIDs]
    /// Trigger writes still to send, with the sensor each belongs to.
    private var queue: [(sensor: MotionSensor, packet: Packet)] = []
    private var awaiting: MotionSensor?
    private var allocated: [MotionSensor: [UInt8]] = [:]

    /// A setup for `sensors` on `chip`, given the loggers the board already has.
    public init(sensors: [MotionSensor], chip: IMUChip, existing: [MotionSensor: LoggerIDs] = [:]) {
        self.chip = chip
        found = existing.filter { sensors.contains($0.key) }
        for sensor in sensors where found[sensor] == nil {
            queue += LoggingCommands.triggers(sensor, chip: chip).map { (sensor, $0) }
        }
    }

    /// The first trigger write, or the outcome at once when every logger already exists.
    public mutating func start() -> (writes: [Packet], outcome: Outcome?) {
        next()
    }

    /// A notification: `0B 02 <id>` answers the pending trigger; anything else is ignored.
    public mutating func receive(_ bytes: [UInt8]) -> (writes: [Packet], outcome: Outcome?) {
        guard let sensor = awaiting, case .success(.triggerAllocated(let id))? = LogNotificationDecoder.decode(bytes) else {
            return ([], nil)
        }
        awaiting = nil
        allocated[sensor, default: []].append(id)
        if allocated[sensor]?.count == 2, let ids = allocated[sensor] {
            guard ids[0] != ids[1] else {
                return ([], fail("the board gave \(sensor)'s x/y and z loggers the same id \(ids[0])"))
            }
            found[sensor] = LoggerIDs(xy: ids[0], z: ids[1])
        }
        return next()
    }

    /// The caller's wait for the pending reply ran out.
    public mutating func timedOut() -> Outcome {
        let sensor = awaiting.map { "\($0)" } ?? "a"
        return fail("the board did not answer the \(sensor) logger trigger (0B 02): its trigger slots may be full")
    }

    private mutating func next() -> (writes: [Packet], outcome: Outcome?) {
        guard !queue.isEmpty else { return ([], .ready(found)) }
        let (sensor, packet) = queue.removeFirst()
        awaiting = sensor
        return ([packet], nil)
    }

    private mutating func fail(_ reason: String) -> Outcome {
        queue = []
        awaiting = nil
        let ids = allocated.values.flatMap { $0 }
        allocated = [:]
        return .failed(reason: reason, cleanup: LoggingCommands.remove(loggerIDs: Array(Set(ids))))
    }
}

/// Whether the flash holds a session: entries per second of the logged sensors against the
/// capacity (two entries per x/y/z sample, §4.2; metawear-logging.md §9).
public struct LogBudget: Hashable, Sendable {
    /// Entries the flash holds, nil when unknown.
    public var capacityEntries: Int?
    /// Sample rates of the logged sensors, hertz.
    public var rates: [MotionSensor: Double]

    /// A budget for sensors logged at `rates` on a flash of `capacityEntries`.
    public init(capacityEntries: Int?, rates: [MotionSensor: Double]) {
        self.capacityEntries = capacityEntries
        self.rates = rates
    }

    /// Entries written per second.
    public var entriesPerSecond: Double { rates.values.reduce(0) { $0 + 2 * $1 } }

    /// Seconds until the flash is full, nil when the capacity is unknown or nothing is logged.
    public var secondsToFull: Double? {
        guard let capacityEntries, entriesPerSecond > 0 else { return nil }
        return Double(capacityEntries) / entriesPerSecond
    }

    /// nil when a session of `seconds` fits (or the capacity is unknown); otherwise why not,
    /// naming the rates, the capacity (of `model`'s flash when named), how long it lasts and
    /// what to change: the longest session that fits, and the highest gyro rate (or
    /// accelerometer rate, when only it is logged) that fits the session asked for.
    public func refusal(sessionSeconds seconds: Double, model: String? = nil) -> String? {
        guard let capacityEntries, let full = secondsToFull, seconds > full else { return nil }
        let what = rates.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key) \(Self.hertz($0.value)) Hz" }
            .joined(separator: " and ")
        let whose = model.map { "a \($0)'s flash" } ?? "the board's flash"
        var change = "shorten the session to \(DurationText.string(full)) or less"
        if let lower = highestFittingRate(sessionSeconds: seconds) {
            change += ", or lower \(lower.sensor)_rate to \(Self.hertz(lower.hertz)) Hz"
        } else {
            change += ", or lower the rates"
        }
        return "\(what) \(rates.count == 1 ? "writes" : "write") \(Int(entriesPerSecond)) log entries/s; "
            + "\(whose) holds \(capacityEntries) entries, full after \(DurationText.string(full)), "
            + "shorter than the \(DurationText.string(seconds)) session asked for; \(change)"
    }

    /// The highest rate of the gyro (or of the accelerometer when it is logged alone) at which
    /// a session of `seconds` fits, the other sensor's rate unchanged; nil when none does.
    func highestFittingRate(sessionSeconds seconds: Double) -> (sensor: MotionSensor, hertz: Double)? {
        guard let capacityEntries, seconds > 0 else { return nil }
        let sensor: MotionSensor = rates[.gyro] != nil ? .gyro : .accelerometer
        let others = rates.filter { $0.key != sensor }.values.reduce(0) { $0 + 2 * $1 }
        let allowed: [Double] = sensor == .gyro ? GyroRate.allCases.map(\.hertz) : AccelerometerRate.allCases.map(\.hertz)
        return allowed.filter { (others + 2 * $0) * seconds <= Double(capacityEntries) }.max().map { (sensor, $0) }
    }

    private static func hertz(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : AccelerometerRate.format(value)
    }
}
