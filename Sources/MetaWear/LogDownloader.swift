/// One flash-log download as a pure state machine: notifications in, commands to write and
/// samples out (metawear-logging.md §5, §8 (b)).
///
/// It sends the SDK's sequence for the board's logging revision, turns entries into samples per
/// sensor (pairing by adjacency and tick, P9), drops what a readout sends again after a link
/// loss (§7.4), and reports progress with an estimate of the time left. Pages are confirmed at
/// once, or, with `confirmsPagesItself = false`, only when the caller has stored the samples
/// (`confirmPage()`): a confirmed page is deleted on the board, so nothing is cleared before it
/// is safe. Time comes in with each notification; nothing here waits or reads a clock.
public struct LogDownloader: Sendable {
    /// Where the download stands.
    public enum State: Hashable, Sendable {
        /// Not started, or the link dropped: `begin()` (again) after connecting.
        case idle
        /// Asked for the length (`0B 85`).
        case awaitingLength
        /// Entries are arriving.
        case reading
        /// The board finished a page and waits for `0B 0E`; the caller stores first.
        case awaitingConfirm
        /// Everything readable was delivered (and confirmed).
        case finished
    }

    /// What one notification produced.
    public struct Step: Sendable {
        /// Commands to write, in order.
        public var writes: [Packet] = []
        /// New samples, per sensor, in the order the board logged them.
        public var samples: [(sensor: MotionSensor, sample: LoggedSample)] = []
        /// A page is complete: store its samples, then `confirmPage()` (only when the caller
        /// confirms pages itself).
        public var pageReady = false
        /// The readout was asked for again (``resume()``): samples returned since the last page
        /// confirm are void, they come again.
        public var resumed = false
    }

    /// How far the download is.
    public struct Progress: Hashable, Sendable {
        /// Entries readable when the download started (`0B 85`).
        public var total: UInt32
        /// Entries still to come (`0B 08`, or counted from the entries received).
        public var left: UInt32
        /// Entries per second so far, once measurable.
        public var entriesPerSecond: Double?
        /// Estimated seconds to the end at that pace.
        public var secondsLeft: Double? {
            guard let entriesPerSecond, entriesPerSecond > 0 else { return nil }
            return Double(left) / entriesPerSecond
        }
    }

    /// Logging module revision (decides `0B 0D 01`).
    public let revision: UInt8
    /// Progress notifications asked for per readout.
    public let progressUpdates: UInt32
    /// Whether `0B 0E` is sent as soon as a page completes.
    public let confirmsPagesItself: Bool
    /// Entries at the log's end this readout leaves unread: it reads the oldest entries up to
    /// that many (rounded down to whole pairs, a three-axis sample's two entries) before the
    /// end the length read reports (0: all of them).
    public let leavingNewest: UInt32
    /// Current state.
    public private(set) var state = State.idle
    /// Progress of the current readout.
    public private(set) var progress = Progress(total: 0, left: 0)
    /// Entries of loggers this download does not know (another client's).
    public private(set) var unknownEntries = 0
    /// Notifications that could not be decoded, with the reason.
    public private(set) var malformed: [LogDecodingError] = []

    private var assemblers: [MotionSensor: LogSampleAssembler]
    private var deduplicator = ReadoutDeduplicator()
    /// The assemblers and the deduplicator as they stood when the board last deleted what it
    /// sent (the last page confirm, or the start): where a resumed readout goes on from.
    private var confirmed: (assemblers: [MotionSensor: LogSampleAssembler], deduplicator: ReadoutDeduplicator)
    private var received: UInt32 = 0
    private var firstEntryAt: Int64?
    private var lastEntryAt: Int64?
    private var lastPageConfirmed = true

    /// A download for the sensors' loggers on a board with logging revision `revision`.
    /// With `leavingNewest`, the newest entries stay unread (see ``leavingNewest``).
    public init(revision: UInt8, loggers: [MotionSensor: LoggerIDs], progressUpdates: UInt32 = 20,
                confirmsPagesItself: Bool = true, leavingNewest: UInt32 = 0) {
        self.revision = revision
        self.progressUpdates = progressUpdates
        self.confirmsPagesItself = confirmsPagesItself
        self.leavingNewest = leavingNewest
        assemblers = loggers.mapValues { LogSampleAssembler(xyLogger: $0.xy, zLogger: $0.z) }
        confirmed = (assemblers, deduplicator)
    }

    /// Half samples dropped because their other half never came, all sensors.
    public var orphanedEntries: Int { assemblers.values.reduce(0) { $0 + $1.orphanedEntries } }
    /// Entries dropped as sent twice (a readout restarted after a link loss).
    public var duplicatesDropped: Int { deduplicator.duplicatesDropped }

    /// Starts (or, after a link loss, restarts) the download: the preamble and the length read.
    /// On revision 3 the open page must have been flushed after logging stopped (P13).
    public mutating func begin() -> [Packet] {
        state = .awaitingLength
        lastPageConfirmed = true
        pageIncomplete = false
        return LoggingCommands.downloadPreamble(revision: revision)
    }

    /// The link dropped: the board forgets the readout; whatever it resends is dropped.
    public mutating func linkLost() {
        for sensor in assemblers.keys { assemblers[sensor]?.discardHeld() }
        deduplicator.linkLost()
        if state != .finished { state = .idle }
    }

