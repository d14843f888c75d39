import BlueZ
import MetaWear

/// The board's flash log while streaming (issue 21 part 1): the board keeps its own copy of
/// every gyro (and accelerometer) sample, so what a link drop, a stall or a gateway restart
/// misses is still on the board.
extension BoardSession {
    /// The writes that start the flash log on this link, before the sensors start (empty when
    /// the option is off or the board has no logging module). On the first link the trigger
    /// slots are read first and logging starts once the replies are in; the link's
    /// notifications are grouped only after that.
    func startFlashLog(_ description: BoardDescription) -> [Packet] {
        guard let status = flashLogAvailability(description) else {
            emitFlashLog(.off(reason: options.flashLogging ? "the board has no logging module" : "turned off ([boards] backfill = false)"))
            return []
        }
        if current?.flashLogging == true, current?.flashLogStopped == true {
            current?.flashLogStopped = false
            return LoggingCommands.start(overwriteWhenFull: true)
        }
        guard current?.flashStart == nil, current?.flashLogging == false else { return [] }
        let sensors = options.configuration.sensors.map(\.0)
        var start = FlashLogStart(sensors: sensors, chip: description.chip, triggerSlots: status.triggerSlots, known: flashLoggers)
        let (writes, outcome) = start.start()
        if let outcome {
            flashLogEnded(outcome, capabilities: status)
        } else {
            current?.flashStart = start
            emitFlashLog(.starting)
            armReplyTimer(.flashLog)
        }
        return writes
    }

    /// What the board's logging module offers, nil when the flash log is off or absent.
    func flashLogAvailability(_ description: BoardDescription) -> LoggingCapabilities? {
        guard options.flashLogging, let info = description.modules[.logging], info.isPresent else { return nil }
        return LoggingCapabilities(moduleInfo: info, model: description.model)
            ?? LoggingCapabilities(revision: info.revision ?? 0, triggerSlots: 8, capacityEntries: nil, pageEntries: nil)
    }

    /// Whether a notification is the logging module's (module 0x0B) other than the clock.
    static func isLogging(_ notification: GattNotification) -> Bool {
        notification.bytes.count >= 2 && notification.bytes[0] == ModuleID.logging.rawValue && notification.bytes[1] != 0x84
    }

    /// A logging notification while the flash log starts or downloads.
    func flashLogReceived(_ notification: GattNotification) {
        if current?.download != nil { return downloadReceived(notification) }
        let bytes = notification.bytes
        if current?.awaitingTrimLength == true, case .success(.length(let n))? = LogNotificationDecoder.decode(bytes) {
            current?.awaitingTrimLength = false
            // Counted more than a second after the recorder asked: it may hold samples past
            // the stretch the recorder will check (its margin is 2 s), so it is not used.
            let askedAt = current?.trimMarkAskedAt ?? notification.receivedAt
            current?.trimMark = notification.receivedAt - askedAt <= Self.trimMarkLatency ? n : nil
            return
        }
        guard var start = current?.flashStart else { return }
        let (writes, outcome) = start.receive(bytes)
        current?.flashStart = start
        write(writes)
        if let outcome {
            current?.replyTimer += 1
            flashLogEnded(outcome, capabilities: description.flatMap(flashLogAvailability))
        } else if !writes.isEmpty {
            armReplyTimer(.flashLog)
        }
    }

    /// A reply to the flash log's start is late: wait once more, or, when the board did not
    /// answer in time, streaming goes on without the log.
    func flashLogTimedOut() {
        guard var start = current?.flashStart else { return }
        guard let outcome = start.timedOut() else {
            current?.flashStart = start
            return armReplyTimer(.flashLog)
        }
        flashLogEnded(outcome, capabilities: nil)
    }

    private func flashLogEnded(_ outcome: FlashLogStart.Outcome, capabilities: LoggingCapabilities?) {
        if current?.flashStart != nil { current?.operations.yield(.groupNotifications) }
        current?.flashStart = nil
        switch outcome {
        case .logging(let loggers):
            flashLoggers = loggers
            current?.flashLogging = true
            let configuration = options.configuration
            var rates: [MotionSensor: Double] = [:]
            if let gyro = configuration.gyro { rates[.gyro] = gyro.rate.hertz }
            if let accelerometer = configuration.accelerometer { rates[.accelerometer] = accelerometer.rate.hertz }
            let budget = LogBudget(capacityEntries: capabilities?.capacityEntries, rates: rates)
            emitFlashLog(.logging(loggers: loggers, capacityEntries: budget.capacityEntries, secondsToFull: budget.secondsToFull))
            if flashLogDrainWanted, !sensorsOn {
                flashLogDrainWanted = false
                readOutStoppedLog()
            } else if flashLogDownloadWanted {
                downloadFlashLog()
            }
        case .failed(let reason, let cleanup):
            write(cleanup)
            emitFlashLog(.failed(reason: reason))
        }
    }

