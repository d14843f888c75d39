/// The connect-time handshake as a pure state machine (reference §3.1, §9.5).
///
/// The board-session actor owns the I/O and the timers; this value only decides what to do
/// next. Drive it like this:
/// 1. enable notifications on 326a9006, then call `start()`;
/// 2. perform every returned action in order (`.write`, `.readDeviceInformation`, `.pause`);
/// 3. when an action list ends in `.awaitReply(step)`, arm a timeout for that step; feed each
///    notification to `receive(notification:)`, each DIS value to `receive(_:value:)`, and call
///    `timedOut(step)` when the timer fires (or the read failed);
/// 4. stop at `.finished(description, plan)` (then write `plan.startCommands`) or `.failed(error)`.
///
/// Sequence: DIS reads one at a time → module-info reads one at a time (21 modules) → board
/// clock (if logging is present) → battery (settings rev ≥ 3) → stop-everything cleanup (not
/// when resuming a known board's stream) → connection parameters and a pause (if configured and
/// settings rev ≥ 1) → finished.
/// Unrelated notifications (stale streaming data from a previous session) are ignored, and so
/// are malformed replies (e.g. a truncated module-info reply): the step then times out and is
/// retried. Optional reads (DIS, board clock, battery, modules not needed by the configuration)
/// are skipped after the last attempt; a configured sensor's module info is required.
public struct HandshakeSequencer: Sendable {
    /// Something the handshake is waiting for.
    public enum Step: Hashable, Sendable, CustomStringConvertible {
        case deviceInformation(DeviceInformationField)
        case moduleInfo(ModuleID)
        case boardClock
        case battery

        public var description: String {
            switch self {
            case .deviceInformation(let f): "DIS \(f.rawValue) read"
            case .moduleInfo(let m): "module info for \(m)"
            case .boardClock: "board clock read (0B 84)"
            case .battery: "battery read (11 8C)"
            }
        }
    }

    /// What the session actor must do next.
    public enum Action: Hashable, Sendable {
        /// Write a command to 326a9001 (write-without-response unless `requiresWriteWithResponse`).
        case write(Packet)
        /// Read a DIS characteristic and report it with `receive(_:value:)`.
        case readDeviceInformation(DeviceInformationField)
        /// Wait before the next action (the board renegotiates the link after `11 09`).
        case pause(milliseconds: Int)
        /// Arm a timeout for this step; report it with `timedOut(_:)`.
        case awaitReply(Step)
        /// Done: the board and the streaming plan to start.
        case finished(BoardDescription, StreamingPlan)
        /// Gave up.
        case failed(HandshakeError)
    }

    /// Tuning knobs.
    public struct Options: Hashable, Sendable {
        /// Attempts per read before giving up on it (the reference recommends a retry or two).
        public var attemptsPerRead: Int
        /// Modules to probe, in order.
        public var modulesToProbe: [ModuleID]
        /// Suggested per-read timeout for the actor, in milliseconds.
        public var replyTimeoutMilliseconds: Int
        /// Pause after requesting connection parameters, in milliseconds.
        public var pauseAfterConnectionParametersMilliseconds: Int

        /// Defaults: 3 attempts, all 21 modules, 1 s per read, 1.5 s after `11 09`.
        public init(attemptsPerRead: Int = 3, modulesToProbe: [ModuleID] = ModuleID.discoveryOrder,
                    replyTimeoutMilliseconds: Int = 1000, pauseAfterConnectionParametersMilliseconds: Int = 1500) {
            self.attemptsPerRead = max(1, attemptsPerRead)
            self.modulesToProbe = modulesToProbe
            self.replyTimeoutMilliseconds = replyTimeoutMilliseconds
            self.pauseAfterConnectionParametersMilliseconds = pauseAfterConnectionParametersMilliseconds
        }
    }

    /// The user's sensor configuration.
    public let configuration: StreamingConfiguration
    /// Tuning knobs.
    public let options: Options
    /// The step a reply is expected for, nil when not waiting.
    public private(set) var awaiting: Step?
    /// The final outcome once finished or failed.
    public private(set) var outcome: Action?