    /// Readouts asked for again because they stopped delivering or lost entries (``resume()``).
    public private(set) var resumes = 0
    /// Entries the board's progress showed sent and not received. The page under way is then
    /// not reported: at its end the readout is asked for again and the board sends the page
    /// once more (entries of a page confirmed before the loss showed are gone).
    public private(set) var missedEntries = 0
    /// Notifications of the page under way were lost: its end asks for the readout again.
    private var pageIncomplete = false
    /// Entries of this readout already counted in ``missedEntries``.
    private var readoutDeficit: UInt32 = 0

    /// Notifications were lost on the way (a full queue between the radio and this download):
    /// the page under way is read again from its start when it ends, not reported. While the
    /// board waits for a confirm it sends nothing a loss could have taken.
    public mutating func notificationsLost() {
        if state == .reading { pageIncomplete = true }
    }

    /// The readout stopped delivering before its end (metawear-logging.md P6: a lost page end
    /// leaves the board waiting for a confirm that never comes; a lost entry must not be
    /// confirmed away): the download goes back to what the board deleted, the last confirmed
    /// page, and asks again (length, then readout). The board sends its unconfirmed entries
    /// once more (§11.11) and each is taken once. Samples returned since the last page confirm
    /// are void: the caller drops them, they come again. Nothing while the board waits for the
    /// caller's confirm (``State/awaitingConfirm``), before ``begin()`` or once finished.
    public mutating func resume() -> [Packet] {
        guard state == .reading || state == .awaitingLength else { return [] }
        assemblers = confirmed.assemblers
        deduplicator = confirmed.deduplicator
        resumes += 1
        return begin()
    }

    /// Whether the board waits for (or, at the end, may still take) a page confirm.
    public var awaitsConfirm: Bool { state == .awaitingConfirm || (state == .finished && !lastPageConfirmed) }

    /// The samples of the completed page are stored: `0B 0E` lets the board delete the page
    /// and go on.
    public mutating func confirmPage() -> [Packet] {
        guard awaitsConfirm else { return [] }
        lastPageConfirmed = true
        if state == .awaitingConfirm { state = .reading } else { deduplicator.readoutCompleted() }
        confirmed = (assemblers, deduplicator)
        return [LoggingCommands.confirmPage]
    }

    /// Handles a notification received at `nanoseconds` (any monotonic clock); anything not
    /// from the logging module gives an empty step.
    public mutating func receive(_ bytes: [UInt8], at nanoseconds: Int64) -> Step {
        var step = Step()
        guard let decoded = LogNotificationDecoder.decode(bytes) else { return step }
        switch decoded {
        case .failure(let error):
            malformed.append(error)
        case .success(.length(let held)):
            guard state == .awaitingLength else { break }
            let n = held > leavingNewest ? (held - leavingNewest) & ~1 : 0
            progress = Progress(total: n, left: n)
            received = 0
            readoutDeficit = 0
            firstEntryAt = nil
            if n == 0 { finish(&step) } else {
                state = .reading
                step.writes = [LoggingCommands.readout(entries: n, progressUpdates: progressUpdates)]
            }
        case .success(.entries(let entries)):
            guard state == .reading else { break }
            for entry in entries { accept(entry, into: &step) }
            received += UInt32(entries.count)
            if firstEntryAt == nil { firstEntryAt = nanoseconds }
            lastEntryAt = nanoseconds
            progress.left = progress.total > received ? progress.total - received : 0
            measureRate()
        case .success(.progress(let left)):
            guard state == .reading || state == .awaitingConfirm else { break }
            // The board counts what it sent, in order before this: fewer left than we count
            // means entries were lost on the way; they are still on the board unless a page
            // holding them was confirmed since. The readout goes on to the page's end, where
            // the board waits and nothing of this readout can follow the request for it again
            // (asked mid-page, entries the board sent before taking the new request would pass
            // for the new readout's); at the readout's end it is asked for again at once.
            if state == .reading, progress.total >= received, left < progress.total - received {
                let deficit = progress.total - received - left
                if deficit > readoutDeficit {
                    missedEntries += Int(deficit - readoutDeficit)
                    readoutDeficit = deficit
                }
                pageIncomplete = true
                if left == 0 {
                    step.writes = resume()
                    step.resumed = true
                }
                break
            }
            progress.left = left
            if left == 0 { finish(&step) }
        case .success(.pageCompleted):
            guard state == .reading else { break }
            if pageIncomplete {
                step.writes = resume()
                step.resumed = true
                break
            }
            lastPageConfirmed = false
            if confirmsPagesItself {
                lastPageConfirmed = true
                confirmed = (assemblers, deduplicator)
                step.writes.append(LoggingCommands.confirmPage)
            } else {
                state = .awaitingConfirm
                step.pageReady = true
            }
        case .success(.triggerAllocated), .success(.trigger):
            break
        }
        return step
    }

    private mutating func accept(_ entry: LogEntry, into step: inout Step) {
        guard let sensor = assemblers.first(where: { $0.value.owns(entry) })?.key else { unknownEntries += 1; return }
        guard deduplicator.admit(entry) else { return }
        if let sample = assemblers[sensor]?.add(entry) { step.samples.append((sensor, sample)) }
    }

    private mutating func finish(_: inout Step) {
        for sensor in assemblers.keys { assemblers[sensor]?.finish() }
        // The board sends 0B 0D and then 0B 08 00: the last page may still await its confirm.
        state = .finished
        progress.left = 0
        if lastPageConfirmed { deduplicator.readoutCompleted() }
    }

    private mutating func measureRate() {
        guard let first = firstEntryAt, let last = lastEntryAt, last - first >= 500_000_000, received > 2 else { return }
        progress.entriesPerSecond = Double(received - 2) / (Double(last - first) / 1e9)
    }
}