    private func emitFlashLog(_ status: FlashLogStatus) {
        guard status != flashLogStatus else { return }
        if case .logging = status { flashLogLogging = status }
        flashLogStatus = status
        emit(.flashLog(status))
    }

    // MARK: The link's own setup first

    /// Whether the flash log's readout, marks and trims may use the link now: once the
    /// handshake's end has queued the link's own setup and, on a board that streams, once its
    /// samples flow on this link again. After a reconnect the readout's requests went on the
    /// link right at the handshake's end, ahead of the flash log's own start and, on a board
    /// that had reset, of the sensors' start; and its notifications took the link and the
    /// CPUs while the board's stream came back (issue 18 §3: link back -> streaming 0.99 s
    /// median with backfill on, 0.37 s off, in the real-BlueZ VM). The readout waits a moment
    /// for the stream instead: what it fills waits seconds for it anyway.
    var flashLogMayUseTheLink: Bool {
        guard let current, current.setupQueued else { return false }
        // A board that logs instead of streaming (rates beyond the link), or whose logging a
        // session's end stopped, sends no stream to wait for.
        guard sensorsOn, !current.flashLogStopped, options.configuration.notificationsPerSecond > 0 else { return true }
        return current.streamLive
    }

    /// Starts the readout asked for while the link was not ready for it.
    func startWantedReadout() {
        guard flashLogDownloadWanted, current?.flashLogging == true, flashLogMayUseTheLink else { return }
        downloadFlashLog()
    }

    // MARK: Download

    /// Downloads the flash log in the background while logging and streaming go on, and
    /// reports the gyro (and accelerometer) samples of each page as it completes
    /// (``BoardEvent/Kind/flashLogDownloaded(_:)``, the last with `complete`). The board
    /// waits at each page's end and deletes the page only on ``confirmFlashLogPage()``, so
    /// nothing is cleared before it is stored; a lost link or a declined page
    /// (``declineFlashLogPage()``) ends the readout and the next one starts again at the first
    /// page not confirmed. When the flash log is not running on a
    /// link yet, or the link is not yet back to streaming (``flashLogMayUseTheLink``), the
    /// download starts once it is; nothing while a download runs.
    ///
    /// A MetaMotion S (logging revision 3) keeps its newest entries, up to a page, in an open
    /// page that neither the length read nor the readout sees until it fills or is flushed, and
    /// it flushes only while it does not log (§5.1, P13). A flush during a session paused
    /// logging, and what the board sampled in that pause was in no log (a board whose link went
    /// again right then lost it), so while it logs the readout starts once the page open at the
    /// request has filled (``openPageFillTime(_:)``): what it logged until the request is then
    /// readable, logging never stops.
    public func downloadFlashLog() {
        downloadFlashLog(openPageFilled: false)
    }

    /// ``downloadFlashLog()``; `openPageFilled`: the wait for the open page is over.
    func downloadFlashLog(openPageFilled: Bool) {
        guard current?.flashLogging == true, flashLogMayUseTheLink else {
            if options.flashLogging { flashLogDownloadWanted = true }
            return
        }
        if current?.download != nil, current?.streamedPartLeaves != nil {
            // A readout of the streamed part leaves the newest entries: the full one follows it.
            flashLogDownloadWanted = true
            return
        }
        guard current?.download == nil, let loggers = flashLoggers,
              let description, let capabilities = flashLogAvailability(description) else { return }
        if openPageFilled {
            current?.readoutStartsAt = nil
        } else if current?.readoutStartsAt != nil {
            return
        } else if current?.flashLogStopped != true, let wait = openPageFillTime(capabilities) {
            flashLogDownloadWanted = false
            current?.readoutStartsAt = .now.advanced(by: wait)
            current?.readoutWatch.yield()
            return
        }
        flashLogDownloadWanted = false
        // A MetaMotion S's open page is flushed only where logging has stopped (the session's
        // end, ``finishFlashLog()``); while it logs, the readout waited for the page to fill.
        let flush = current?.flashLogStopped == true ? LoggingCommands.flushPage(revision: capabilities.revision) : []
        write(flush)
        beginDownload(LogDownloader(revision: capabilities.revision, loggers: loggers, confirmsPagesItself: false), leaving: nil)
    }