    private var attempts = 0
    private var deviceInformation: [DeviceInformationField: String] = [:]
    private var modules = ModuleTable()
    private var battery: BatteryState?
    private var boardClock: BoardClock?
    private var started = false

    /// What an earlier handshake learnt about this board (DIS strings, module info): a
    /// reconnect skips those reads (issue 18: re-reading 21 registers cost 1-2 s per reconnect).
    private var known: BoardDescription?

    /// The board streams this configuration from before the link dropped: the handshake leaves
    /// its sensors running (no stop-everything cleanup), and the start commands written after
    /// it only make sure they run.
    private let resuming: Bool

    /// A sequencer for one connection; `known` is the board as an earlier handshake described it.
    /// With `resuming` (only together with `known`) the board's sensors are left running: a
    /// reconnect in the middle of a recording does not stop the stream it comes back for
    /// (on the real stack its gyro stop left the board silent for most of a second per link drop).
    public init(configuration: StreamingConfiguration, options: Options = Options(), known: BoardDescription? = nil,
                resuming: Bool = false) {
        self.configuration = configuration
        self.options = options
        self.resuming = resuming && known != nil
        if let known {
            self.known = known
            modules = known.modules
            for field in DeviceInformationField.allCases {
                let value: String? = switch field {
                case .firmwareRevision: known.firmwareRevision
                case .modelNumber: known.modelNumber
                case .hardwareRevision: known.hardwareRevision
                case .manufacturer: known.manufacturer
                case .serialNumber: known.serialNumber
                }
                if let value { deviceInformation[field] = value }
            }
        }
    }

    /// Whether the handshake has finished or failed.
    public var isDone: Bool { outcome != nil }

    /// First actions after notifications are enabled.
    public mutating func start() -> [Action] {
        guard !started else { return [] }
        started = true
        if known != nil { return afterDiscovery() }
        return request(.deviceInformation(.firmwareRevision))
    }

    /// A DIS string arrived.
    public mutating func receive(_ field: DeviceInformationField, value: String) -> [Action] {
        guard awaiting == .deviceInformation(field) else { return [] }
        deviceInformation[field] = value.trimmingWhitespace()
        return advance(after: .deviceInformation(field))
    }

    /// The DIS characteristic for `field` is not exported (BlueZ hides a service its plugin
    /// claims): retrying cannot help, so the read is skipped at once.
    public mutating func unavailable(_ field: DeviceInformationField) -> [Action] {
        guard awaiting == .deviceInformation(field) else { return [] }
        return advance(after: .deviceInformation(field))
    }

    /// A notification arrived on 326a9006.
    public mutating func receive(notification bytes: [UInt8]) -> [Action] {
        guard let step = awaiting, bytes.count >= 2 else { return [] }
        switch step {
        case .moduleInfo(let module):
            guard bytes[0] == module.rawValue, bytes[1] == 0x80,
                  let info = try? ModuleInfo(reply: bytes) else { return [] }
            modules.record(info)
        case .boardClock:
            guard bytes.count == 7, bytes[0] == 0x0B, bytes[1] == 0x84 else { return [] }
            let tick = UInt32(bytes[2]) | UInt32(bytes[3]) << 8 | UInt32(bytes[4]) << 16 | UInt32(bytes[5]) << 24
            boardClock = BoardClock(tick: tick, resetUID: bytes[6])
        case .battery:
            guard bytes.count == 5, bytes[0] == 0x11, bytes[1] == 0x8C else { return [] }
            battery = BatteryState(percent: bytes[2], millivolts: UInt16(bytes[3]) | UInt16(bytes[4]) << 8)
        case .deviceInformation:
            return []
        }
        return advance(after: step)
    }

    /// The timeout armed for `step` fired (or its read failed). Stale timeouts are ignored.
    public mutating func timedOut(_ step: Step) -> [Action] {
        guard awaiting == step else { return [] }
        if attempts < options.attemptsPerRead {
            return resend(step)
        }
        // Out of attempts: the optional reads are skipped, required module info is fatal.
        if case .moduleInfo(let module) = step, isRequired(module) {
            return fail(.noReply(step, attempts: attempts))
        }
        return advance(after: step)
    }

