/// The flash logger's commands (module 0x0B) as MbientLab's C++ SDK writes them
/// (metawear-logging.md §3–§6, §8). The logging revision (module info), never the board model,
/// decides the variants: revision 2 enables page-completed notifications before a download or a
/// clear, revision 3 (MetaMotion S) flushes its open page after logging stops (§2, P14).
public enum LoggingCommands {
    /// Bytes one log entry carries.
    public static let entryDataBytes = 4

    /// Logger-trigger writes for a sensor's x/y/z data on `chip`: `0B 02 <mod> <reg> FF 60` (x, y)
    /// then `0B 02 <mod> <reg> FF 24` (z). The board answers `0B 02 <id>` for each, in order.
    /// The gyro's data register is `13 05` on BMI160 but `13 04` on BMI270, where `13 05` is the
    /// packed register that must not be logged (§4.3, P1).
    public static func triggers(_ sensor: MotionSensor, chip: IMUChip) -> [Packet] {
        let source = [sensor.module.rawValue, sensor.dataRegister(on: chip), 0xFF]
        return [attribute(length: 4, offset: 0), attribute(length: 2, offset: 4)].map {
            Packet(unchecked: .logging, 0x02, payload: source + [$0])
        }
    }

    /// `((length - 1) << 5) | offset` (CPP:logging.cpp:863-870).
    static func attribute(length: Int, offset: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: (length - 1) << 5 | offset)
    }

    /// `mbl_mw_logging_start`: `0B 0B 00|01` (overwrite oldest when full), then `0B 01 01`.
    public static func start(overwriteWhenFull: Bool) -> [Packet] {
        [Packet(unchecked: .logging, 0x0B, payload: [overwriteWhenFull ? 0x01 : 0x00]),
         Packet(unchecked: .logging, 0x01, payload: [0x01])]
    }

    /// `0B 01 00`: stop writing entries (the sensors keep sampling).
    public static let stop = Packet(unchecked: .logging, 0x01, payload: [0x00])

    /// `0B 10 01` on revision 3, nothing otherwise: commits the open page so the length read and
    /// the readout see it. Only after logging has stopped (§5.1, P13).
    public static func flushPage(revision: UInt8) -> [Packet] {
        revision == 3 ? [Packet(unchecked: .logging, 0x10, payload: [0x01])] : []
    }

    /// Commits the open page while logging goes on, so a readout sees every entry: on revision 3
    /// `0B 01 00`, `0B 10 01`, then the start again (`0B 0B 0x`, `0B 01 01`); nothing on other
    /// revisions. Until the flush the open page (up to 512 entries) is neither counted by the
    /// length read nor read out, and the board ignores a flush while logging (§5.1, P13), so
    /// logging stops for the moment between the writes, as for a trim: what the board samples
    /// then is in no log. Nothing sends it now: during a session a readout waits for the open
    /// page to fill instead, and after one ``flushPage(revision:)`` follows the stop.
    public static func flushWhileLogging(revision: UInt8, overwriteWhenFull: Bool) -> [Packet] {
        guard revision == 3 else { return [] }
        return [stop] + flushPage(revision: revision) + start(overwriteWhenFull: overwriteWhenFull)
    }

    /// The writes before a readout: `0B 08 01` (progress), `0B 0D 01` on revision 2, `0B 07 01`,
    /// then the length read `0B 85` (§5.2 steps 1-4).
    public static func downloadPreamble(revision: UInt8) -> [Packet] {
        var packets = [Packet(unchecked: .logging, 0x08, payload: [0x01])]
        if revision == 2 { packets.append(Packet(unchecked: .logging, 0x0D, payload: [0x01])) }
        packets.append(Packet(unchecked: .logging, 0x07, payload: [0x01]))
        packets.append(readLength)
        return packets
    }

    /// `0B 85`: number of readable entries (reply `0B 85 <n u32>`).
    public static let readLength = Packet(unchecked: .logging, 0x05, isRead: true)

    /// `0B 06 <n u32> <n / progressUpdates u32>`: read out the oldest `entries`, with a progress
    /// notification every `n / progressUpdates` entries (truncated; 0 when `progressUpdates` is
    /// 0). The second field is a step, not a count (§5.2 step 6, P16).
    public static func readout(entries: UInt32, progressUpdates: UInt32) -> Packet {
        let step = progressUpdates == 0 ? 0 : entries / progressUpdates
        return Packet(unchecked: .logging, 0x06, payload: littleEndian(entries) + littleEndian(step))
    }

    /// `0B 0E`: confirms a page after the board's `0B 0D`; the board deletes it and goes on.
    public static let confirmPage = Packet(unchecked: .logging, 0x0E)

    /// `mbl_mw_logging_clear_entries`: `0B 0D 01` on revision 2, then `0B 09 FF FF FF FF`.
    /// Ignored by the board while logging: stop first (P15).
    public static func clear(revision: UInt8) -> [Packet] {
        var packets: [Packet] = []
        if revision == 2 { packets.append(Packet(unchecked: .logging, 0x0D, payload: [0x01])) }
        packets.append(Packet(unchecked: .logging, 0x09, payload: [0xFF, 0xFF, 0xFF, 0xFF]))
        return packets
    }

    /// Trims the log while logging goes on: `0B 01 00`, `0B 09 <count u32>` (drop the oldest
    /// `count` entries: API §Logging Module; the SDK only ever drops all), then the start again
    /// (`0B 0B 0x`, `0B 01 01`). The board ignores a drop while logging (P15), so logging
    /// stops for the moment between the writes; what it misses then is streamed.
    public static func trim(entries count: UInt32, overwriteWhenFull: Bool) -> [Packet] {
        [stop, Packet(unchecked: .logging, 0x09, payload: littleEndian(count))] + start(overwriteWhenFull: overwriteWhenFull)
    }

    /// `0B 03 <id>` for each id, ascending (CPP:logging.cpp:825-836). Entries stay in flash.
    public static func remove(loggerIDs: [UInt8]) -> [Packet] {
        loggerIDs.sorted().map { Packet(unchecked: .logging, 0x03, payload: [$0]) }
    }

    /// `0B 0A`: remove every logger.
    public static let removeAll = Packet(unchecked: .logging, 0x0A)

    /// `0B 82 <id>`: what trigger slot `id` holds (reply `0B 82 mod reg data-id attr`, or the
    /// bare `0B 82` for a free slot).
    public static func readTrigger(slot: UInt8) -> Packet {
        Packet(unchecked: .logging, 0x02, isRead: true, payload: [slot])
    }

    static func littleEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8),
         UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 24)]
    }
}

