/// Starts a board's flash log for the streamed sensors while they stream, so the board keeps a
/// copy of every sample for the gaps of the link (issue 21 part 1).
///
/// On the first link it reads every trigger slot (`0B 82 <id>`, one at a time: replies carry no
/// slot number, §4.5) so loggers left by an earlier gateway (killed, P12) are reused rather
/// than allocated again until the slots run out, allocates what is missing (``LoggerSetup``),
/// then starts logging, overwriting the oldest entries when the flash is full: the newest
/// entries cover the latest gaps, the oldest were streamed long ago. On a later link the
/// loggers are known and logging is (re)started at once (a reset stops it). Pure: the caller
/// writes, waits about a second per reply and reports each timeout.
public struct FlashLogStart: Sendable {
    /// Reply timeouts a request may take before the start gives up. On a live link the board
    /// answers every request, but a loaded gateway can take longer than one timeout to hand the
    /// reply over (a 2-core host at load 15 did, and the board then streamed a whole link
    /// without its log). The request is not sent again: replies carry no slot number, so a late
    /// reply to the first read would be taken for the answer to the next.
    public static let timeoutsPerRequest = 3

    /// How the start ended.
    public enum Outcome: Hashable, Sendable {
        /// Logging with these loggers.
        case logging([MotionSensor: LoggerIDs])
        /// Not logging; `cleanup` removes what this start allocated, `reason` names the problem.
        case failed(reason: String, cleanup: [Packet])
    }

    private enum Phase {
        case discovering(slot: Int)
        case allocating(LoggerSetup)
        case done
    }

    private let sensors: [MotionSensor]
    private let chip: IMUChip
    private let triggerSlots: Int
    private let known: [MotionSensor: LoggerIDs]?
    private var phase = Phase.done
    private var slots: [UInt8: LogTrigger?] = [:]
    /// Timeouts the pending request has taken.
    private var timeouts = 0

    /// A start for `sensors` on `chip` with `triggerSlots` slots (module info extra[0]);
    /// `known` are the loggers an earlier link of this gateway found or made.
    public init(sensors: [MotionSensor], chip: IMUChip, triggerSlots: Int, known: [MotionSensor: LoggerIDs]? = nil) {
        self.sensors = sensors
        self.chip = chip
        self.triggerSlots = max(0, min(triggerSlots, 32))
        self.known = known
    }

    /// Whether a reply is awaited (a timeout applies).
    public var isAwaitingReply: Bool {
        if case .done = phase { return false }
        return true
    }

    /// The first writes, or the outcome at once when the loggers are known.
    public mutating func start() -> (writes: [Packet], outcome: Outcome?) {
        if let known, sensors.allSatisfy({ known[$0] != nil }) { return logging(known.filter { sensors.contains($0.key) }) }
        guard triggerSlots > 0 else { return allocate(existing: [:]) }
        phase = .discovering(slot: 0)
        return ([LoggingCommands.readTrigger(slot: 0)], nil)
    }

    /// A logging notification; anything that does not answer the pending request is ignored.
    public mutating func receive(_ bytes: [UInt8]) -> (writes: [Packet], outcome: Outcome?) {
        switch phase {
        case .discovering(let slot):
            guard case .success(.trigger(let trigger))? = LogNotificationDecoder.decode(bytes) else { return ([], nil) }
            timeouts = 0
            slots[UInt8(slot)] = .some(trigger)
            if slot + 1 < triggerSlots {
                phase = .discovering(slot: slot + 1)
                return ([LoggingCommands.readTrigger(slot: UInt8(slot + 1))], nil)
            }
            return allocate(existing: LoggerDiscovery.existing(slots: slots, chip: chip))
        case .allocating(var setup):
            let step = setup.receive(bytes)
            phase = .allocating(setup)
            if !step.writes.isEmpty || step.outcome != nil { timeouts = 0 }
            return settle(step)
        case .done:
            return ([], nil)
        }
    }

    /// The wait for the pending reply ran out: nil to wait once more (the caller arms its
    /// timer again), or the outcome once the request has taken ``timeoutsPerRequest``.
    public mutating func timedOut() -> Outcome? {
        if isAwaitingReply {
            timeouts += 1
            if timeouts < Self.timeoutsPerRequest { return nil }
        }
        switch phase {
        case .discovering(let slot):
            phase = .done
            return .failed(reason: "the board did not answer the trigger slot read 0B 82 \(slot) "
                + "in \(Self.timeoutsPerRequest) reply timeouts", cleanup: [])
        case .allocating(var setup):
            phase = .done
            switch setup.timedOut() {
            case .ready(let loggers): return .logging(loggers)
            case .failed(let reason, let cleanup): return .failed(reason: reason, cleanup: cleanup)
            }
        case .done:
            return .failed(reason: "no reply was awaited", cleanup: [])
        }
    }

    private mutating func allocate(existing: [MotionSensor: LoggerIDs]) -> (writes: [Packet], outcome: Outcome?) {
        var setup = LoggerSetup(sensors: sensors, chip: chip, existing: existing)
        let step = setup.start()
        phase = .allocating(setup)
        return settle(step)
    }

    private mutating func settle(_ step: (writes: [Packet], outcome: LoggerSetup.Outcome?)) -> (writes: [Packet], outcome: Outcome?) {
        switch step.outcome {
        case nil:
            return (step.writes, nil)
        case .ready(let loggers)?:
            return logging(loggers)
        case .failed(let reason, let cleanup)?:
            phase = .done
            return (step.writes, .failed(reason: reason, cleanup: cleanup))
        }
    }

    private mutating func logging(_ loggers: [MotionSensor: LoggerIDs]) -> (writes: [Packet], outcome: Outcome?) {
        phase = .done
        return (LoggingCommands.start(overwriteWhenFull: true), .logging(loggers))
    }
}