    /// Starts `downloader` on this link; `leaving`: it reads only the streamed part.
    func beginDownload(_ downloader: LogDownloader, leaving: Duration?) {
        var downloader = downloader
        // The readout deletes from the head: a trim mark counted from there no longer holds.
        current?.trimMark = nil
        current?.awaitingTrimLength = false
        current?.downloaded = []
        current?.downloadedAccelerometer = []
        current?.streamedPartLeaves = leaving
        current?.streamedPartLoggedBefore = nil
        current?.operations.yield(.readPromptly(true))
        write(downloader.begin())
        current?.download = downloader
        noteReadoutActivity()
    }

    /// How long the board takes to fill a page of its log at the rates it logs, with a quarter
    /// more for the rates' tolerance: nil where a readout sees every entry (not revision 3).
    /// A MetaMotion S's 512-entry page at 100 Hz gyro (2 entries a sample): 3.2 s.
    func openPageFillTime(_ capabilities: LoggingCapabilities) -> Duration? {
        guard capabilities.revision == 3 else { return nil }
        let configuration = options.configuration
        let samplesPerSecond = (configuration.gyro?.rate.hertz ?? 0) + (configuration.accelerometer?.rate.hertz ?? 0)
        guard samplesPerSecond > 0 else { return nil }
        let seconds = Double(capabilities.pageEntries ?? 512) / (2 * samplesPerSecond) * 1.25
        return .milliseconds(Int((seconds * 1000).rounded(.up)))
    }

    /// The end of a session whose sensors the board logs instead of streaming (rates beyond
    /// the link): the sensors stop and logging stops, so the log stops growing and a download
    /// drains it (a MetaMotion S's open page is committed first); the board stays in its
    /// state, so the recorder keeps it in the session until the download is stored. Nothing
    /// when the flash log is not running on this link.
    public func finishFlashLog() {
        guard current?.flashLogging == true, current?.flashLogStopped == false, let plan else { return }
        current?.flashLogStopped = true
        write(plan.stopCommands + [LoggingCommands.stop])
        downloadFlashLog()
    }

    /// Reads out what the board logged for a session that stopped while it was away (rates
    /// beyond the link): where a session records on this link, a download (its flash log runs
    /// or starts; the old session's entries come first); where none does (the board came back
    /// idle, its sensors off), logging stops and the whole log is read, with the loggers an
    /// earlier link found, or found on the board first.
    public func drainFlashLog() {
        if sensorsOn { return downloadFlashLog() }
        guard current != nil, current?.flashStart == nil, let description, flashLogAvailability(description) != nil else { return }
        readOutStoppedLog()
    }

    /// Stops logging on this link and reads the log out (the sensors are off).
    private func readOutStoppedLog() {
        guard let description else { return }
        guard flashLoggers != nil else {
            // No link of this session has met the loggers yet: they are found on the board first.
            flashLogDrainWanted = true
            write(startFlashLog(description))
            return
        }
        current?.flashLogging = true
        current?.flashLogStopped = true
        write([LoggingCommands.stop])
        downloadFlashLog()
    }

    // MARK: Trim

    /// Notes how many entries the log holds now (`0B 85`): what ``trimFlashLog()`` may drop
    /// once the recorder has stored every sample of that stretch, which it measures from
    /// `askedAt`; a count taken more than a second later is not kept. Nothing while a
    /// download runs, or before the link is back to streaming (``flashLogMayUseTheLink``).
    public func markFlashLogForTrim(askedAt: ContinuousClock.Instant = .now) {
        guard current?.flashLogging == true, current?.download == nil, flashLogMayUseTheLink else { return }
        current?.trimMark = nil
        current?.awaitingTrimLength = true
        current?.trimMarkAskedAt = askedAt
        write([LoggingCommands.readLength])
    }

    /// Longest time from the recorder's request to the board's count for a mark to be kept.
    static let trimMarkLatency = Duration.seconds(1)

