import Boards

/// A graceful shutdown does not wait on the boards' flash-log readouts (issue 18 §2.7: exit
/// within 2 s). A readout's page costs the pipeline its placement against the gap it fills and
/// a forced commit, and at a shutdown it buys nothing: the board deletes a page only on its
/// confirm, and a stopping board's link writes nothing more, so no confirm sent now would reach
/// it. Handled anyway, the page ran in the seal's wait before the boards' last state change, or
/// (a page that waited for its gap) in the seal itself, after the session's stop: on mwsim a
/// waiting page handed on there took 14 of the seal's 38 ms, and in the loaded real-BlueZ VM
/// the boards' last samples reached the pipeline 0.5 s after the boards had stopped, the seal
/// 0.3 s later still, past the 2 s.
///
/// So from the moment the seal is asked for (``sealOnceBoardsStop()``, or ``shutdown()``) a
/// backfill page is left unanswered: not placed, not stored, not confirmed. Nothing is lost:
/// the board keeps the page (metawear-logging.md §5.5), the session's stop keeps the gap it
/// would have filled with the session's end (a stop gap), and the next run's readout reads the
/// page again and fills that gap, as after a kill. A page of a readout of the streamed part
/// holds only samples the stream brought. A logged session's pages (rates beyond the link) are
/// its recording and are still taken.
extension RecordingPipeline {
    /// What a board's readout left unanswered at the shutdown.
    struct PagesLeft {
        var pages = 0
        var samples = 0
    }

    /// Whether a backfill page of `key` is left for the next run because the shutdown's seal
    /// was asked for (counted for the line at the seal).
    func leavesPageToTheNextRun(_ key: String, _ download: FlashLogDownload) -> Bool {
        guard leavesReadoutsToTheNextRun else { return false }
        pagesLeftAtShutdown[key, default: PagesLeft()].add(download)
        return true
    }

    /// From now on backfill pages are left to the next run, those waiting for their gap or for
    /// the stream too: the shutdown does not place them (see above).
    func leaveReadoutsToTheNextRun() {
        leavesReadoutsToTheNextRun = true
        for (key, pages) in pagesWaiting {
            for page in pages { pagesLeftAtShutdown[key, default: PagesLeft()].add(page) }
        }
        pagesWaiting.removeAll()
        backfillReadouts.removeAll()
    }

    /// Says, per board, what the shutdown left of its readout on the board.
    func reportPagesLeftAtShutdown() {
        for (key, left) in pagesLeftAtShutdown.sorted(by: { $0.key < $1.key }) {
            logger.notice("""
                shutdown: board \(key)'s flash-log readout left unanswered, \(left.pages) page(s) with \(left.samples) \
                gyro samples: the board keeps them and the next run's readout fills the gaps they were for
                """)
        }
        pagesLeftAtShutdown.removeAll()
    }
}

private extension RecordingPipeline.PagesLeft {
    mutating func add(_ download: FlashLogDownload) {
        pages += 1
        samples += download.gyro.count
    }
}
