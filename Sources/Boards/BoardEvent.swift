import Basics
import BlueZ
import Foundation
import MetaWear

/// One event from a board, in the order the session produced it.
public struct BoardEvent: Sendable {
    /// What happened.
    public enum Kind: Sendable {
        /// A decoded notification (gyro/accelerometer samples and other replies).
        case sample(MetaWearEvent)
        /// The session's state changed.
        case state(BoardState)
        /// A battery reading (at handshake, then periodically).
        case battery(BatteryState)
        /// The board's button; `togglesSession` is true on the press edge that should start or
        /// stop a recording session.
        case button(ButtonEvent, togglesSession: Bool)
        /// The board's flash log (the copy of the samples that backfills the link's gaps).
        case flashLog(FlashLogStatus)
        /// A page of the flash log's download arrived, or the download finished
        /// (``BoardSession/downloadFlashLog()``). The board deletes the page only when told to
        /// (``BoardSession/confirmFlashLogPage()``), once what it holds is stored.
        case flashLogDownloaded(FlashLogDownload)
    }

    /// The board's address.
    public var board: BluetoothAddress
    public var kind: Kind
    /// Monotonic receive time (the notification's packet for samples).
    public var receivedAt: ContinuousClock.Instant
    /// Wall-clock receive time.
    public var wallClock: Date

    public init(board: BluetoothAddress, kind: Kind, receivedAt: ContinuousClock.Instant, wallClock: Date) {
        self.board = board
        self.kind = kind
        self.receivedAt = receivedAt
        self.wallClock = wallClock
    }
}

/// A board session's externally visible state.
public enum BoardState: Hashable, Sendable, CustomStringConvertible {
    /// Looking for the board or connecting (first time).
    case connecting
    /// Link up; running the MetaWear handshake.
    case handshaking
    /// Sensors are streaming.
    case streaming(BoardDescription)
    /// Connected with the sensors off (no session records): the button and battery still
    /// report, the connection parameters are relaxed.
    case idle(BoardDescription)
    /// The link or session was lost.
    case lost(reason: String)
    /// Trying again after a failure; `attempt` counts failures since the last good link.
    case reconnecting(attempt: Int, lastFailure: String?)
    /// No data came for too long and the board answered the watchdog's register read with no
    /// sample before its reply (``StreamProbe``): the stream is being restarted on the same link.
    case recoveringStream(restart: Int)
    /// Stopped on request: the stop's commands written (sensors off) and the last link's
    /// notifications all handed on, so no event follows. The link's release and disconnect
    /// may still be under way; ``BoardSession/stop()`` returns once they are done.
    case stopped

    public var description: String {
        switch self {
        case .connecting: "connecting"
        case .handshaking: "handshaking"
        case .streaming(let description): "streaming (\(description))"
        case .idle(let description): "idle (sensors off; \(description))"
        case .lost(let reason): "lost: \(reason)"
        case .reconnecting(let attempt, let failure): "reconnecting (attempt \(attempt)\(failure.map { ", last failure: \($0)" } ?? ""))"
        case .recoveringStream(let restart): "restarting the stream (restart \(restart))"
        case .stopped: "stopped"
        }
    }
}

/// Whether a board keeps its samples in its flash log while it streams.
public enum FlashLogStatus: Hashable, Sendable, CustomStringConvertible {
    /// Not logging, and why (the setting, or no logging module).
    case off(reason: String)
    /// Finding or allocating the loggers.
    case starting
    /// Logging with these loggers; `capacityEntries` is what the flash holds (nil when no
    /// source states it for the model), `secondsToFull` how long that lasts at the rates.
    case logging(loggers: [MotionSensor: LoggerIDs], capacityEntries: Int?, secondsToFull: Double?)
    /// The board refused or did not answer; streaming goes on without the log.
    case failed(reason: String)
    /// Downloading while logging and streaming go on: entries left, estimated seconds left.
    case downloading(entriesLeft: Int, secondsLeft: Double?)

