import Logging

/// A journald `MESSAGE_ID`: a fixed 128-bit identifier (32 lowercase hex digits) that marks a
/// recognisable event, so operators can find every occurrence with
/// `journalctl MESSAGE_ID=<id>` regardless of how the message text changes.
///
/// The catalogue below is part of mwgate's operator interface: never change an ID once
/// released; add new ones instead. (swift-log has its own `LogEvent` type, hence this name.)
public struct MessageID: Hashable, Sendable, CustomStringConvertible {
    /// The 32-digit lowercase hex form journald expects.
    public let rawValue: String
    /// A short name for docs and tests (`session-started`).
    public let name: String
    /// The level the event is normally logged at.
    public let level: Logger.Level

    /// Validates the ID (32 hex digits, stored lowercase); nil otherwise.
    public init?(_ hex: String, name: String, level: Logger.Level = .info) {
        let lower = hex.lowercased()
        guard lower.utf8.count == 32, lower.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { return nil }
        rawValue = lower
        self.name = name
        self.level = level
    }

    private init(fixed hex: StaticString, name: String, level: Logger.Level) {
        rawValue = hex.description
        self.name = name
        self.level = level
    }

    public var description: String { rawValue }

    /// The metadata key the journald handler turns into the `MESSAGE_ID` field.
    public static let metadataKey = "message_id"

    /// `["message_id": id]`, to merge into a log call's metadata.
    public var metadata: Logger.Metadata { [Self.metadataKey: .string(rawValue)] }

    /// A recording session began.
    public static let sessionStarted = MessageID(fixed: "5a0c9f3e2b7d4e61a8f1c2d3e4b5a601", name: "session-started", level: .notice)
    /// A recording session ended (manually, by button, or at shutdown).
    public static let sessionEnded = MessageID(fixed: "5a0c9f3e2b7d4e61a8f1c2d3e4b5a602", name: "session-ended", level: .notice)
    /// A board finished its handshake and is streaming.
    public static let boardConnected = MessageID(fixed: "5a0c9f3e2b7d4e61a8f1c2d3e4b5a603", name: "board-connected", level: .notice)
    /// A board's link dropped or it stopped sending.
    public static let boardLost = MessageID(fixed: "5a0c9f3e2b7d4e61a8f1c2d3e4b5a604", name: "board-lost", level: .warning)
    /// The GNSS receiver delivered a valid fix after having none.
    public static let fixGained = MessageID(fixed: "5a0c9f3e2b7d4e61a8f1c2d3e4b5a605", name: "fix-gained", level: .notice)
    /// The GNSS fix was lost (no valid fix for the timeout, or receiver gone).
    public static let fixLost = MessageID(fixed: "5a0c9f3e2b7d4e61a8f1c2d3e4b5a606", name: "fix-lost", level: .warning)
    /// Upstream sync keeps failing (the first failure of a streak).
    public static let syncFailing = MessageID(fixed: "5a0c9f3e2b7d4e61a8f1c2d3e4b5a607", name: "sync-failing", level: .error)
    /// Upstream sync succeeded again after failures.
    public static let syncRecovered = MessageID(fixed: "5a0c9f3e2b7d4e61a8f1c2d3e4b5a608", name: "sync-recovered", level: .notice)
    /// The configuration was reloaded (SIGHUP / `systemctl reload`).
    public static let configReloaded = MessageID(fixed: "5a0c9f3e2b7d4e61a8f1c2d3e4b5a609", name: "config-reloaded", level: .notice)
    /// The disk budget forced the buffer to drop data.
    public static let bufferEvicted = MessageID(fixed: "5a0c9f3e2b7d4e61a8f1c2d3e4b5a60a", name: "buffer-evicted", level: .warning)

    /// Every catalogued event.
    public static let catalogue: [MessageID] = [
        .sessionStarted, .sessionEnded, .boardConnected, .boardLost, .fixGained, .fixLost,
        .syncFailing, .syncRecovered, .configReloaded, .bufferEvicted,
    ]
}

extension Logger {
    /// Logs a catalogued event at its usual level, with its `MESSAGE_ID`.
    ///
    /// ```swift
    /// logger.event(.boardLost, "board lost", metadata: ["board": "\(address)"])
    /// ```
    public func event(
        _ id: MessageID, _ message: @autoclosure () -> Logger.Message, metadata: Logger.Metadata = [:],
        level: Logger.Level? = nil,
        file: String = #fileID, function: String = #function, line: UInt = #line
    ) {
        log(
            level: level ?? id.level, message(), metadata: metadata.merging(id.metadata) { _, new in new },
            file: file, function: function, line: line)
    }
}
