import Foundation
import Logging

/// Every line a swift-log `Logger` writes, kept for a test to read back.
///
/// Each line is `level message` followed by the metadata (logger's and event's, `key=value`,
/// sorted) and ` error=…` when the event carried an error, so a test can check what an operator
/// would read in the journal, including the fields that go beside the message.
public final class LogCapture: @unchecked Sendable {
    private let lock = NSLock()
    private var lines: [String] = []

    public init() {}

    /// The captured lines, oldest first, one per line.
    public var text: String { lock.withLock { lines.joined(separator: "\n") } }

    /// A logger at `.trace` whose every line lands here.
    public func logger(_ label: String = "test") -> Logger {
        var logger = Logger(label: label) { _ in Handler(capture: self) }
        logger.logLevel = .trace
        return logger
    }

    fileprivate func append(_ line: String) { lock.withLock { lines.append(line) } }

    private struct Handler: LogHandler {
        let capture: LogCapture
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let fields = metadata.merging(event.metadata ?? [:]) { $1 }.map { "\($0)=\($1)" }.sorted()
            let line = ["\(event.level) \(event.message)"] + fields
            capture.append(line.joined(separator: " ") + (event.error.map { " error=\($0)" } ?? ""))
        }
    }
}