    public var description: String {
        switch self {
        case .off(let reason): "off: \(reason)"
        case .starting: "starting"
        case .logging(_, let capacity, let seconds):
            if let capacity, let seconds {
                "logging (flash \(capacity) entries, full after \(DurationText.string(seconds)), then overwrites the oldest)"
            } else {
                "logging (flash capacity unknown for this model)"
            }
        case .failed(let reason): "failed: \(reason)"
        case .downloading(let left, let seconds):
            "logging, downloading: \(left) entries left" + (seconds.map { ", about \(DurationText.string($0.rounded(.up)))" } ?? "")
        }
    }
}

/// The gyro (and accelerometer) samples one page of a flash log download delivered (or the
/// last ones of the download), with what places them in time.
public struct FlashLogDownload: Sendable {
    /// Logged gyro samples in readout order.
    public var gyro: [LoggedSample]
    /// Logged accelerometer samples in readout order (when the accelerometer streams).
    public var accelerometer: [LoggedSample] = []
    /// The readout ended with these: every sample it had is delivered.
    public var complete = true
    /// The board clock read at the start of the link, and when its reply was handled: where
    /// the current boot's tick 0 lies.
    public var clock: BoardClock?
    public var clockReadAt: ContinuousClock.Instant?
    /// Entries the board sent twice (a resent page) and half samples dropped.
    public var duplicatesDropped: Int
    public var orphanedEntries: Int
    /// Times this download's readout was asked for again because it stopped delivering (a
    /// notification lost on the way), and entries the board's progress showed lost (sent
    /// again by the resumed readout unless a page holding them was confirmed first).
    public var readoutsResumed = 0
    public var entriesMissed = 0
    /// For a readout of the log's streamed part (``BoardSession/readStreamedFlashLog(leaving:)``):
    /// its entries were all logged before this instant. nil for a readout of the whole log.
    public var loggedBefore: ContinuousClock.Instant?

    /// All fields.
    public init(gyro: [LoggedSample], clock: BoardClock?, clockReadAt: ContinuousClock.Instant?, duplicatesDropped: Int, orphanedEntries: Int) {
        self.gyro = gyro
        self.clock = clock
        self.clockReadAt = clockReadAt
        self.duplicatesDropped = duplicatesDropped
        self.orphanedEntries = orphanedEntries
    }
}

