import Boards

/// Flash-log pages that come before the gap they fill has an end in the recorder
/// (``SessionController/pageWaitsForItsGap(board:)``), and pages of a read of the log's
/// streamed part that come before the stream is checked past them
/// (``SessionController/pageWaitsForTheStream(board:loggedBefore:)``): kept, unanswered, and
/// handed to the recorder in order once it has. The board waits at the page's end meanwhile
/// and keeps the page if its link goes first (only a confirm deletes one).
extension RecordingPipeline {
    /// Keeps `download` for later when its board's pages must wait (or pages wait before it);
    /// false when it can be handed on now.
    func keepPageWaiting(_ key: String, _ download: FlashLogDownload) -> Bool {
        guard pagesWaiting[key] != nil || pageWaits(key, download) else { return false }
        pagesWaiting[key, default: []].append(download)
        return true
    }

    /// Hands on the pages kept for boards whose pages need not wait any more.
    func backfillPagesNoLongerWaiting() {
        for key in pagesWaiting.keys.sorted() {
            guard let first = pagesWaiting[key]?.first, !pageWaits(key, first) else { continue }
            for page in pagesWaiting.removeValue(forKey: key) ?? [] { backfill(key, page) }
        }
    }

    /// Whether `page` of `key` must wait: for its gap's end, or, from a readout of the
    /// streamed part, for the stream to be checked past what it holds.
    private func pageWaits(_ key: String, _ page: FlashLogDownload) -> Bool {
        guard let before = page.loggedBefore else { return controller.pageWaitsForItsGap(board: key) }
        return controller.pageWaitsForTheStream(board: key, loggedBefore: timeline.nanoseconds(before))
    }
}
