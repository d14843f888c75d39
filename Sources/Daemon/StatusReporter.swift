import Basics
import Foundation
import GNSS
import Gateway
import Logging
import ServiceSupport
import StatusModel

/// Turns the pipeline's status snapshots into what an operator sees: catalogued journal
/// events (session started/ended, board connected/lost, fix gained/lost, sync failing/
/// recovered) and the one-line `STATUS=` of `systemctl status`.
///
/// Pure apart from the logger and the notifier it is given: ``observe(_:)`` compares a
/// snapshot with the previous one, so tests can feed snapshots directly.
public actor StatusReporter {
    /// Seconds without a fix after which a held fix counts as lost (receiver silent or gone).
    public static let fixTimeout: Double = 10

    private let logger: Logger
    private let notifier: SystemdNotifier
    private let minimumStatusInterval: Duration
    private var previous: GatewayStatus?
    /// Boards the journal last called connected (`board-connected`), by address.
    private var connectedBoards: Set<String> = []
    private var hadFix = false
    private var lastStatusLine: String?
    private var lastStatusSentAt: ContinuousClock.Instant?
    private var pendingStatusLine: String?
    private var syncFailures = 0

    /// A reporter logging to `logger` and sending `STATUS=` at most once per `minimumStatusInterval`.
    public init(logger: Logger, notifier: SystemdNotifier, minimumStatusInterval: Duration = .seconds(1)) {
        self.logger = logger
        self.notifier = notifier
        self.minimumStatusInterval = minimumStatusInterval
    }

    /// Handles one snapshot: logs the events since the previous one and queues its status line.
    public func observe(_ status: GatewayStatus, now: Date = Date()) {
        logEvents(from: previous, to: status, now: now)
        previous = status
        let line = Self.statusLine(status, now: now)
        if line != lastStatusLine { pendingStatusLine = line }
        flushStatus()
    }

    /// Sends a queued status line if the rate limit allows (called periodically too, so the
    /// last change is never held back for long).
    public func flushStatus() {
        guard let line = pendingStatusLine else { return }
        let clock = ContinuousClock.now
        if let sent = lastStatusSentAt, clock - sent < minimumStatusInterval { return }
        notifier.status(line)
        lastStatusLine = line
        lastStatusSentAt = clock
        pendingStatusLine = nil
    }

    /// Whether something waits on time: a rate-limited status line, or a fix that may go
    /// silent (the housekeeping then looks once a second, otherwise rarely).
    public var isWatching: Bool { pendingStatusLine != nil || hadFix }

    /// Re-checks time-based events (a fix that went silent) against the last snapshot.
    public func recheck(now: Date = Date()) {
        guard let previous else { return }
        observe(previous, now: now)
    }

    /// The status line last sent (for the control API and tests).
    public var currentStatusLine: String? { lastStatusLine }

    /// Reports one upload attempt of the sync service: the first failure of a streak logs
    /// `sync-failing`, the first success after failures `sync-recovered`.
    public func syncAttempt(succeeded: Bool, sink: String, error: String? = nil) {
        if succeeded {
            if syncFailures > 0 {
                logger.event(.syncRecovered, "upload to \(sink) works again after \(syncFailures) failed attempt(s)",
                             metadata: ["sink": "\(sink)"])
            }
            syncFailures = 0
        } else {
            if syncFailures == 0 {
                logger.event(.syncFailing, "upload to \(sink) fails: \(error ?? "unknown error")", metadata: ["sink": "\(sink)"])
            }
            syncFailures += 1
        }
    }

    // MARK: Events

    private func logEvents(from old: GatewayStatus?, to new: GatewayStatus, now: Date) {
        let oldSession = old?.session.sessionID
        let newSession = new.session.sessionID
        if let oldSession, oldSession != newSession {
            logger.event(.sessionEnded, "session \(oldSession) ended", metadata: ["session": "\(oldSession)"])
        }
        if let newSession, newSession != oldSession {
            logger.event(.sessionStarted, "session \(newSession) started (\(new.session.trigger ?? "unknown"))",
                         metadata: ["session": "\(newSession)", "trigger": "\(new.session.trigger ?? "unknown")"])
        }
        for board in new.boards {
            let wasConnected = connectedBoards.contains(board.address)
            // Connected means past the handshake, streaming or idle with the sensors off. A
            // connected board asked to stream whose samples have not come yet stays connected:
            // it is the same link (a session's start turns an idle board's stream on, and at a
            // logged rate no sample ever streams), and saying "lost" then "connected" at every
            // session start would cry wolf in the journal. A stream restarted after a silence
            // (`restarting the stream`, then `streaming` without samples) is not connected until
            // samples flow again, so a silent link gives one lost and one connected event.
            let isConnected = board.isConnected || (wasConnected && board.isInStreamingState)
            if isConnected, !wasConnected {
                logger.event(.boardConnected, "board \(board.address) connected: \(board.model ?? "unknown model")",
                             metadata: ["board": "\(board.address)"])
            } else if !isConnected, wasConnected, !board.isStopped {
                // A stopped board was stopped by the gateway (at shutdown the seal waits for
                // the boards' stop, so their last state is published), not lost.
                logger.event(.boardLost, "board \(board.address) lost (\(board.state))", metadata: ["board": "\(board.address)"])
            }
            if isConnected { connectedBoards.insert(board.address) } else { connectedBoards.remove(board.address) }
        }
        connectedBoards.formIntersection(new.boards.map(\.address))
        let fresh = new.gnss.age(at: now.timeIntervalSince1970).map { $0 <= Self.fixTimeout } ?? false
        let hasFix = new.gnss.hasPosition && fresh && new.gnss.isRunning
        if hasFix, !hadFix {
            let position = new.gnss.latitude.flatMap { lat in new.gnss.longitude.map { FixedDecimal.string(lat, places: 5) + ", " + FixedDecimal.string($0, places: 5) } } ?? "?"
            let satellites = new.gnss.satellitesUsed.map { ", \($0) satellites" } ?? ""
            logger.event(.fixGained, "GNSS fix gained at \(position)\(satellites)",
                         metadata: ["gnss": "\(new.gnss.source ?? "none")"])
        } else if !hasFix, hadFix {
            let why = !new.gnss.isRunning ? "receiver stopped" : (new.gnss.hasPosition ? "no fix for \(Int(Self.fixTimeout)) s" : "no position")
            logger.event(.fixLost, "GNSS fix lost: \(why)", metadata: ["gnss": "\(new.gnss.source ?? "none")"])
        }
        hadFix = hasFix
    }

    // MARK: Status line

    /// `2/2 boards streaming; fix 3D (9 sats); recording 1a2b… (trigger control_api); backlog 3 docs`.
    public static func statusLine(_ status: GatewayStatus, now: Date = Date()) -> String {
        let streaming = status.boards.filter(\.isStreaming).count
        var parts = ["\(streaming)/\(status.boards.count) boards streaming"]
        let idle = status.boards.filter(\.isIdle).count
        if idle > 0 { parts[0] += " (\(idle) idle, sensors off)" }
        if status.gnss.source == nil {
            parts.append("no GNSS receiver")
        } else if status.gnss.hasPosition, let age = status.gnss.age(at: now.timeIntervalSince1970), age <= fixTimeout {
            let mode = status.gnss.mode.map { $0 == GNSSStatus.Mode.threeD ? "3D" : $0 == GNSSStatus.Mode.twoD ? "2D" : "none" } ?? "?"
            parts.append("fix \(mode)" + (status.gnss.satellitesUsed.map { " (\($0) sats)" } ?? ""))
        } else {
            parts.append(status.gnss.isRunning ? "waiting for GNSS fix" : "GNSS receiver not running")
        }
        if let id = status.session.sessionID {
            parts.append("recording \(id)")
        } else {
            parts.append("idle")
        }
        if !status.session.awaitingSurvey.isEmpty { parts.append("\(status.session.awaitingSurvey.count) awaiting survey") }
        if let backlog = status.backlog { parts.append("backlog \(backlog.documents) docs") }
        return parts.joined(separator: "; ")
    }
}