/// What the logging module's info says about the flash (§2, §9).
public struct LoggingCapabilities: Hashable, Sendable, CustomStringConvertible {
    /// Logging module revision: 2 (page-completed enable), 3 (page flush), others neither.
    public var revision: UInt8
    /// Trigger slots (extra[0]).
    public var triggerSlots: Int
    /// Entries the flash holds, nil when no source states it for this board.
    public var capacityEntries: Int?
    /// Entries per page (the readout pauses after each), when known.
    public var pageEntries: Int?

    /// All fields.
    public init(revision: UInt8, triggerSlots: Int, capacityEntries: Int?, pageEntries: Int?) {
        self.revision = revision
        self.triggerSlots = triggerSlots
        self.capacityEntries = capacityEntries
        self.pageEntries = pageEntries
    }

    /// From the logging module-info reply and the board model. Revision 3 replies carry the
    /// capacity (u32 at extra[1]) and the page size (u16 at extra[5]), per MbientLab's API
    /// document. On revision 2 the model's documented flash decides: the same field in the
    /// SDK's canned MetaMotion R reply reads 11,136, against the ~1 M entries documented; a
    /// real MetaMotion R (firmware 1.4.5) reports 1,048,576 there, so for a model no source
    /// documents (a MetaMotion C) what its board reports is taken, and nil when it reports none.
    public init?(moduleInfo: ModuleInfo, model: BoardModel) {
        guard moduleInfo.module == .logging, let revision = moduleInfo.revision else { return nil }
        self.revision = revision
        let extra = moduleInfo.extra
        triggerSlots = extra.isEmpty ? 0 : Int(extra[0])
        let reported = extra.count >= 5
            ? Int(UInt32(extra[1]) | UInt32(extra[2]) << 8 | UInt32(extra[3]) << 16 | UInt32(extra[4]) << 24) : nil
        if revision >= 3, extra.count >= 7 {
            capacityEntries = reported
            pageEntries = Int(UInt16(extra[5]) | UInt16(extra[6]) << 8)
        } else {
            capacityEntries = Self.documentedCapacity(model) ?? (revision == 2 ? reported.flatMap { $0 > 0 ? $0 : nil } : nil)
            pageEntries = nil
        }
    }

    /// Entries the model's flash holds (8 bytes an entry): MetaMotion S 512 MB (66,781,184 by
    /// its module info, MbientLab's product page "~67M entries"); MetaMotion RL 8 MB (1,048,576,
    /// its product page "~1M entries"); MetaMotion R the same 8 MB (1,048,576: what a real
    /// MetaMotion R's logging module info reports, and MbientLab documents the RL with the
    /// MetaMotion R's datasheet and schematic). No source states it for the MetaMotion C or
    /// older boards: nil (their own report, when they give one, is used instead).
    public static func documentedCapacity(_ model: BoardModel) -> Int? {
        switch model {
        case .metaMotionS: 66_781_184
        case .metaMotionRL, .metaMotionR: 1_048_576
        default: nil
        }
    }

    /// Seconds of logging the flash holds at `entriesPerSecond`, nil when the capacity is unknown.
    public func secondsOfLogging(entriesPerSecond: Double) -> Double? {
        guard let capacityEntries, entriesPerSecond > 0 else { return nil }
        return Double(capacityEntries) / entriesPerSecond
    }

    public var description: String {
        let capacity = capacityEntries.map { "\($0) entries" } ?? "capacity unknown"
        return "logging revision \(revision), \(triggerSlots) trigger slots, \(capacity)"
    }
}