    /// Drops the entries counted at the last mark (stored, so the next download after a gap
    /// covers about the gap). Nothing without a mark on this link or while a download runs.
    public func trimFlashLog() {
        guard current?.flashLogging == true, current?.download == nil, let count = current?.trimMark, count > 0 else { return }
        current?.trimMark = nil
        // The board drops entries only while it does not log (P15): whatever it samples
        // between the stop and the start is in no log. Written one by one (each write waits
        // for bluetoothd's answer, then the link's pacing) that pause spanned a sample or two,
        // which only the stream then held: a kill -9 before it was stored lost it (soak seed
        // 12, one sample a board). As one batch the three reach the board back to back.
        writeTogether(LoggingCommands.trim(entries: count, overwriteWhenFull: true))
    }

    /// What the last reported page held is stored: the board may delete it and go on.
    public func confirmFlashLogPage() {
        guard var downloader = current?.download else { return }
        write(downloader.confirmPage())
        if downloader.state == .finished {
            downloadEnded()
        } else {
            current?.download = downloader
            noteReadoutActivity()
        }
    }

    /// What the last reported page held could not be stored (the store refused it): the
    /// readout ends here without the page's confirm, so the board keeps the page (only a
    /// confirm deletes one, metawear-logging.md §5.5), and the next ``downloadFlashLog()`` on
    /// this link reads it again: a readout sends the oldest entries the board holds (§11.9),
    /// the unconfirmed page first. Waiting for the link's end instead left a board that stays
    /// linked (a nearly full SD card, for hours) without that readout.
    public func declineFlashLogPage() {
        guard current?.download?.awaitsConfirm == true else { return }
        dropUnconfirmedPage()
        downloadEnded()
        emitFlashLog(flashLogLogging ?? .starting)
    }

    /// The readout is over on this link: reads rest between batches again, or a full one
    /// asked for while the streamed part was read starts.
    private func downloadEnded() {
        current?.download = nil
        current?.streamedPartLeaves = nil
        current?.operations.yield(.readPromptly(false))
        startWantedReadout()
    }

    private func downloadReceived(_ notification: GattNotification) {
        guard var downloader = current?.download, downloader.state != .finished else { return }
        let nanoseconds = Int64((notification.receivedAt - Self.epoch) / .nanoseconds(1))
        if let leaves = current?.streamedPartLeaves, case .success(.length)? = LogNotificationDecoder.decode(notification.bytes) {
            // Counted now: what the readout leaves unread was logged since `leaves` ago.
            current?.streamedPartLoggedBefore = notification.receivedAt - leaves
        }
        let step = downloader.receive(notification.bytes, at: nanoseconds)
        current?.download = downloader
        if step.resumed {
            // The board's count showed entries lost on the way: the page under way comes again.
            dropUnconfirmedPage()
            noteReadoutActivity()
        }
        current?.downloaded += step.samples.filter { $0.sensor == .gyro }.map(\.sample)
        current?.downloadedAccelerometer += step.samples.filter { $0.sensor == .accelerometer }.map(\.sample)
        write(step.writes)
        let progress = downloader.progress
        let finished = downloader.state == .finished
        if step.pageReady || finished {
            var page = FlashLogDownload(gyro: current?.downloaded ?? [], clock: description?.boardClock,
                                        clockReadAt: current?.clockReadAt ?? current?.handshakeEndedAt, duplicatesDropped: downloader.duplicatesDropped,
                                        orphanedEntries: downloader.orphanedEntries)
            page.complete = finished
            page.readoutsResumed = downloader.resumes
            page.entriesMissed = downloader.missedEntries
            page.accelerometer = current?.downloadedAccelerometer ?? []
            page.loggedBefore = current?.streamedPartLoggedBefore
            current?.downloaded = []
            current?.downloadedAccelerometer = []
            if finished {
                // The last page waits for its confirm only when the board ended it with 0B 0D.
                if !downloader.awaitsConfirm { downloadEnded() }
                emitFlashLog(flashLogLogging ?? .starting)
            }
            emit(.flashLogDownloaded(page))
        } else if current?.streamedPartLeaves == nil, case .success(.progress)? = LogNotificationDecoder.decode(notification.bytes) {
            // A read of the streamed part, every few seconds, is no download to show.
            emitFlashLog(.downloading(entriesLeft: Int(progress.left), secondsLeft: progress.secondsLeft))
        }
    }

    /// A fixed origin for the downloader's notification times.
    private static let epoch = ContinuousClock.now
}
