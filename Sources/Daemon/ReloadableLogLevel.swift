import Logging
import ServiceSupport
import Synchronization

/// The daemon's log level, shared by every log handler so a reload (SIGHUP) changes it for
/// loggers that already exist.
public final class ReloadableLogLevel: Sendable {
    private let level: Mutex<Logger.Level>

    public init(_ level: Logger.Level) { self.level = Mutex(level) }

    /// The level in force.
    public var current: Logger.Level {
        get { level.withLock { $0 } }
        set { level.withLock { $0 = newValue } }
    }
}

/// A `JournaldLogHandler` whose level follows a ``ReloadableLogLevel``: the shared level
/// always wins over a level set on a logger copy, so an operator's reload is never shadowed
/// by a copy taken before it.
public struct ReloadableLogHandler: LogHandler {
    private var inner: JournaldLogHandler
    private let shared: ReloadableLogLevel

    /// A handler writing through `writer` at the level `shared` holds.
    public init(label: String, writer: JournalWriter, level shared: ReloadableLogLevel) {
        inner = JournaldLogHandler(label: label, writer: writer, logLevel: .trace)
        self.shared = shared
    }

    public var logLevel: Logger.Level {
        get { shared.current }
        // Loggers copied into libraries may set a level; the daemon's level is the operator's.
        set {}
    }

    public var metadata: Logger.Metadata {
        get { inner.metadata }
        set { inner.metadata = newValue }
    }

    public var metadataProvider: Logger.MetadataProvider? {
        get { inner.metadataProvider }
        set { inner.metadataProvider = newValue }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { inner[metadataKey: key] }
        set { inner[metadataKey: key] = newValue }
    }

    public func log(event: LogEvent) {
        guard event.level >= shared.current else { return }
        inner.log(event: event)
    }
}
