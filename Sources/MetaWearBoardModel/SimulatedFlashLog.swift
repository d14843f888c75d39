/// The board's flash logger (module 0x0B), written from metawear-logging.md §3–§6 and §11,
/// not from the gateway's encoder.
///
/// Triggers copy a slice of a sensor sample into 4-byte entries stamped with the logger id,
/// the reset UID and the tick; a readout sends the oldest entries two per `0B 07`, paced in
/// simulated time, pausing at every page end until the host confirms it with `0B 0E`.
///
/// Choices where the reference is silent (§12), each made so a gateway cannot rely on luck:
/// * A confirmed page (`0B 0E`) deletes exactly the entries sent since the previous confirm
///   (API's "permanently clears those entries"); entries logged meanwhile stay.
/// * A link loss mid-readout ends the readout; unconfirmed entries stay and the next `0B 06`
///   starts again at the oldest one (§11.11).
/// * Rev 2 pages only handshake when `0B 0D 01` was written; without it nothing is deleted by
///   a readout. Rev 3 always handshakes. Both use 512-entry pages unless told otherwise.
/// * Rev 3 (MetaMotion S) counts and reads only closed pages: the open page waits in RAM until
///   it fills or `0B 10 01` flushes it (§5.1, P13); a flush while logging is ignored.
/// * When full, overwrite mode drops the oldest entry (one at a time, so a wrap can leave half
///   a sample at the head, P9); otherwise new entries are refused and counted.
/// * `0B 09` and `0B 0A` are ignored while logging (SWN, P15). A reset stops logging and any
///   readout, keeps triggers and entries, and commits the open page.
/// * Trigger slots exhausted: no reply (§11.3). Packed-register triggers are allocated but
///   never write (the SDK forbids logging packed signals; the firmware's answer is unknown).
public struct SimulatedFlashLog: Hashable, Sendable {
    /// One allocated trigger: `0B 02 <module> <register> <data-id> <attribute>`.
    public struct Trigger: Hashable, Sendable {
        /// Source module.
        public var module: UInt8
        /// Source register.
        public var register: UInt8
        /// Source data-id (`FF` for none).
        public var dataID: UInt8
        /// `((length - 1) << 5) | offset`.
        public var attribute: UInt8

        /// First payload byte copied.
        public var offset: Int { Int(attribute & 0x1F) }
        /// Bytes copied (1…4).
        public var length: Int { Int((attribute >> 5) & 0x03) + 1 }
    }

    /// One entry as it sits in flash.
    public struct Entry: Hashable, Sendable {
        /// Logger (trigger) id, 5 bits.
        public var loggerID: UInt8
        /// Reset UID at the time it was written, 3 bits.
        public var resetUID: UInt8
        /// Board tick when the sample was taken.
        public var tick: UInt32
        /// The 4 data bytes, zero-padded, little-endian in a word.
        public var data: UInt32
        /// Flash page it was written to.
        var page: Int

        /// The 9 bytes of a readout notification (§5.3).
        public var wireBytes: [UInt8] {
            [loggerID & 0x1F | (resetUID & 0x07) << 5] + littleEndian(tick) + littleEndian(data)
        }
    }

    /// An active readout (`0B 06`).
    struct Readout: Hashable, Sendable {
        /// Entries still to send.
        var remaining: Int
        /// Progress every `delta` entries (0 = once per page).
        var delta: Int
        /// Entries sent in this readout.
        var sent = 0
        /// Waiting for the host's `0B 0E` before the next page.
        var awaitingConfirm = false
        /// Simulated time of the next notification.
        var nextDue: UInt64
    }

    /// Logging module revision (2 = MetaMotion R/RL/C, 3 = MetaMotion S).
    public let revision: UInt8
    /// Trigger slots (module info extra[0]).
    public let slotCount: Int
    /// Entries the flash holds.
    public var capacity: Int
    /// Entries per flash page.
    public var pageEntries: Int
    /// Time between two readout notifications, in nanoseconds (the link's pace for downloads).
    public var readoutInterval: UInt64 = 5_000_000

