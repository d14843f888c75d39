/// One log entry as the readout delivers it (metawear-logging.md §5.3).
public struct LogEntry: Hashable, Sendable, CustomStringConvertible {
    /// Logger (trigger) id, bits 0-4 of the first byte.
    public var loggerID: UInt8
    /// Reset UID, bits 5-7: which boot of the board wrote it.
    public var resetUID: UInt8
    /// Board tick when the sample was taken (48/32768 s per tick since that boot).
    public var tick: UInt32
    /// The 4 logged bytes as a little-endian word (zero-padded).
    public var data: UInt32

    /// All fields.
    public init(loggerID: UInt8, resetUID: UInt8, tick: UInt32, data: UInt32) {
        self.loggerID = loggerID
        self.resetUID = resetUID
        self.tick = tick
        self.data = data
    }

    /// Parses the 9 bytes at `offset`.
    init(_ b: [UInt8], at offset: Int) {
        loggerID = b[offset] & 0x1F
        resetUID = b[offset] >> 5
        tick = Self.word(b, offset + 1)
        data = Self.word(b, offset + 5)
    }

    static func word(_ b: [UInt8], _ at: Int) -> UInt32 {
        UInt32(b[at]) | UInt32(b[at + 1]) << 8 | UInt32(b[at + 2]) << 16 | UInt32(b[at + 3]) << 24
    }

    public var description: String {
        "logger \(loggerID) uid \(resetUID) tick \(tick) data 0x\(Hex.string(LoggingCommands.littleEndian(data).reversed()).replacingSpaces())"
    }
}

/// A notification of the logging module.
public enum LogNotification: Hashable, Sendable {
    /// `0B 07`: one or two entries.
    case entries([LogEntry])
    /// `0B 08 <left u32>`: entries still to come; 0 ends the readout.
    case progress(entriesLeft: UInt32)
    /// `0B 0D`: a page was sent; answer `0B 0E` (LoggingCommands.confirmPage).
    case pageCompleted
    /// `0B 85 <n u32>`: entries readable now.
    case length(UInt32)
    /// `0B 02 <id>`: a trigger was allocated (replies come in request order).
    case triggerAllocated(id: UInt8)
    /// `0B 82 mod reg data-id attr`: what a slot holds; nil for a free slot (bare `0B 82`).
    case trigger(LogTrigger?)
}

/// A trigger as the board reports it in `0B 82`.
public struct LogTrigger: Hashable, Sendable {
    /// Source module.
    public var module: ModuleID
    /// Source register.
    public var register: UInt8
    /// Source data-id (`FF` = none).
    public var dataID: UInt8
    /// First byte of the sample copied.
    public var offset: Int
    /// Bytes copied, 1…4.
    public var length: Int

    /// All fields.
    public init(module: ModuleID, register: UInt8, dataID: UInt8, offset: Int, length: Int) {
        self.module = module
        self.register = register
        self.dataID = dataID
        self.offset = offset
        self.length = length
    }
}

/// Why logging bytes could not be decoded.
public struct LogDecodingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The bytes as received.
    public var bytes: [UInt8]
    /// What is wrong with them.
    public var reason: String

    public var description: String { "logging notification [\(Hex.string(bytes))]: \(reason)" }
}

/// Decodes the logging module's notifications. Pure; never traps.
public enum LogNotificationDecoder {
    /// Decodes one notification; nil when it is not a logging notification (module ≠ 0x0B or a
    /// register this decoder does not own, e.g. the clock `0B 84`).
    public static func decode(_ b: [UInt8]) -> Result<LogNotification, LogDecodingError>? {
        guard b.count >= 2, b[0] == 0x0B else { return nil }
        func fail(_ reason: String) -> Result<LogNotification, LogDecodingError> { .failure(LogDecodingError(bytes: b, reason: reason)) }
        switch b[1] {
        case 0x07:
            // CPP reads the second entry only when the notification is exactly 20 bytes.
            switch b.count {
            case 11: return .success(.entries([LogEntry(b, at: 2)]))
            case 20: return .success(.entries([LogEntry(b, at: 2), LogEntry(b, at: 11)]))
            default: return fail("a readout notification is 11 or 20 bytes, got \(b.count)")
            }
        case 0x08:
            guard b.count == 6 else { return fail("progress is 6 bytes, got \(b.count)") }
            return .success(.progress(entriesLeft: LogEntry.word(b, 2)))
        case 0x0D:
            guard b.count == 2 else { return fail("page completed is 2 bytes, got \(b.count)") }
            return .success(.pageCompleted)
        case 0x85:
            guard b.count == 6 else { return fail("length reply is 6 bytes, got \(b.count)") }
            return .success(.length(LogEntry.word(b, 2)))
        case 0x02:
            guard b.count == 3 else { return fail("trigger reply is 3 bytes, got \(b.count)") }
            return .success(.triggerAllocated(id: b[2]))
        case 0x82:
            if b.count == 2 { return .success(.trigger(nil)) }
            guard b.count == 6 else { return fail("slot reply is 2 or 6 bytes, got \(b.count)") }
            let attribute = b[5]
            return .success(.trigger(LogTrigger(module: ModuleID(rawValue: b[2]), register: b[3], dataID: b[4],
                                                offset: Int(attribute & 0x1F), length: Int((attribute >> 5) & 0x03) + 1)))
        default:
            return nil
        }
    }
}

extension String {
    fileprivate func replacingSpaces() -> String { String(filter { $0 != " " }) }
}
