import MetaWear

/// A flash-log readout never waits for ever (issue 21, metawear-logging.md P6): the board
/// sends a page and waits for its confirm, so one notification lost on the way (a page end,
/// or the length reply) leaves both sides waiting, and the SDK has no timeout. When entries
/// or the length are due and nothing came for ``BoardSessionOptions/readoutStallTimeout``,
/// the readout is asked for again from the last confirmed page (``LogDownloader/resume()``):
/// the board sends what it still holds, the samples of the unfinished page are dropped and
/// come again, none twice. Notifications the link could not hand on mark the page under way
/// for reading again at its end.
extension BoardSession {
    /// Sleeps until the readout would be overdue and checks only then; while no readout runs
    /// (or the board waits for the recorder's confirm) it waits to be woken.
    func watchReadout(_ wakes: AsyncStream<Void>) async {
        await watch(wakes, due: { self.readoutDue() }) {
            if let start = self.current?.readoutStartsAt {
                if start <= .now { self.downloadFlashLog(openPageFilled: true) }
            } else if let due = self.readoutDue(), due <= .now {
                self.resumeReadout()
            }
        }
    }

    /// When the running readout counts as stopped, or a deferred one starts; nil while nothing
    /// is due from the board.
    private func readoutDue() -> ContinuousClock.Instant? {
        if let start = current?.readoutStartsAt { return start }
        guard let download = current?.download, download.state == .reading || download.state == .awaitingLength,
              let last = current?.downloadActivityAt else { return nil }
        return last.advanced(by: options.readoutStallTimeout)
    }

    /// The board was heard from, or the readout started or goes on after a confirm: the
    /// watchdog measures from now.
    func noteReadoutActivity() {
        current?.downloadActivityAt = .now
        current?.readoutWatch.yield()
    }

    /// Asks the board for the readout again from the last confirmed page; the samples of the
    /// page under way are dropped (they come again).
    func resumeReadout() {
        guard var downloader = current?.download else { return }
        let writes = downloader.resume()
        guard !writes.isEmpty else { return }
        current?.download = downloader
        dropUnconfirmedPage()
        write(writes)
        noteReadoutActivity()
    }

    /// Drops the samples of the page under way: a resumed readout sends them again.
    func dropUnconfirmedPage() {
        current?.downloaded = []
        current?.downloadedAccelerometer = []
    }

    /// Notifications the link could not hand on since the last look are lost: the page under
    /// way is read again when it ends instead of being reported without them
    /// (``LogDownloader/notificationsLost()``).
    func checkLinkDrops() {
        guard let link = current?.link else { return }
        let dropped = link.droppedNotifications
        guard dropped != current?.droppedNotificationsSeen else { return }
        current?.droppedNotificationsSeen = dropped
        current?.download?.notificationsLost()
    }
}