    /// Triggers by id; nil = free slot.
    public private(set) var triggers: [Trigger?]
    /// `0B 01 01` in effect.
    public private(set) var isLogging = false
    /// `0B 0B 01`: overwrite the oldest entry when full.
    public private(set) var overwritesWhenFull = false
    /// Readout notifications enabled (`0B 07 01`).
    public private(set) var readoutNotify = false
    /// Progress notifications enabled (`0B 08 01`).
    public private(set) var progressNotify = false
    /// Page-completed notifications enabled (`0B 0D 01`; always on for revision 3).
    public private(set) var pageCompletedNotify = false
    /// Entries refused because the flash was full (no overwrite).
    public private(set) var refusedWhenFull = 0
    /// Entries overwritten because the flash was full (overwrite mode).
    public private(set) var overwritten = 0
    /// Every entry ever written, including later deleted ones.
    public private(set) var written = 0

    private var storage: [Entry] = []
    private var head = 0
    /// Entries at the head sent in a readout and not yet confirmed.
    private var unconfirmed = 0
    private var openPage = 0
    private var openPageCount = 0
    private(set) var readout: Readout?

    /// A logger for a logging module-info reply `0B 80 impl rev slots …`.
    public init(moduleInfo: [UInt8], capacity: Int, pageEntries: Int) {
        revision = moduleInfo.count > 3 ? moduleInfo[3] : 0
        slotCount = moduleInfo.count > 4 ? Int(moduleInfo[4]) : 0
        self.capacity = max(0, capacity)
        self.pageEntries = max(1, pageEntries)
        triggers = Array(repeating: nil, count: slotCount)
    }

    /// Entries stored (readable or not).
    public var storedCount: Int { storage.count - head }

    /// Entries the board reports in `0B 85` and can read out now.
    public var readableCount: Int {
        guard revision == 3 else { return storedCount }
        var count = storedCount
        while count > 0, storage[head + count - 1].page >= openPage { count -= 1 }
        return count
    }

    /// The stored entries, oldest first.
    public var entries: ArraySlice<Entry> { storage[head...] }

    /// Whether a readout is under way.
    public var isReadingOut: Bool { readout != nil }

    var pagesHandshake: Bool { revision == 3 || pageCompletedNotify }

    // MARK: Commands

