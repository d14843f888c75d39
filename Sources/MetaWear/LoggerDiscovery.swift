/// The two logger ids of one sensor's x/y/z data: x and y in one, z in the other (§4.2).
public struct LoggerIDs: Hashable, Sendable, CustomStringConvertible {
    /// Logger holding x and y (offset 0, 4 bytes).
    public var xy: UInt8
    /// Logger holding z (offset 4, 2 bytes).
    public var z: UInt8

    /// Both ids.
    public init(xy: UInt8, z: UInt8) {
        self.xy = xy
        self.z = z
    }

    public var description: String { "loggers \(xy)/\(z)" }
}

/// Finds the loggers a board already has, from its answers to the slot reads `0B 82 <id>`
/// (metawear-logging.md §4.5). A gateway restarted after a crash has no memory of the ids it
/// allocated (P12); the board still logs with them, so they are found here, not allocated twice.
public enum LoggerDiscovery {
    /// The slot reads for every trigger slot (each must be answered, P5).
    public static func slotReads(count: Int) -> [Packet] {
        (0..<max(0, min(count, 32))).map { LoggingCommands.readTrigger(slot: UInt8($0)) }
    }

    /// Each sensor's existing x/y and z loggers on its single-sample data register, from the
    /// slot replies by id (nil = free slot). The lowest matching ids win.
    public static func existing(slots: [UInt8: LogTrigger?], chip: IMUChip) -> [MotionSensor: LoggerIDs] {
        var found: [MotionSensor: LoggerIDs] = [:]
        for sensor in MotionSensor.allCases {
            func slot(offset: Int, length: Int) -> UInt8? {
                slots.keys.sorted().first { id in
                    guard case let trigger?? = slots[id] else { return false }
                    return trigger.module == sensor.module && trigger.register == sensor.dataRegister(on: chip)
                        && trigger.dataID == 0xFF && trigger.offset == offset && trigger.length == length
                }
            }
            if let xy = slot(offset: 0, length: 4), let z = slot(offset: 4, length: 2) { found[sensor] = LoggerIDs(xy: xy, z: z) }
        }
        return found
    }
}
