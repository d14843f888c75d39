import Boards
import Foundation
import GNSS
import MetaWear
import StatusModel

/// What the status says about the boards, the receiver, the session's start and recent
/// problems, kept up to date from the pipeline's events; ``snapshot(…)`` adds what the
/// pipeline holds elsewhere (session, clock, backlog). The pipeline's status hub, without
/// the pipeline's other jobs.
struct StatusBook {
    private var boards: [String: BoardStatus] = [:]
    private var gnss: GNSSStatus
    private var problems: [GatewayProblem] = []
    private var sessionStartedAt: Date?
    private var sessionTrigger: String?
    private let gyroRateHz: Double
    private let accelerometerRateHz: Double?

    /// An empty book for boards streaming at these rates and the receiver `gnssSource`.
    init(gnssSource: String?, gyroRateHz: Double, accelerometerRateHz: Double?) {
        gnss = GNSSStatus(source: gnssSource)
        self.gyroRateHz = gyroRateHz
        self.accelerometerRateHz = accelerometerRateHz
    }

    // MARK: Boards

    /// Notes samples of `board` received at `wallClock` (`gyroSamples` of them gyro samples):
    /// counts them (in the session too while `counted`, the board attached to a recording
    /// session) and reports the board streaming once samples really arrive after it attached
    /// (a restarted or reconnected stream that stays silent is not streaming). True when the
    /// board just started streaming.
    mutating func samplesArrived(board: String, at wallClock: Date, gyroSamples: Int?, attached: Bool, recording: Bool) -> Bool {
        // One access to the board's entry per notification (each access moves the entry out
        // of the dictionary and back).
        boards[board]?.samplesArrived(at: wallClock.timeIntervalSince1970, gyroSamples: gyroSamples, attached: attached,
                                      recording: recording) ?? false
    }

    /// Takes the board session's new state: not streaming until samples arrive again; the
    /// board's description (model, identity, battery) when it comes with the state.
    mutating func boardStateChanged(_ board: String, _ state: BoardState) {
        ensureBoard(board)
        boards[board]?.state = state.description
        boards[board]?.isStreaming = false
        switch state {
        case .streaming(let description), .idle(let description):
            boards[board]?.model = description.description
            boards[board]?.missingIdentity = description.missingIdentity
            if let battery = description.battery { boards[board]?.setBattery(battery) }
        default:
            break
        }
    }

    /// Takes the flash log's status of `board`.
    mutating func flashLogChanged(_ board: String, _ status: FlashLogStatus) {
        ensureBoard(board)
        boards[board]?.flashLog = status.description
        if case .downloading(let left, let seconds) = status {
            boards[board]?.flashLogEntriesLeft = left
            boards[board]?.flashLogSecondsLeft = seconds
        } else {
            boards[board]?.flashLogEntriesLeft = nil
            boards[board]?.flashLogSecondsLeft = nil
        }
    }

    /// Counts samples of `board` that its flash log filled in (in the session too while
    /// `recording` and attached, but for those sealed `intoEarlierSessions`).
    mutating func backfilled(_ board: String, samples: Int, intoEarlierSessions: Int = 0, attached: Bool, recording: Bool) {
        let before = boards[board]?.gyroSamplesBackfilled ?? 0
        boards[board]?.gyroSamplesBackfilled = before + samples
        if attached, recording { boards[board]?.gyroSamplesInSession += samples - intoEarlierSessions }
    }

    /// Takes a battery reading of `board`.
    mutating func batteryRead(_ board: String, _ battery: BatteryState) {
        ensureBoard(board)
        boards[board]?.setBattery(battery)
    }

    private mutating func ensureBoard(_ board: String) {
        guard boards[board] == nil else { return }
        boards[board] = BoardStatus(address: board, state: "connecting", gyroRateHz: gyroRateHz,
                                    accelerometerRateHz: accelerometerRateHz)
    }

    // MARK: GNSS

    /// Takes a fix.
    mutating func fixArrived(_ fix: GNSSFix) {
        gnss.mode = fix.mode.statusName
        gnss.hasPosition = fix.hasPosition
        if fix.hasPosition {
            gnss.latitude = fix.latitude
            gnss.longitude = fix.longitude
        }
        gnss.satellitesUsed = fix.satellitesUsed
        gnss.lastFixAt = fix.arrival.timeIntervalSince1970
        gnss.fixesReceived += 1
    }

    /// Notes the receiver running or not; true when that changed.
    mutating func setGNSSRunning(_ running: Bool) -> Bool {
        guard gnss.isRunning != running else { return false }
        gnss.isRunning = running
        return true
    }

    // MARK: Session and problems

    /// A session started now: its trigger, and the boards' session counters from zero.
    mutating func sessionStarted(trigger: String) {
        sessionStartedAt = Date()
        sessionTrigger = trigger
        for board in boards.keys { boards[board]?.gyroSamplesInSession = 0 }
    }

    /// The session stopped.
    mutating func sessionStopped() {
        sessionStartedAt = nil
        sessionTrigger = nil
    }

    /// Keeps a problem (the newest ``GatewayStatus/maximumProblems``).
    mutating func problem(area: String, _ message: String) {
        problems.append(GatewayProblem(at: Date().timeIntervalSince1970, area: area, message: message))
        if problems.count > GatewayStatus.maximumProblems { problems.removeFirst(problems.count - GatewayStatus.maximumProblems) }
    }

    // MARK: Snapshot

    /// The whole status now, with the session (`sessionID` nil while idle), clock and backlog
    /// the pipeline holds.
    func snapshot(sessionID: String?, awaitingSurvey: [String], chunksSealed: Int, mode: GatewaySettings.SessionMode,
                  clock: ClockStatus, backlog: BacklogStatus?) -> GatewayStatus {
        let now = Date().timeIntervalSince1970
        var gnss = gnss
        gnss.fixAgeSeconds = gnss.age(at: now)
        return GatewayStatus(
            generatedAt: now,
            boards: boards.values.sorted { $0.address < $1.address },
            gnss: gnss,
            session: SessionStatus(state: sessionID != nil ? SessionStatus.recording : SessionStatus.idle, sessionID: sessionID,
                                   trigger: sessionTrigger, startedAt: sessionStartedAt?.timeIntervalSince1970,
                                   awaitingSurvey: awaitingSurvey, chunksSealed: chunksSealed, mode: mode.rawValue),
            clock: clock,
            backlog: backlog,
            problems: problems,
            streams: StreamStatus.dataPath)
    }
}

private extension BoardStatus {
    /// ``StatusBook/samplesArrived(board:at:gyroSamples:attached:recording:)`` for this board.
    mutating func samplesArrived(at wallClock: Double, gyroSamples: Int?, attached: Bool, recording: Bool) -> Bool {
        lastSampleAt = wallClock
        guard let gyroSamples else { return false }
        gyroSamplesReceived += gyroSamples
        if attached, recording { gyroSamplesInSession += gyroSamples }
        guard attached, !isStreaming else { return false }
        isStreaming = true
        return true
    }
}
