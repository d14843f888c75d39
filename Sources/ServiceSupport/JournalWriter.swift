#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Logging
import Synchronization

/// Where log entries go.
public enum JournalOutput: Sendable, Equatable {
    /// journald's native datagram socket (structured fields).
    case native(socketPath: String)
    /// Plain lines with `<N>` priority prefixes on a file descriptor (2 = stderr); under
    /// systemd, journald strips the prefix and sets PRIORITY (SyslogLevelPrefix=yes).
    case prefixedLines(fileDescriptor: Int32)

    /// journald's socket.
    public static let defaultSocketPath = "/run/systemd/journal/socket"

    /// Picks the output the way a daemon should: the native socket when it exists and stderr
    /// is the journal anyway (`$JOURNAL_STREAM` names stderr's device and inode) or leads
    /// nowhere; otherwise stderr with `<N>` prefixes, so a person running the daemon in a
    /// terminal or piping it to a file sees the lines where they expect them.
    public static func automatic(
        environment: [String: String] = ProcessEnvironment.current,
        socketPath: String = defaultSocketPath,
        stderrDescriptor: Int32 = 2
    ) -> JournalOutput {
        guard isSocket(socketPath) else { return .prefixedLines(fileDescriptor: stderrDescriptor) }
        if stderrIsJournal(environment: environment, descriptor: stderrDescriptor) || !isOpen(stderrDescriptor) {
            return .native(socketPath: socketPath)
        }
        return .prefixedLines(fileDescriptor: stderrDescriptor)
    }

    /// Whether `$JOURNAL_STREAM` (`DEV:INODE`) matches the descriptor.
    public static func stderrIsJournal(environment: [String: String], descriptor: Int32 = 2) -> Bool {
        guard let value = environment["JOURNAL_STREAM"] else { return false }
        let parts = value.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else { return false }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }

    static func isSocket(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
    }

    static func isOpen(_ descriptor: Int32) -> Bool {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return false }
        // /dev/null counts as nowhere.
        return !((info.st_mode & S_IFMT) == S_IFCHR && major(info.st_rdev) == 1 && minor(info.st_rdev) == 3)
    }

    private static func major(_ device: dev_t) -> UInt64 { (UInt64(device) >> 8) & 0xfff | (UInt64(device) >> 32) & ~0xfff }
    private static func minor(_ device: dev_t) -> UInt64 { UInt64(device) & 0xff | (UInt64(device) >> 12) & ~0xff }
}

/// The shared sink behind every `JournaldLogHandler` copy: formats entries, applies the
/// repeat limiter, and writes to the journal socket or to stderr. Thread-safe.
public final class JournalWriter: Sendable {
    /// The output chosen at creation.
    public let output: JournalOutput
    /// `SYSLOG_IDENTIFIER` (and the stderr tag): normally the executable name, `mwgated`.
    public let identifier: String
    /// Levels at or above this are rate-limited; below it every line passes.
    public let limitedFrom: Logger.Level

    private let sender: UnixDatagramSender?
    private let address: UnixAddress?
    private let limiter: Mutex<RepeatLimiter>
    private let now: @Sendable () -> ContinuousClock.Instant

    /// A writer. `limiter` throttles repeated warnings and errors (same source, level and
    /// text); `now` is injectable for tests.
    public init(
        identifier: String,
        output: JournalOutput = .automatic(),
        limiter: RepeatLimiter = RepeatLimiter(),
        limitedFrom: Logger.Level = .warning,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.identifier = identifier
        self.limitedFrom = limitedFrom
        self.limiter = Mutex(limiter)
        self.now = now
        var resolved = output
        if case .native(let path) = output, let address = UnixAddress(path), let sender = try? UnixDatagramSender() {
            // Big entries go inline when the kernel allows; beyond that, through a memfd.
            sender.raiseSendBuffer(to: 8 << 20)
            self.sender = sender
            self.address = address
        } else {
            if case .native = output { resolved = .prefixedLines(fileDescriptor: 2) }
            self.sender = nil
            self.address = nil
        }
        self.output = resolved
    }

    /// journald's numeric priority for a swift-log level.
    public static func priority(_ level: Logger.Level) -> Int {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }

    /// Fields the handler sets itself; metadata keys that map onto one of these get a `META_`
    /// prefix instead of overriding it.
    static let reservedFields: Set<String> = [
        "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "LOGGER_SOURCE",
        "SYSLOG_FACILITY", "SYSLOG_PID", "SYSLOG_TIMESTAMP", "SUPPRESSED",
    ]