    /// Handles a write to module 0x0B; returns immediate notifications, or a reason to ignore it.
    mutating func write(_ register: UInt8, _ payload: [UInt8], now: UInt64) -> Result<[[UInt8]], Ignored> {
        switch register {
        case 0x01:
            guard let on = flag(payload) else { return .failure("logging enable must be 00 or 01") }
            isLogging = on
        case 0x02:
            guard payload.count == 4 else { return .failure("a trigger needs module, register, data-id and attribute") }
            guard let id = triggers.firstIndex(where: { $0 == nil }) else { return .failure("all \(slotCount) trigger slots are in use") }
            triggers[id] = Trigger(module: payload[0], register: payload[1], dataID: payload[2], attribute: payload[3])
            return .success([[0x0B, 0x02, UInt8(id)]])
        case 0x03:
            guard payload.count == 1 else { return .failure("remove needs one logger id") }
            guard Int(payload[0]) < slotCount else { return .failure("logger id \(payload[0]) is not below \(slotCount)") }
            triggers[Int(payload[0])] = nil
        case 0x0A:
            guard payload.isEmpty else { return .failure("remove-all takes no payload") }
            guard !isLogging else { return .failure("remove-all is ignored while logging") }
            triggers = Array(repeating: nil, count: slotCount)
        case 0x0B:
            guard let on = flag(payload) else { return .failure("circular buffer must be 00 or 01") }
            overwritesWhenFull = on
        case 0x06:
            guard payload.count == 8 else { return .failure("readout needs entry count and progress step (8 bytes)") }
            let requested = Int(word(payload, 0))
            let delta = Int(word(payload, 4))
            unconfirmed = 0
            let count = min(requested, readableCount)
            readout = count == 0 ? nil : Readout(remaining: count, delta: delta, nextDue: now + readoutInterval)
        case 0x07:
            guard let on = flag(payload) else { return .failure("readout notify must be 00 or 01") }
            readoutNotify = on
        case 0x08:
            guard let on = flag(payload) else { return .failure("progress notify must be 00 or 01") }
            progressNotify = on
        case 0x0D:
            guard let on = flag(payload) else { return .failure("page-completed notify must be 00 or 01") }
            pageCompletedNotify = on
        case 0x0E:
            guard payload.isEmpty else { return .failure("page confirm takes no payload") }
            confirmPage(now: now)
        case 0x09:
            guard payload.count == 4 else { return .failure("drop entries needs a 4-byte count") }
            guard !isLogging else { return .failure("drop entries is ignored while logging") }
            drop(min(Int(word(payload, 0)), storedCount))
            unconfirmed = 0
            readout = nil
            return .success(pagesHandshake ? [[0x0B, 0x0D]] : [])
        case 0x10:
            guard revision == 3 else { return .failure("no page flush on logging revision \(revision)") }
            guard payload == [0x01] else { return .failure("page flush must be 10 01") }
            guard !isLogging else { return .failure("page flush is ignored while logging") }
            closeOpenPage()
        default:
            return .failure("no handler for logging register 0x\(hexByte(register))")
        }
        return .success([])
    }

    /// Handles a read of module 0x0B (register without the read bit).
    func read(_ register: UInt8, _ payload: [UInt8]) -> Result<[[UInt8]], Ignored> {
        switch register {
        case 0x02:
            guard payload.count == 1 else { return .failure("trigger read needs one slot id") }
            guard Int(payload[0]) < slotCount, let trigger = triggers[Int(payload[0])] else { return .success([[0x0B, 0x82]]) }
            return .success([[0x0B, 0x82, trigger.module, trigger.register, trigger.dataID, trigger.attribute]])
        case 0x05:
            guard payload.isEmpty else { return .failure("length read takes no payload") }
            return .success([[0x0B, 0x85] + littleEndian(UInt32(clamping: readableCount))])
        default:
            return .failure("no readable logging register 0x\(hexByte(register))")
        }
    }

    /// Ends a readout because the link went away; unconfirmed entries are sent again next time.
    mutating func linkLost() {
        readout = nil
        unconfirmed = 0
    }

    /// A soft reset: logging and readout stop, the open page is committed, triggers and
    /// entries stay.
    mutating func reset() {
        isLogging = false
        readoutNotify = false
        progressNotify = false
        pageCompletedNotify = false
        linkLost()
        closeOpenPage()
    }

    // MARK: Recording

    /// A sensor sample was taken (the board calls this for every sample; tests may feed their own
    /// payloads): every trigger on its source writes one entry, in ascending id.
    public mutating func record(module: UInt8, register: UInt8, payload: [UInt8], tick: UInt32, resetUID: UInt8) {
        guard isLogging else { return }
        for (id, trigger) in triggers.enumerated() {
            guard let trigger, trigger.module == module, trigger.register == register, trigger.dataID == 0xFF else { continue }
            var data: UInt32 = 0
            for i in 0..<trigger.length where trigger.offset + i < payload.count {
                data |= UInt32(payload[trigger.offset + i]) << (8 * UInt32(i))
            }
            append(Entry(loggerID: UInt8(id), resetUID: resetUID, tick: tick, data: data, page: openPage))
        }
    }

