import Logging

/// A swift-log `LogHandler` for journald: structured entries over the native protocol
/// (MESSAGE, PRIORITY, SYSLOG_IDENTIFIER, CODE_FILE/LINE/FUNC, metadata as UPPERCASE fields,
/// MESSAGE_ID from `MessageID`), falling back to `<N>`-prefixed stderr lines when there is no
/// journal. Repeated warnings and errors are rate-limited by the shared `JournalWriter`.
///
/// ```swift
/// let writer = JournalWriter(identifier: "mwgated")
/// LoggingSystem.bootstrap { label in JournaldLogHandler(label: label, writer: writer) }
/// ```
public struct JournaldLogHandler: LogHandler {
    /// The logger's label (kept for swift-log; the journal identifier is the writer's).
    public let label: String
    /// The sink shared by all handlers of the process.
    public let writer: JournalWriter
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    /// A handler writing through `writer`.
    public init(
        label: String, writer: JournalWriter, logLevel: Logger.Level = .info,
        metadataProvider: Logger.MetadataProvider? = nil
    ) {
        self.label = label
        self.writer = writer
        self.logLevel = logLevel
        self.metadataProvider = metadataProvider
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        if let error = event.error { merged["error"] = .string("\(error)") }
        writer.write(
            level: event.level, message: event.message.description, metadata: merged, source: event.source,
            file: event.file, function: event.function, line: event.line)
    }
}
