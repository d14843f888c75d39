/// One x/y/z sample put back together from its log entries.
public struct LoggedSample: Hashable, Sendable {
    /// Boot of the board that logged it.
    public var resetUID: UInt8
    /// Board tick of the x/y entry, the first one written (the SDK stamps a sample with the
    /// entry that completed it, which can be one tick later).
    public var tick: UInt32
    /// Raw counts (scale with the range that was in force while logging, P2).
    public var raw: RawVector

    /// All fields.
    public init(resetUID: UInt8, tick: UInt32, raw: RawVector) {
        self.resetUID = resetUID
        self.tick = tick
        self.raw = raw
    }
}

/// Pairs the two entries of a three-axis sample (x, y under one logger; z under the other,
/// §4.2) for one sensor.
///
/// Unlike the SDK's per-id FIFOs (P9), entries pair only when they are adjacent in the
/// readout, from the same boot and within one tick of each other: the board writes a sample's
/// entries back to back, so a half sample left at the head by a circular wrap, or cut off by a
/// full flash, is dropped and counted instead of shifting every later sample.
public struct LogSampleAssembler: Hashable, Sendable {
    /// Logger id holding x and y (`attr 60`).
    public let xyLogger: UInt8
    /// Logger id holding z (`attr 24`).
    public let zLogger: UInt8
    /// Half samples dropped because their partner never came.
    public private(set) var orphanedEntries = 0
    private var pending: LogEntry?

    /// An assembler for a sensor's two logger ids (the board's `0B 02` replies, in order).
    public init(xyLogger: UInt8, zLogger: UInt8) {
        self.xyLogger = xyLogger
        self.zLogger = zLogger
    }

    /// Whether an entry belongs to this sensor.
    public func owns(_ entry: LogEntry) -> Bool { entry.loggerID == xyLogger || entry.loggerID == zLogger }

    /// Adds an entry of this sensor (others are ignored); returns the sample it completes.
    public mutating func add(_ entry: LogEntry) -> LoggedSample? {
        guard owns(entry) else { return nil }
        guard let held = pending else { pending = entry; return nil }
        let tickDistance = entry.tick &- held.tick
        let partners = held.loggerID != entry.loggerID && held.resetUID == entry.resetUID
            && (tickDistance <= 1 || tickDistance == UInt32.max)
        guard partners else {
            orphanedEntries += 1
            pending = entry
            return nil
        }
        pending = nil
        let (xy, z) = held.loggerID == xyLogger ? (held, entry) : (entry, held)
        let raw = RawVector(x: Int16(truncatingIfNeeded: xy.data), y: Int16(truncatingIfNeeded: xy.data >> 16),
                            z: Int16(truncatingIfNeeded: z.data))
        return LoggedSample(resetUID: entry.resetUID, tick: xy.tick, raw: raw)
    }

    /// The readout ended: a held half sample will never be completed.
    public mutating func finish() {
        if pending != nil { orphanedEntries += 1 }
        pending = nil
    }

    /// The link dropped mid-readout: the held half is sent again by the next readout.
    public mutating func discardHeld() { pending = nil }
}