/// Everything tunable about one board session.
public struct BoardSessionOptions: Sendable {
    /// What to stream.
    public var configuration: StreamingConfiguration
    /// Handshake retries and timeouts.
    public var handshake: HandshakeSequencer.Options
    /// Connection/reconnection timings.
    public var reconnection: ReconnectionPolicy
    /// Adapter to use (nil: the first powered one).
    public var preferredAdapter: String?
    /// How notifications are received.
    public var notificationDelivery: NotificationDelivery
    /// Minimum gap between command writes.
    public var minimumWriteInterval: Duration
    /// While streaming, how long notifications are held so several are handed on per
    /// wake-up (at 267 notifications/s each wake-up and async hop costs more CPU than
    /// decoding them). Events reach consumers up to this much later, as one element of
    /// ``BoardEventStream/batches``; receive times are unaffected. With `AcquireNotify` the
    /// reader rests this long after each read and samples keep their kernel arrival times
    /// (`SO_TIMESTAMP`). With `StartNotify` every signal is still read and stamped as it
    /// arrives; only the hand-off is grouped. Grouping starts when the handshake is over
    /// (its replies are never held). Longer groups cost less CPU (one wake-up of the reader
    /// and one of the consumer per group: at 800 Hz, the default 250 ms takes about 40% less
    /// than 100 ms) but leave more samples in flight at a recording session's start and stop,
    /// which the recorder places by arrival: up to this long's worth of samples per board
    /// lands on the other side of an edge. For a walking session that is a quarter of a
    /// step; live status lags by as much. Zero hands on every notification by itself.
    public var notificationCoalescing: Duration
    /// The default ``notificationCoalescing``: 250 ms.
    public static let defaultNotificationCoalescing: Duration = .milliseconds(250)
    /// Holding the reads themselves for `StartNotify` streams (D-Bus signals), which carry
    /// no arrival time: a
    /// held notification's receive time is the time it was read, up to this much late, and
    /// all notifications of one read share it. The recording rebuilds sample times from the
    /// earliest receive times and reads a whole stretch of late ones as lost samples: with
    /// 100 ms, a simulated 800 Hz stream got false losses and errors of several ms. So the
    /// default is zero (read at once); set it only where sample times do not matter.
    public var signalReadCoalescing: Duration
    /// Missing-data threshold in expected notification intervals (reference §9.1: ~5×).
    public var watchdogIntervals: Double
    /// The watchdog never fires sooner than this after the last notification.
    public var watchdogMinimum: Duration
    /// Stream restarts on the same link before the watchdog reconnects instead.
    public var streamRestartsBeforeReconnect: Int
    /// How long the watchdog's register read (``StreamProbe``) may go without its reply and
    /// without a sample before the link counts as dead. Longer than the board's supervision
    /// timeout (6 s, ``ConnectionParameters/fastest`` and ``ConnectionParameters/idle``), so the
    /// kernel drops a link whose radio is gone first (the silence began a watchdog timeout
    /// before the read); longer than the stalls of a live link seen (the real-BlueZ VM's
    /// startnotify group under TCG, bluetoothd slow to hand on: 1.4 s at load 7, and three
    /// watchdog restarts within 4 s with nothing missing, docs/bluez-vm.md), which a shorter
    /// bound would take for a dead link and reconnect, losing what bluetoothd held.
    public var watchdogProbeTimeout: Duration = .seconds(8)
    /// How often to read the battery while streaming (nil: only at handshake).
    public var batteryInterval: Duration?
    /// Subscribe to the button and report toggles.
    public var watchButton: Bool
    /// Whether the sensors start when the handshake is over. False leaves a connected board
    /// ``BoardState/idle(_:)`` until ``BoardSession/setSensors(_:)`` turns them on.
    public var sensorsOnConnect: Bool
    /// Seed of the reconnection jitter (tests fix it).
    public var seed: UInt64
    /// Whether the board also logs the streamed sensors to its flash while streaming
    /// (`[boards] backfill`), so gaps of the link can be filled from it.
    public var flashLogging: Bool
    /// How long a flash-log readout may go without a logging notification, while entries or
    /// the length are due, before it is asked for again from the last confirmed page
    /// (``LogDownloader/resume()``): a lost page end otherwise leaves the board waiting for a
    /// confirm for ever (metawear-logging.md P6). A page is 256 notifications, under 3 s at
    /// the slowest readout pace seen (100 notifications/s); a resume that comes early costs
    /// that page once more, nothing else.
    public var readoutStallTimeout: Duration = .seconds(5)

    public init(configuration: StreamingConfiguration, handshake: HandshakeSequencer.Options = .init(),
                reconnection: ReconnectionPolicy = .init(), preferredAdapter: String? = nil,
                notificationDelivery: NotificationDelivery = .automatic, minimumWriteInterval: Duration = .milliseconds(2),
                notificationCoalescing: Duration = defaultNotificationCoalescing, signalReadCoalescing: Duration = .zero,
                watchdogIntervals: Double = 5, watchdogMinimum: Duration = .seconds(1), streamRestartsBeforeReconnect: Int = 1,
                batteryInterval: Duration? = .seconds(600), watchButton: Bool = true, sensorsOnConnect: Bool = true,
                seed: UInt64 = UInt64.random(in: 0...UInt64.max), flashLogging: Bool = false) {
        self.configuration = configuration
        self.handshake = handshake
        self.reconnection = reconnection
        self.preferredAdapter = preferredAdapter
        self.notificationDelivery = notificationDelivery
        self.minimumWriteInterval = minimumWriteInterval
        self.notificationCoalescing = max(.zero, notificationCoalescing)
        self.signalReadCoalescing = max(.zero, signalReadCoalescing)
        self.watchdogIntervals = watchdogIntervals
        self.watchdogMinimum = watchdogMinimum
        self.streamRestartsBeforeReconnect = max(0, streamRestartsBeforeReconnect)
        self.batteryInterval = batteryInterval
        self.watchButton = watchButton
        self.sensorsOnConnect = sensorsOnConnect
        self.seed = seed
        self.flashLogging = flashLogging
    }

    /// The silence after which the watchdog acts.
    public var watchdogTimeout: Duration {
        let rate = configuration.notificationsPerSecond
        guard rate > 0 else { return watchdogMinimum }
        let interval = Duration.nanoseconds(Int64(watchdogIntervals / rate * 1e9))
        return max(interval, watchdogMinimum)
    }
}
