/// A simulated MetaWear board's brain: command bytes in, reply and notification bytes out.
///
/// Written only from the reference's byte tables (metawear-protocol.md §2–§8, §10, §11) and
/// independent of the gateway's MetaWear module, so a bug mirrored in our encoder and decoder
/// shows up as a mismatch here. Pure: simulated time only moves through `advance(to:)`.
///
/// Streamed samples carry a deterministic signal (`signal(_:seed:index:)`): x is the sample
/// index (mod 2^16), y and z are a hash of index and seed, so loss, order and value can be
/// checked from the bytes alone. With `signal = .walking` they carry a walking gait instead
/// (``WalkingGait``).
public struct SimulatedBoard: Sendable {
    /// A command the board did not act on, and why.
    public struct IgnoredCommand: Hashable, Sendable {
        /// The bytes written.
        public var bytes: [UInt8]
        /// Why it was ignored.
        public var reason: String
    }

    /// What a write does to the BLE link.
    public enum LinkEffect: Hashable, Sendable {
        /// `FE 06`: the board terminates the link; state is kept.
        case disconnect
        /// `FE 01` / `FE 05`: soft reset; link drops, runtime state cleared.
        case reset
        /// `FE 02`: reboot into the bootloader (MetaBoot); link drops, runtime state cleared.
        case bootloader
    }

    /// The board's answer to one write.
    public struct WriteResult: Hashable, Sendable {
        /// Notifications the board sends immediately (replies).
        public var notifications: [[UInt8]] = []
        /// Link consequence, if any.
        public var linkEffect: LinkEffect?
    }

    /// A notification due at a simulated time.
    public struct TimedNotification: Hashable, Sendable {
        /// Simulated time in nanoseconds since the board was created.
        public var nanoseconds: UInt64
        /// Bytes sent on 326a9006.
        public var bytes: [UInt8]
    }

    /// Test hooks for failure paths (reference §11.10).
    public struct Faults: Hashable, Sendable {
        /// Module ids whose `[mod, 80]` read gets no reply (init-timeout path).
        public var unansweredModuleInfo: Set<UInt8> = []
        /// Streaming notifications are silently not sent (watchdog path); samples still advance.
        public var streamStalled = false
        /// Drop every Nth streaming notification (deterministic loss), nil for none.
        public var dropEveryNthNotification: Int?
        /// The next this many `0B 02` trigger replies are not sent (logger-creation timeout, P3).
        public var unansweredTriggers = 0
        /// `0B 82` slot queries get no reply (P5).
        public var unansweredSlotQueries = false
        /// The readout stops sending, without its final `0B 08` (P6); it resumes when cleared.
        public var readoutStalled = false

        /// No faults.
        public init() {}
    }

    /// Identity and module table.
    public let profile: BoardProfile
    /// Seed of the deterministic signal.
    public let seed: UInt32
    /// Fault injection.
    public var faults = Faults()
    /// What streamed samples carry: the checkable signal unless told otherwise.
    public var signal = SimulatedSignal.checkable
    /// Battery level reported by `11 8C`.
    public var batteryPercent: UInt8 = 99
    /// Battery voltage reported by `11 8C`.
    public var batteryMillivolts: UInt16 = 4148

    /// Every byte string written to the board, in order.
    public private(set) var commandLog: [[UInt8]] = []
    /// Writes that were malformed or had no handler (the board ignores them silently).
    public private(set) var ignoredCommands: [IgnoredCommand] = []
    /// Gyro state.
    public private(set) var gyro: SimulatedSensorState
    /// Accelerometer state.
    public private(set) var accelerometer: SimulatedSensorState
    /// Button notifications enabled (`01 01 01`).
    public private(set) var buttonNotify = false
    /// LED patterns by color byte (15-byte payload after `02 03`).
    public private(set) var ledPatterns: [UInt8: [UInt8]] = [:]
    /// LED play state byte last written to `02 01` (0 pause, 1 play, 2 autoplay).
    public private(set) var ledPlayState: UInt8 = 0
    /// Last `11 09` payload (connection parameters request).
    public private(set) var requestedConnectionParameters: [UInt8]?
    /// Streaming notifications dropped by `faults`.
    public private(set) var droppedNotifications = 0
    /// Current simulated time in nanoseconds.
    public private(set) var nanoseconds: UInt64 = 0
    /// 3-bit reset counter reported by `0B 84`.
    public private(set) var resetUID: UInt8 = 5
    /// The flash logger (module 0x0B): triggers, entries, readout.
    public var flashLog: SimulatedFlashLog
    /// Tick of the board clock at power-on (until the next reset); near 2^32 tests rollover (P11).
    public var tickAtPowerOn: UInt32 = 0
    /// Every sample the sensors took, streamed, logged or neither (an observation for tests).
    public private(set) var measured = MeasuredSampleLog()