    /// Builds the native entry for one log call (pure apart from nothing; exposed for tests).
    public func entry(
        level: Logger.Level, message: String, metadata: Logger.Metadata, source: String,
        file: String, function: String, line: UInt
    ) -> JournalEntry {
        var entry = JournalEntry()
        entry.append("MESSAGE", message)
        entry.append("PRIORITY", String(Self.priority(level)))
        entry.append("SYSLOG_IDENTIFIER", identifier)
        entry.append("CODE_FILE", file)
        entry.append("CODE_LINE", String(line))
        entry.append("CODE_FUNC", function)
        if !source.isEmpty { entry.append("LOGGER_SOURCE", source) }
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) {
            guard var name = JournalFieldName.sanitize(key) else { continue }
            if name == "MESSAGE_ID" {
                // Only a well-formed ID becomes MESSAGE_ID; anything else would be dropped or
                // mislead `journalctl MESSAGE_ID=`.
                let text = "\(value)".lowercased().replacingDashes()
                if MessageID(text, name: "") != nil {
                    entry.append("MESSAGE_ID", text)
                    continue
                }
                name = "META_MESSAGE_ID"
            } else if Self.reservedFields.contains(name) {
                name = String(("META_" + name).prefix(JournalFieldName.maximumLength))
            }
            entry.append(name, Self.render(value))
        }
        return entry
    }

    /// Writes one log call (after rate limiting).
    public func write(
        level: Logger.Level, message: String, metadata: Logger.Metadata, source: String,
        file: String, function: String, line: UInt
    ) {
        var summaries: [RepeatLimiter.Summary] = []
        if level >= limitedFrom {
            let key = "\(level)|\(source)|\(message)"
            let decision = limiter.withLock { $0.admit(key: key, sample: message, now: now()) }
            summaries = decision.summaries
            for summary in summaries { emitSummary(summary, file: file, function: function, line: line) }
            guard decision.emit else { return }
        }
        emit(entry(level: level, message: message, metadata: metadata, source: source, file: file, function: function, line: line))
    }

    /// Reports limiter windows that ended with suppressed lines; call from a periodic tick
    /// so that a burst which stopped is still accounted for.
    public func flushSuppressed() {
        let summaries = limiter.withLock { $0.expire(now: now()) }
        for summary in summaries { emitSummary(summary, file: #fileID, function: #function, line: #line) }
    }

    private func emitSummary(_ summary: RepeatLimiter.Summary, file: String, function: String, line: UInt) {
        var entry = entry(
            level: .warning, message: "suppressed \(summary.suppressed) repeated messages like: \(summary.sample)",
            metadata: [:], source: "", file: file, function: function, line: line)
        entry.append("SUPPRESSED", String(summary.suppressed))
        emit(entry)
    }

    private func emit(_ entry: JournalEntry) {
        if let sender, let address {
            let payload = entry.encoded
            switch sender.send(payload, to: address) {
            case nil: return
            case EMSGSIZE?, ENOBUFS?:
                if sendThroughMemfd(payload, sender: sender, address: address) { return }
            default: break
            }
            // journald gone or refusing: the line must still go somewhere.
        }
        writePrefixed(entry, descriptor: { if case .prefixedLines(let fd) = output { fd } else { 2 } }())
    }

    /// journald's large-entry path: the payload in a sealed memfd, sent as the only content
    /// of an empty datagram via SCM_RIGHTS.
    private func sendThroughMemfd(_ payload: [UInt8], sender: UnixDatagramSender, address: UnixAddress) -> Bool {
        guard let create = Self.memfdCreate else { return false }
        let fd = create("mwgate-journal", 0x0001 | 0x0002)  // MFD_CLOEXEC | MFD_ALLOW_SEALING
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var written = 0
        while written < payload.count {
            let result = payload.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, payload.count - written) }
            if result < 0 {
                if errno == EINTR { continue }
                return false
            }
            written += result
        }
        let fAddSeals: Int32 = 1024 + 9
        let allSeals: Int32 = 0x1 | 0x2 | 0x4 | 0x8  // SEAL, SHRINK, GROW, WRITE
        guard fcntl(fd, fAddSeals, allSeals) == 0 else { return false }
        return sender.send(descriptor: fd, to: address) == nil
    }

    /// glibc's memfd_create, looked up at run time because Glibc's Swift module hides it
    /// behind _GNU_SOURCE.
    private static let memfdCreate: (@convention(c) (UnsafePointer<CChar>, UInt32) -> Int32)? = {
        guard let handle = dlopen(nil, RTLD_NOW), let symbol = dlsym(handle, "memfd_create") else { return nil }
        return unsafeBitCast(symbol, to: (@convention(c) (UnsafePointer<CChar>, UInt32) -> Int32).self)
    }()

    private func writePrefixed(_ entry: JournalEntry, descriptor: Int32) {
        let priority = entry["PRIORITY"] ?? "6"
        var extras: [String] = []
        for field in entry.fields where !Self.stderrHiddenFields.contains(field.name) {
            extras.append("\(field.name)=\(String(decoding: field.value, as: UTF8.self))")
        }
        let message = entry["MESSAGE"] ?? ""
        let lines = message.split(separator: "\n", omittingEmptySubsequences: false)
        var text = ""
        for (index, part) in lines.enumerated() {
            text += "<\(priority)>\(part)"
            if index == lines.count - 1, !extras.isEmpty { text += " " + extras.joined(separator: " ") }
            text += "\n"
        }
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let result = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress! + offset, bytes.count - offset) }
            if result < 0 {
                if errno == EINTR { continue }
                return
            }
            offset += result
        }
    }

    private static let stderrHiddenFields: Set<String> = [
        "MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "CODE_FILE", "CODE_LINE", "CODE_FUNC", "LOGGER_SOURCE",
    ]

    static func render(_ value: Logger.MetadataValue) -> String {
        switch value {
        case .string(let text): text
        case .stringConvertible(let convertible): convertible.description
        case .array(let items): "[" + items.map(render).joined(separator: ", ") + "]"
        case .dictionary(let dictionary):
            "{" + dictionary.sorted { $0.key < $1.key }.map { "\($0.key)=\(render($0.value))" }.joined(separator: ", ") + "}"
        }
    }
}

extension String {
    fileprivate func replacingDashes() -> String { String(filter { $0 != "-" }) }
}
