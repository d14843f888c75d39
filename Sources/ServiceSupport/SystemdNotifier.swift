#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Tells systemd about the daemon's state over `$NOTIFY_SOCKET` (the sd_notify protocol:
/// one datagram of newline-separated `KEY=VALUE` lines). When the variable is unset (not
/// started by systemd, or `Type=simple`), every call is a silent no-op, so the daemon can
/// call it unconditionally.
///
/// ```swift
/// let notifier = SystemdNotifier()
/// notifier.ready(status: "2 boards, waiting for GPS fix")
/// if let interval = notifier.watchdogInterval { /* ping every interval / 2 on real progress */ }
/// ```
public final class SystemdNotifier: Sendable {
    private let address: UnixAddress?
    private let sender: UnixDatagramSender?
    /// The watchdog timeout systemd expects pings within (from `WATCHDOG_USEC`), or nil when
    /// the watchdog is off or meant for another process (`WATCHDOG_PID` names a different pid).
    /// Ping at least every half of it, and only on real progress.
    public let watchdogInterval: Duration?
    /// The socket in use, as systemd spelled it (`/run/systemd/notify` or `@name`), or nil.
    public let socketName: String?

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment`
    /// (the process environment by default).
    public init(environment: [String: String] = ProcessEnvironment.current) {
        let name = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        // A send never waits: the callers run on the cooperative pool, and a receiver that
        // does not read (a busy PID 1, a test harness that stopped reading after READY=1) left
        // every pool thread blocked in sendto once its queue (10 datagrams) was full, and with
        // them the whole daemon (issue 21: mwctl session stop unanswered for 300 s). What does
        // not fit is dropped; the next status or watchdog ping follows within seconds.
        if let name, let address = UnixAddress(name), let sender = try? UnixDatagramSender(waits: false) {
            self.address = address
            self.sender = sender
            self.socketName = name
        } else {
            self.address = nil
            self.sender = nil
            self.socketName = nil
        }
        watchdogInterval = Self.watchdog(environment: environment, pid: getpid())
    }

    static func watchdog(environment: [String: String], pid: pid_t) -> Duration? {
        guard let text = environment["WATCHDOG_USEC"], let micros = UInt64(text), micros > 0 else { return nil }
        if let pidText = environment["WATCHDOG_PID"], !pidText.isEmpty {
            guard let target = Int32(pidText), target == pid else { return nil }
        }
        return .microseconds(Int64(clamping: micros))
    }

    /// Whether a notify socket is configured (i.e. whether calls do anything).
    public var isEnabled: Bool { address != nil }

    /// Start-up finished; a `Type=notify` unit only counts as started after this.
    public func ready(status: String? = nil) {
        send(["READY=1"] + (status.map { ["STATUS=\(Self.oneLine($0))"] } ?? []))
    }

    /// A one-line status shown by `systemctl status`.
    public func status(_ text: String) { send(["STATUS=\(Self.oneLine(text))"]) }

    /// Keeps the watchdog happy. Call it from the place that proves the daemon is working.
    public func watchdog() { send(["WATCHDOG=1"]) }

    /// Forces a watchdog failure (systemd then treats the service as hung).
    public func watchdogTrigger() { send(["WATCHDOG=trigger"]) }

    /// The daemon has begun shutting down.
    public func stopping(status: String? = nil) {
        send(["STOPPING=1"] + (status.map { ["STATUS=\(Self.oneLine($0))"] } ?? []))
    }

    /// The daemon is reloading its configuration; send `ready()` when done. Carries
    /// `MONOTONIC_USEC` (CLOCK_MONOTONIC now), which systemd ≥ 253 requires for reloads.
    public func reloading(status: String? = nil) {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        let micros = UInt64(time.tv_sec) * 1_000_000 + UInt64(time.tv_nsec) / 1_000
        send(["RELOADING=1", "MONOTONIC_USEC=\(micros)"] + (status.map { ["STATUS=\(Self.oneLine($0))"] } ?? []))
    }

    /// Asks for more start-up/shut-down time, e.g. while waiting for the Bluetooth adapter.
    public func extendTimeout(by duration: Duration) {
        let micros = duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
        send(["EXTEND_TIMEOUT_USEC=\(max(0, micros))"])
    }

    /// Sends raw `KEY=VALUE` assignments as one datagram. Returns false when the notifier is
    /// disabled or the send failed (systemd gone); callers normally ignore it.
    @discardableResult
    public func send(_ assignments: [String]) -> Bool {
        guard let address, let sender, !assignments.isEmpty else { return false }
        let payload = Array(assignments.joined(separator: "\n").utf8)
        return sender.send(payload, to: address) == nil
    }

    private static func oneLine(_ text: String) -> String {
        String(text.map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}

/// The process environment as a dictionary (a snapshot taken at the call).
public enum ProcessEnvironment {
    /// A fresh snapshot of `environ`.
    public static var current: [String: String] {
        var result: [String: String] = [:]
        var pointer = environ
        while let entry = pointer.pointee {
            let text = String(cString: entry)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            pointer += 1
        }
        return result
    }
}