    private var clockOrigin: UInt64 = 0
    private var streamedNotifications = 0
    private var allocationIDs: [UInt8: UInt8] = [:]

    /// A board with a profile and signal seed.
    public init(profile: BoardProfile, seed: UInt32 = 1) {
        self.profile = profile
        self.seed = seed
        gyro = SimulatedSensorState(config: Self.defaultConfig(.gyro, profile.chip))
        accelerometer = SimulatedSensorState(config: Self.defaultConfig(.accelerometer, profile.chip))
        flashLog = SimulatedFlashLog(moduleInfo: profile.moduleInfoReply(0x0B), capacity: profile.flashCapacityEntries,
                                     pageEntries: profile.flashPageEntries)
    }

    /// The board clock's tick at simulated time `time`: 48/32768 s per tick since the last
    /// reset, wrapping at 2^32.
    public func tick(at time: UInt64) -> UInt32 {
        let sinceBoot = time >= clockOrigin ? (time - clockOrigin) / 1_000 * 32768 / 48_000_000 : 0
        return tickAtPowerOn &+ UInt32(truncatingIfNeeded: sinceBoot)
    }

    /// Power-on config: gyro `28 00` (100 Hz, ±2000 °/s); accelerometer BMI160 `28 03`
    /// (100 Hz, ±2 g), BMI270 `A8 02` (100 Hz, ±8 g) (reference §4.2, §5.2).
    static func defaultConfig(_ sensor: SimulatedSensorKind, _ chip: BoardProfile.Chip) -> [UInt8] {
        switch (sensor, chip) {
        case (.gyro, _): [0x28, 0x00]
        case (.accelerometer, .bmi160): [0x28, 0x03]
        case (.accelerometer, .bmi270): [0xA8, 0x02]
        }
    }

    /// State of one sensor.
    public func state(_ sensor: SimulatedSensorKind) -> SimulatedSensorState {
        sensor == .gyro ? gyro : accelerometer
    }

    /// DIS string for a 16-bit characteristic UUID.
    public func readDeviceInformation(_ shortUUID: UInt16) -> String? {
        profile.deviceInformation(shortUUID)
    }

    // MARK: Signal

    /// The deterministic sample `index` of `sensor` for a board seeded with `seed`.
    public static func signal(_ sensor: SimulatedSensorKind, seed: UInt32, index: UInt64) -> (x: Int16, y: Int16, z: Int16) {
        let salt: UInt32 = sensor == .gyro ? 0x9E37_79B9 : 0x85EB_CA6B
        var h = (UInt32(truncatingIfNeeded: index) &* 0x27D4_EB2F) ^ (seed &* 0x1656_67B1) ^ salt
        h ^= h >> 15
        h = h &* 0x2C1B_3C6D
        h ^= h >> 12
        h = h &* 0x297A_2D39
        h ^= h >> 15
        return (Int16(truncatingIfNeeded: index), Int16(truncatingIfNeeded: h), Int16(truncatingIfNeeded: h >> 16))
    }

    // MARK: Writes

