import Boards
import MetaWear
import Recording

/// Sessions at rates beyond the link (issue 21 part 3): each board logs its sensors to flash
/// instead of streaming them, the gateway downloads the log while the session records (as
/// fast as the link allows: a new readout as soon as one ends) and turns each page into the
/// board's points (``SessionController/recordLogged(board:gyro:accelerometer:gyroScale:accelerometerScale:bootOrigins:now:)``),
/// deleting the page on the board once they are stored. A stop first finishes the download:
/// the boards' sensors and logs stop, the session records until every board's log is read
/// to the end, then ends; it gives up on a board whose download makes no progress for
/// ``finishStallLimit`` (its rest stays on the board).
extension RecordingPipeline {
    /// A stop waiting for the boards' logs.
    struct Finishing {
        var trigger: SessionTrigger
        /// Boards whose log is not read to the end yet.
        var boards: Set<String>
        /// Boards that went away before their log was read to the end.
        var away: Set<String> = []
        /// When a page last arrived.
        var lastProgress: Int64
        var waiters: [CheckedContinuation<Result<SessionEnd, CommandError>, Never>] = []
    }

    /// Longest a finishing download may go without a page before the session ends without it.
    static let finishStallLimit: Int64 = 30_000_000_000
    /// How often the boards are asked for their log while a logged session records.
    static let loggedDownloadInterval: Int64 = 1_000_000_000

    /// Whether the boards log their sensors instead of streaming them.
    var recordsLogged: Bool { !settings.streaming.logged.isEmpty }

    /// A page of a logged board's download: its points, then the page's deletion once they
    /// are stored; at the end of a readout the next one (or, finishing, the board is done when
    /// the readout held nothing more).
    func loggedDownloaded(_ key: String, _ download: FlashLogDownload) {
        var origins: [UInt8: Int64] = [:]
        if let clock = download.clock, let readAt = download.clockReadAt {
            origins[clock.resetUID & 0x07] = timeline.nanoseconds(readAt) - Int64(BoardTicks.milliseconds(UInt64(clock.tick)) * 1e6)
        }
        let streaming = settings.streaming
        let outcome = controller.recordLogged(
            board: key, gyro: download.gyro, accelerometer: download.accelerometer, gyroScale: streaming.gyro?.range.scale ?? 1,
            accelerometerScale: streaming.accelerometer?.range.scale, bootOrigins: origins, now: timeline.now)
        backfillDemand.send(outcome.durable ? .confirmPage(key) : .declinePage(key))
        if outcome.recorded > 0 {
            book.backfilled(key, samples: outcome.recorded, attached: attached.contains(key), recording: controller.state != .idle)
            publish()
        }
        finishing?.lastProgress = timeline.now
        loggedReadoutSamples[key, default: 0] += download.gyro.count
        guard download.complete else { return }
        if download.readoutsResumed > 0 {
            logger.warning("board \(key) flash log: \(Self.readoutRecovery(download).dropFirst(2))")
        }
        controller.loggedReadoutEnded(board: key)
        // The pages of a readout come one by one; the readout held nothing when none had a sample.
        let readoutWasEmpty = loggedReadoutSamples.removeValue(forKey: key) == 0
        if readoutWasEmpty, finishing?.boards.remove(key) != nil {
            logger.info("board \(key): its flash log is read to the end")
        }
        if controller.state != .idle { backfillDemand.send(.download(key)) }
    }

    /// Keeps, for a logged session that stops, the rest of each of `boards`' log (they are
    /// away): read out when the board is back.
    func keepLoggedRests(_ boards: Set<String>, now: Int64) {
        guard recordsLogged, !boards.isEmpty else { return }
        let names = boards.sorted().joined(separator: ", ")
        logger.info("session ending without the rest of the flash log of \(names): it is read when the board is back")
        controller.keepLoggedRests(boards: boards, now: now)
    }

    /// A board came back (idle, or streaming into a session) while a stopped session waits for
    /// what it logged while away (``SessionController/keepLoggedRests(boards:now:)``): its log
    /// is read out from this link on.
    func drainLoggedRest(_ key: String) {
        guard controller.hasLoggedRest(board: key) else { return }
        controller.loggedReadoutBegins(board: key, now: timeline.now)
        logger.info("board \(key) is back: reading out what it logged for a stopped session")
        backfillDemand.send(.drainFlashLog(key))
    }

    /// Asks the attached boards for their log (a board ignores it while a readout runs), about
    /// once a second while a logged session records.
    func requestLoggedDownloads(now: Int64) {
        guard recordsLogged, controller.state != .idle,
              lastLoggedDownloadRequest.map({ now - $0 >= Self.loggedDownloadInterval }) ?? true else { return }
        lastLoggedDownloadRequest = now
        for key in attached.sorted() { backfillDemand.send(.download(key)) }
    }

    /// Begins the end of a logged session: the boards' sensors and logs stop and their logs
    /// are read to the end before the session stops. False when nothing is logged (stop now).
    func beginFinishing(trigger: SessionTrigger, now: Int64) -> Bool {
        guard recordsLogged, controller.state != .idle else { return false }
        if finishing != nil { return true }
        guard !attached.isEmpty else { return false }
        finishing = Finishing(trigger: trigger, boards: attached, away: controller.detachedBoards, lastProgress: now)
        logger.info("session ending (\(trigger)): reading the boards' flash logs to the end first")
        for key in attached.sorted() { backfillDemand.send(.finishFlashLog(key)) }
        return true
    }

    /// Waits for the finishing stop (``beginFinishing(trigger:now:)``) to end the session.
    func waitForFinish() async -> Result<SessionEnd, CommandError> {
        await withCheckedContinuation { continuation in
            if finishing == nil {
                continuation.resume(returning: .failure(CommandError("no session is recording")))
            } else {
                finishing?.waiters.append(continuation)
            }
        }
    }

    /// Ends the finishing session once every board's log is read, a board went away, or no
    /// page came for ``finishStallLimit``.
    func checkFinishing(now: Int64) {
        guard var state = finishing else { return }
        state.away.formUnion(state.boards.subtracting(attached))
        state.boards.formIntersection(attached)
        finishing = state
        let stalled = now - state.lastProgress >= Self.finishStallLimit
        guard state.boards.isEmpty || stalled else { return }
        // Boards that went away before their log was read to the end: read when they return.
        keepLoggedRests(state.away, now: now)
        if stalled {
            report(area: "recording", "the flash logs of \(state.boards.sorted().joined(separator: ", ")) made no progress "
                + "for \(Self.finishStallLimit / 1_000_000_000) s: the session ends without the rest (it stays on the boards)")
        }
        finishing = nil
        let result: Result<SessionEnd, CommandError>
        do throws(CommandError) {
            result = .success(try stop(trigger: state.trigger, now: now, keepingRestsOfDetachedBoards: false))
        } catch {
            result = .failure(error)
        }
        for waiter in state.waiters { waiter.resume(returning: result) }
    }
}
