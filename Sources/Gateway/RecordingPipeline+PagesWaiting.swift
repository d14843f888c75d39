import Boards

/// Flash-log pages that come before the gap they fill has an end in the recorder
/// (``SessionController/pageWaitsForItsGap(board:)``): kept, unanswered, and handed to the
/// recorder in order once it has. The board waits at the page's end meanwhile and keeps the
/// page if its link goes first (only a confirm deletes one).
extension RecordingPipeline {
    /// Keeps `download` for later when its board's pages must wait (or pages wait before it);
    /// false when it can be handed on now.
    func keepPageWaiting(_ key: String, _ download: FlashLogDownload) -> Bool {
        guard pagesWaiting[key] != nil || controller.pageWaitsForItsGap(board: key) else { return false }
        pagesWaiting[key, default: []].append(download)
        return true
    }

    /// Hands on the pages kept for boards whose pages need not wait any more.
    func backfillPagesNoLongerWaiting() {
        for key in pagesWaiting.keys.sorted() where !controller.pageWaitsForItsGap(board: key) {
            for page in pagesWaiting.removeValue(forKey: key) ?? [] { backfill(key, page) }
        }
    }
}