    /// The central wrote `bytes` to 326a9001 at the current simulated time.
    public mutating func write(_ bytes: [UInt8]) -> WriteResult {
        commandLog.append(bytes)
        var result = WriteResult()
        guard bytes.count >= 2 else { ignore(bytes, "shorter than the 2-byte header"); return result }
        guard bytes.count <= 20 else { ignore(bytes, "longer than 20 bytes"); return result }
        let module = bytes[0]
        let registerByte = bytes[1]
        let payload = Array(bytes[2...])

        if registerByte & 0x80 != 0 {
            if registerByte & 0x40 != 0 { return result }  // silent read: value stays on the board
            if module == 0x0B, [0x82, 0x85].contains(registerByte), isPresent(module) {
                result.notifications = readLogging(registerByte & 0x3F, payload, bytes)
                return result
            }
            result.notifications = read(module, registerByte & 0x3F, bytes)
            return result
        }
        guard module == 0xFE || isPresent(module) else {
            ignore(bytes, "module 0x\(hex(module)) is absent on \(profile.name)")
            return result
        }
        switch module {
        case 0x13: writeSensor(.gyro, registerByte, payload, bytes)
        case 0x03: writeSensor(.accelerometer, registerByte, payload, bytes)
        case 0x01:
            if registerByte == 0x01, payload.count == 1, payload[0] <= 1 { buttonNotify = payload[0] == 1 }
            else { ignore(bytes, "switch accepts only 01 01 00/01") }
        case 0x02: writeLED(registerByte, payload, bytes)
        case 0x0B: result.notifications = writeLogging(registerByte, payload, bytes)
        case 0x11:
            if registerByte == 0x09 {
                if payload.count == 8 { requestedConnectionParameters = payload }
                else { ignore(bytes, "connection parameters need 8 payload bytes") }
            }
        case _ where registerByte == 0x02 && [0x09, 0x0A, 0x0C, 0x0F].contains(module):
            let id = allocationIDs[module, default: 0]
            allocationIDs[module] = id &+ 1
            result.notifications = [[module, 0x02, id]]
        case 0xFE:
            switch registerByte {
            case 0x06: result.linkEffect = .disconnect
            case 0x01, 0x05: resetRuntimeState(); result.linkEffect = .reset
            case 0x02: resetRuntimeState(); result.linkEffect = .bootloader
            case 0x03 where payload.count >= 3:
                result.notifications = [[payload[0], payload[1]] + payload[3...]]
            default: ignore(bytes, "no handler for debug register 0x\(hex(registerByte))")
            }
        default:
            ignore(bytes, "no handler (ignored silently, as the firmware does)")
        }
        return result
    }

    private func isPresent(_ module: UInt8) -> Bool {
        (profile.moduleInfo[module]?.count ?? 0) > 2
    }

    private mutating func read(_ module: UInt8, _ register: UInt8, _ bytes: [UInt8]) -> [[UInt8]] {
        guard bytes.count == 2 else { ignore(bytes, "read request with unexpected parameters"); return [] }
        if register == 0x00 {
            if faults.unansweredModuleInfo.contains(module) { return [] }
            return [profile.moduleInfoReply(module)]
        }
        guard isPresent(module) else { ignore(bytes, "read of absent module"); return [] }
        switch (module, register) {
        case (0x13, 0x03): return [[0x13, 0x83] + gyro.config]
        case (0x03, 0x03): return [[0x03, 0x83] + accelerometer.config]
        case (0x11, 0x0C):
            return [[0x11, 0x8C, batteryPercent, UInt8(truncatingIfNeeded: batteryMillivolts),
                     UInt8(truncatingIfNeeded: batteryMillivolts >> 8)]]
        case (0x11, 0x0B): return [[0x11, 0x8B, 0x01] + profile.macAddress.reversed()]
        case (0x0B, 0x04):
            let tick = tick(at: nanoseconds)
            return [[0x0B, 0x84] + littleEndian(tick) + [resetUID]]
        default:
            ignore(bytes, "no readable register 0x\(hex(register)) on module 0x\(hex(module))")
            return []
        }
    }

    private func registers(_ sensor: SimulatedSensorKind) -> (data: UInt8, packed: UInt8) {
        switch (sensor, profile.chip) {
        case (.gyro, .bmi160): (0x05, 0x07)
        case (.gyro, .bmi270): (0x04, 0x05)
        case (.accelerometer, .bmi160): (0x04, 0x1C)
        case (.accelerometer, .bmi270): (0x04, 0x05)
        }
    }