    private func isRequired(_ module: ModuleID) -> Bool {
        configuration.sensors.contains { $0.0.module == module }
    }

    private mutating func request(_ step: Step) -> [Action] {
        awaiting = step
        attempts = 0
        return resend(step)
    }

    private mutating func resend(_ step: Step) -> [Action] {
        attempts += 1
        switch step {
        case .deviceInformation(let field): return [.readDeviceInformation(field), .awaitReply(step)]
        case .moduleInfo(let module): return [.write(ModuleInfo.request(for: module)), .awaitReply(step)]
        case .boardClock: return [.write(Commands.readBoardClock), .awaitReply(step)]
        case .battery: return [.write(Commands.readBattery), .awaitReply(step)]
        }
    }

    private mutating func advance(after step: Step) -> [Action] {
        awaiting = nil
        switch step {
        case .deviceInformation(let field):
            let all = DeviceInformationField.allCases
            if let i = all.firstIndex(of: field), i + 1 < all.count {
                return request(.deviceInformation(all[i + 1]))
            }
            return firstModuleOrLater()
        case .moduleInfo(let module):
            let list = options.modulesToProbe
            if let i = list.firstIndex(of: module), i + 1 < list.count {
                return request(.moduleInfo(list[i + 1]))
            }
            return afterDiscovery()
        case .boardClock:
            return afterClock()
        case .battery:
            return finish()
        }
    }

    private mutating func firstModuleOrLater() -> [Action] {
        if let first = options.modulesToProbe.first { return request(.moduleInfo(first)) }
        return afterDiscovery()
    }

    private mutating func afterDiscovery() -> [Action] {
        if modules.has(.logging) { return request(.boardClock) }
        return afterClock()
    }

    private mutating func afterClock() -> [Action] {
        if let revision = modules.revision(of: .settings), revision >= 3 { return request(.battery) }
        return finish()
    }

    private mutating func finish() -> [Action] {
        let chip: IMUChip
        do { chip = try IMUChip.detect(modules: modules) } catch { return fail(.chip(error)) }
        let modelNumber = deviceInformation[.modelNumber]
        let candidates = modelNumber == nil ? BoardModel.candidates(modules: modules, chip: chip) : []
        let model = modelNumber.map { BoardModel.detect(modelNumber: $0, modules: modules) }
            ?? (candidates.count == 1 ? candidates[0] : .unknown)
        var description = BoardDescription(
            model: model,
            chip: chip,
            firmwareRevision: deviceInformation[.firmwareRevision],
            modelNumber: deviceInformation[.modelNumber],
            hardwareRevision: deviceInformation[.hardwareRevision],
            manufacturer: deviceInformation[.manufacturer],
            serialNumber: deviceInformation[.serialNumber],
            modules: modules, battery: battery, boardClock: boardClock)
        description.modelCandidates = candidates
        let plan: StreamingPlan
        do { plan = try configuration.plan(for: description) } catch { return fail(.configuration(error)) }
        var actions = resuming ? [] : Commands.cleanup(chip: chip, modules: modules).map(Action.write)
        if let parameters = configuration.connectionParameters, let revision = description.settingsRevision, revision >= 1 {
            actions.append(.write(Commands.connectionParameters(parameters)))
            actions.append(.pause(milliseconds: options.pauseAfterConnectionParametersMilliseconds))
        }
        let done = Action.finished(description, plan)
        outcome = done
        actions.append(done)
        return actions
    }

    private mutating func fail(_ error: HandshakeError) -> [Action] {
        awaiting = nil
        let failed = Action.failed(error)
        outcome = failed
        return [failed]
    }
}

/// Why a handshake failed.
public enum HandshakeError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A required reply never came.
    case noReply(HandshakeSequencer.Step, attempts: Int)
    /// The IMU chip could not be determined.
    case chip(ChipDetectionError)
    /// The configuration does not fit this board.
    case configuration(ConfigurationError)

    public var description: String {
        switch self {
        case .noReply(let step, let attempts): "no reply to \(step) after \(attempts) attempt(s)"
        case .chip(let error): "cannot identify the IMU: \(error)"
        case .configuration(let error): "configuration does not fit this board: \(error)"
        }
    }
}
