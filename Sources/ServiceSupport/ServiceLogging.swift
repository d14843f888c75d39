import Logging

/// One-call logging set-up for the daemon.
public enum ServiceLogging {
    /// Bootstraps swift-log with `JournaldLogHandler`s sharing one `JournalWriter` (journal
    /// socket under systemd, `<N>`-prefixed stderr otherwise) and returns the writer, so the
    /// daemon can call `flushSuppressed()` from a periodic tick. Call once, first thing in main.
    @discardableResult
    public static func bootstrap(
        identifier: String = "mwgated", level: Logger.Level = .info,
        output: JournalOutput = .automatic(), limiter: RepeatLimiter = RepeatLimiter()
    ) -> JournalWriter {
        let writer = JournalWriter(identifier: identifier, output: output, limiter: limiter)
        LoggingSystem.bootstrap { label in JournaldLogHandler(label: label, writer: writer, logLevel: level) }
        return writer
    }
}