    private mutating func writeSensor(_ sensor: SimulatedSensorKind, _ register: UInt8, _ payload: [UInt8], _ bytes: [UInt8]) {
        var state = self.state(sensor)
        let wasSampling = state.isSampling
        let (dataRegister, packedRegister) = registers(sensor)
        switch register {
        case 0x01:
            let maxMode: UInt8 = sensor == .accelerometer && profile.chip == .bmi270 ? 2 : 1
            guard payload.count == 1, payload[0] <= maxMode else { ignore(bytes, "power mode must be one byte 0…\(maxMode)"); return }
            state.powerMode = payload[0]
        case 0x02:
            guard payload.count == 2 else { ignore(bytes, "interrupt enable needs enable and disable masks"); return }
            if payload[0] & 0x01 != 0 { state.interruptEnabled = true }
            if payload[1] & 0x01 != 0 { state.interruptEnabled = false }
        case 0x03:
            guard payload.count == 2 else { ignore(bytes, "config needs exactly 2 bytes"); return }
            guard Self.odrTimes32(sensor, payload) != nil, validRange(sensor, payload[1]) else {
                ignore(bytes, "config bytes out of the \(profile.chip) tables"); return
            }
            // The SDK documents that no Bosch gyro or accelerometer (BMI160 or BMI270) takes
            // a new configuration while running: the host must stop it first.
            if state.isPowered {
                ignore(bytes, "\(profile.chip.rawValue) \(sensor.rawValue) ignores config while running"); return
            }
            state.config = payload
        case dataRegister, packedRegister:
            guard payload.count == 1, payload[0] <= 1 else { ignore(bytes, "notify enable must be 00 or 01"); return }
            if register == dataRegister { state.singleNotify = payload[0] == 1 } else { state.packedNotify = payload[0] == 1 }
        case 0x05 where sensor == .accelerometer && profile.chip == .bmi160:
            break  // interrupt config on BMI160: accepted, not modelled
        case 0x06 where sensor == .gyro && profile.chip == .bmi270:
            guard payload.count == 3 else { ignore(bytes, "offsets need 3 bytes"); return }
        default:
            ignore(bytes, "no handler for \(sensor.rawValue) register 0x\(hex(register)) on \(profile.chip.rawValue)")
            return
        }
        if state.isSampling && !wasSampling {
            state.originNanoseconds = nanoseconds
            state.samplesSinceOrigin = 0
            state.pendingPacked = []
        }
        if !state.isSampling { state.pendingPacked = [] }
        if sensor == .gyro { gyro = state } else { accelerometer = state }
    }

    private func validRange(_ sensor: SimulatedSensorKind, _ byte: UInt8) -> Bool {
        switch (sensor, profile.chip) {
        case (.gyro, _): byte <= 0x04
        case (.accelerometer, .bmi160): [0x03, 0x05, 0x08, 0x0C].contains(byte)
        case (.accelerometer, .bmi270): byte <= 0x03
        }
    }

    /// ODR × 32 (an integer for every rate, down to 0.78125 Hz) from a config, nil if invalid.
    static func odrTimes32(_ sensor: SimulatedSensorKind, _ config: [UInt8]) -> UInt64? {
        guard let first = config.first else { return nil }
        let code = Int(first & 0x0F)
        switch sensor {
        case .gyro:
            guard (6...13).contains(code) else { return nil }
            return 800 << UInt64(code - 6)  // 25 Hz × 32 at code 6
        case .accelerometer:
            guard (1...12).contains(code) else { return nil }
            return code >= 5 ? 400 << UInt64(code - 5) : 400 >> UInt64(5 - code)  // 12.5 Hz × 32 at code 5
        }
    }

    private mutating func writeLED(_ register: UInt8, _ payload: [UInt8], _ bytes: [UInt8]) {
        switch register {
        case 0x01 where payload.count == 1 && payload[0] <= 2: ledPlayState = payload[0]
        case 0x02 where payload.count == 1 && payload[0] <= 1:
            ledPlayState = 0
            if payload[0] == 1 { ledPatterns = [:] }
        case 0x03 where payload.count == 15 && payload[0] <= 2 && payload[1] == 0x02:
            ledPatterns[payload[0]] = Array(payload[1...])
        default: ignore(bytes, "malformed LED command")
        }
    }

    private mutating func writeLogging(_ register: UInt8, _ payload: [UInt8], _ bytes: [UInt8]) -> [[UInt8]] {
        switch flashLog.write(register, payload, now: nanoseconds) {
        case .success(let replies):
            if register == 0x02, faults.unansweredTriggers > 0, !replies.isEmpty {
                faults.unansweredTriggers -= 1
                return []
            }
            return replies
        case .failure(let ignored):
            ignore(bytes, ignored.reason)
            return []
        }
    }

    private mutating func readLogging(_ register: UInt8, _ payload: [UInt8], _ bytes: [UInt8]) -> [[UInt8]] {
        if register == 0x02, faults.unansweredSlotQueries { return [] }
        switch flashLog.read(register, payload) {
        case .success(let replies): return replies
        case .failure(let ignored):
            ignore(bytes, ignored.reason)
            return []
        }
    }

    /// The board resets by itself (brown-out, watchdog), as `FE 01` does: the link drops,
    /// sensors stop, the tick restarts at 0 and the reset UID moves on; loggers and entries stay.
    public mutating func resetItself() {
        resetRuntimeState()
    }

    /// The BLE link went away: a readout in progress ends (its unconfirmed entries are sent
    /// again by the next readout). Sensors and logging carry on.
    public mutating func linkLost() {
        flashLog.linkLost()
    }