    private mutating func append(_ entry: Entry) {
        if storedCount >= capacity {
            guard overwritesWhenFull, storedCount > 0 else { refusedWhenFull += 1; return }
            drop(1)
            overwritten += 1
        }
        storage.append(entry)
        written += 1
        openPageCount += 1
        if openPageCount == pageEntries { closeOpenPage() }
    }

    private mutating func closeOpenPage() {
        guard openPageCount > 0 else { return }
        openPage += 1
        openPageCount = 0
    }

    private mutating func drop(_ count: Int) {
        guard count > 0 else { return }
        head += count
        unconfirmed = max(0, unconfirmed - count)
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 4096, head * 2 > storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }

    // MARK: Readout

    /// The link has no room: a readout under way sends nothing before `now` (simulated ns)
    /// and resumes at its own pace from there, without making up for the wait, as a board
    /// whose radio queue is full holds its next `0B 07` back.
    public mutating func holdReadout(at now: UInt64) {
        guard var active = readout, active.nextDue < now else { return }
        active.nextDue = now
        readout = active
    }

    private mutating func confirmPage(now: UInt64) {
        drop(unconfirmed)
        unconfirmed = 0
        if var active = readout, active.awaitingConfirm {
            active.awaitingConfirm = false
            active.nextDue = max(active.nextDue, now + readoutInterval)
            readout = active
        }
    }

    /// Readout notifications due up to `target`, each with its time: one or two entries per
    /// `0B 07` (one only before a page end or at the end), progress every `delta` entries (or at
    /// each page end for `delta = 0`), `0B 0D` at a page end and then a pause until `0B 0E`,
    /// and at the end `0B 0D` followed by `0B 08 00 00 00 00` (CPP:test/logdata.py:324-325).
    mutating func readoutNotifications(until target: UInt64, stalled: Bool) -> [(UInt64, [UInt8])] {
        var out: [(UInt64, [UInt8])] = []
        while !stalled, var active = readout, !active.awaitingConfirm, active.nextDue <= target {
            let time = active.nextDue
            active.nextDue += readoutInterval
            var packet: [UInt8] = [0x0B, 0x07]
            var endsPage = false
            let sentBefore = active.sent
            while packet.count < 20, active.remaining > 0, !endsPage, head + unconfirmed < storage.count {
                let index = head + unconfirmed
                let entry = storage[index]
                packet += entry.wireBytes
                unconfirmed += 1
                active.remaining -= 1
                active.sent += 1
                endsPage = index + 1 < storage.count ? storage[index + 1].page != entry.page : entry.page < openPage
            }
            if head + unconfirmed >= storage.count { active.remaining = 0 }
            if packet.count > 2, readoutNotify { out.append((time, packet)) }
            if active.remaining == 0 {
                if pagesHandshake { out.append((time, [0x0B, 0x0D])) } else { unconfirmed = 0 }
                if progressNotify { out.append((time, [0x0B, 0x08, 0, 0, 0, 0])) }
                readout = nil
                return out
            }
            let progressDue = active.delta > 0 ? active.sent / active.delta > sentBefore / active.delta : endsPage
            if progressNotify, progressDue {
                out.append((time, [0x0B, 0x08] + littleEndian(UInt32(active.remaining))))
            }
            if endsPage, pagesHandshake {
                out.append((time, [0x0B, 0x0D]))
                active.awaitingConfirm = true
            }
            readout = active
        }
        return out
    }

    // MARK: Bytes

    /// Why a write or read was not acted on.
    struct Ignored: Error, Hashable, Sendable, ExpressibleByStringInterpolation {
        var reason: String
        init(stringLiteral value: String) { reason = value }
        init(_ reason: String) { self.reason = reason }
    }

    private func flag(_ payload: [UInt8]) -> Bool? {
        payload.count == 1 && payload[0] <= 1 ? payload[0] == 1 : nil
    }

    private func word(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }
}

func littleEndian(_ value: UInt32) -> [UInt8] {
    [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8),
     UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 24)]
}

func hexByte(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}
