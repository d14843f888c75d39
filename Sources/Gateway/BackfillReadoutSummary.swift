import Boards
import Recording

/// What one readout of a board's flash log did for its gaps, page by page, for the journal
/// line at its end ("board … flash log: …").
///
/// Its pages each fill part of a restart's or a stop's gap, and the last page is often empty:
/// counted from the last page alone the line said "0 samples downloaded" and left out every
/// earlier page's fills, and a readout that ended before its gap did logged "0 filled" as if
/// the gap were given up, while the log was being read again. A page the store refused is
/// declined and read again by the next readout, whose summary this one still is: its samples
/// count once, when a readout of it is taken (they were counted at each reading).
struct BackfillReadoutSummary {
    /// Gyro samples of the pages the store took.
    private(set) var downloaded = 0
    /// Samples the pages filled into gaps, and of those, the ones sealed into an earlier session.
    private(set) var filled = 0
    private(set) var filledIntoEarlierSessions = 0
    /// The last page's outcome: its counts of what was placed are over the whole log read so far.
    private(set) var last = SessionController.BackfillOutcome()
    private(set) var lastPage: FlashLogDownload?

    /// Adds a page and what the recorder did with it.
    mutating func add(_ page: FlashLogDownload, _ outcome: SessionController.BackfillOutcome) {
        if outcome.durable { downloaded += page.gyro.count }
        filled += outcome.filled
        filledIntoEarlierSessions += outcome.filledIntoEarlierSessions
        last = outcome
        lastPage = page
    }

    /// The journal line's text after "flash log: ".
    var text: String {
        let earlier = filledIntoEarlierSessions > 0 ? " (\(filledIntoEarlierSessions) into an earlier session)" : ""
        let again = last.readAgain ? " (a gap it ended short of stays open: the log is read again)" : ""
        return "\(downloaded) samples downloaded, \(filled) filled a gap\(earlier), \(last.stillMissing) still missing\(again), "
            + "\(last.alreadyStreamed) streamed, \(last.outsideGap) outside the gap, \(last.unplaced) unplaced, "
            + "\(last.collisions) at a streamed sample's time, \(lastPage?.duplicatesDropped ?? 0) resent entries dropped"
            + (lastPage.map(RecordingPipeline.readoutRecovery) ?? "")
    }
}