    private mutating func resetRuntimeState() {
        for sensor in SimulatedSensorKind.allCases {
            var state = SimulatedSensorState(config: Self.defaultConfig(sensor, profile.chip))
            state.nextSampleIndex = self.state(sensor).nextSampleIndex
            if sensor == .gyro { gyro = state } else { accelerometer = state }
        }
        buttonNotify = false
        ledPatterns = [:]
        ledPlayState = 0
        requestedConnectionParameters = nil
        resetUID = (resetUID + 1) & 0x07
        clockOrigin = nanoseconds
        tickAtPowerOn = 0
        flashLog.reset()
    }

    private mutating func ignore(_ bytes: [UInt8], _ reason: String) {
        ignoredCommands.append(IgnoredCommand(bytes: bytes, reason: reason))
    }

    // MARK: Button

    /// The user presses the button: `01 01 01` if button notifications are on.
    public mutating func pressButton() -> [[UInt8]] { buttonNotify ? [[0x01, 0x01, 0x01]] : [] }

    /// The user releases the button: `01 01 00` if button notifications are on.
    public mutating func releaseButton() -> [[UInt8]] { buttonNotify ? [[0x01, 0x01, 0x00]] : [] }

    // MARK: Time

    /// Moves simulated time forward and returns the streaming notifications due, oldest first.
    /// Time never moves backwards; an earlier `nanoseconds` returns nothing.
    public mutating func advance(to target: UInt64) -> [TimedNotification] {
        guard target > nanoseconds else { return [] }
        var out: [TimedNotification] = []
        out += generate(.gyro, until: target)
        out += generate(.accelerometer, until: target)
        for (time, bytes) in flashLog.readoutNotifications(until: target, stalled: faults.readoutStalled) {
            out.append(TimedNotification(nanoseconds: time, bytes: bytes))
        }
        nanoseconds = target
        if out.count > 1 { stableSortByTime(&out) }
        return out
    }

    private mutating func generate(_ sensor: SimulatedSensorKind, until target: UInt64) -> [TimedNotification] {
        var state = self.state(sensor)
        guard state.isSampling, let odr32 = Self.odrTimes32(sensor, state.config) else { return [] }
        let (dataRegister, packedRegister) = registers(sensor)
        var out: [TimedNotification] = []
        while true {
            let k = state.samplesSinceOrigin + 1
            let due = state.originNanoseconds + k * 32_000_000_000 / odr32
            guard due <= target else { break }
            state.samplesSinceOrigin = k
            let index = state.nextSampleIndex
            state.nextSampleIndex += 1
            measured.record(sensor, index: index, at: due)
            let vector = state.singleNotify || flashLog.isLogging ? vectorBytes(sensor, index) : []
            if flashLog.isLogging {
                flashLog.record(module: sensor.module, register: dataRegister, payload: vector, tick: tick(at: due), resetUID: resetUID)
            }
            if state.singleNotify {
                emit(&out, due, [sensor.module, dataRegister] + vector)
            }
            state.pendingPacked.append(index)
            if state.pendingPacked.count == 3 {
                if state.packedNotify {
                    emit(&out, due, [sensor.module, packedRegister] + state.pendingPacked.flatMap { vectorBytes(sensor, $0) })
                }
                state.pendingPacked = []
            }
        }
        if sensor == .gyro { gyro = state } else { accelerometer = state }
        return out
    }

    /// Sorts by time, keeping the order of notifications due at the same time (a readout's
    /// `0B 07`, `0B 0D`, `0B 08` must stay in that order).
    private func stableSortByTime(_ out: inout [TimedNotification]) {
        out = out.enumerated().sorted { ($0.element.nanoseconds, $0.offset) < ($1.element.nanoseconds, $1.offset) }.map(\.element)
    }

    private func vectorBytes(_ sensor: SimulatedSensorKind, _ index: UInt64) -> [UInt8] {
        let s = signal == .walking ? walkingSample(sensor, index) : Self.signal(sensor, seed: seed, index: index)
        return [s.x, s.y, s.z].flatMap { v -> [UInt8] in
            let u = UInt16(bitPattern: v)
            return [UInt8(truncatingIfNeeded: u), UInt8(truncatingIfNeeded: u >> 8)]
        }
    }

    private mutating func emit(_ out: inout [TimedNotification], _ time: UInt64, _ bytes: [UInt8]) {
        streamedNotifications += 1
        if faults.streamStalled { droppedNotifications += 1; return }
        if let n = faults.dropEveryNthNotification, n > 0, streamedNotifications % n == 0 {
            droppedNotifications += 1
            return
        }
        out.append(TimedNotification(nanoseconds: time, bytes: bytes))
    }

    private func hex(_ byte: UInt8) -> String { hexByte(byte) }
}
