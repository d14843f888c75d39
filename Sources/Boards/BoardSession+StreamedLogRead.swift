import MetaWear

/// Reading the flash log's streamed part while the stream is healthy (issue 21): the log is
/// emptied by page confirms, which need no pause in logging, so a gap's readout later reads
/// about the gap and not the whole session before it, and an always-mode board's flash never
/// fills.
extension BoardSession {
    /// Reads the log up to the entries the board logged in the last `leaving` (counted at the
    /// configured rates, a quarter over, so no fewer are left), page by page like
    /// ``downloadFlashLog()``; each page says what it was logged before
    /// (``FlashLogDownload/loggedBefore``), so the recorder confirms it once its stream has
    /// been checked that far. Nothing while a readout runs or waits to start, before the
    /// link streams again (``flashLogMayUseTheLink``), or where the log does not run on this
    /// link or was stopped. A MetaMotion S's open page is not waited for: what it holds is
    /// newer than what this readout takes.
    public func readStreamedFlashLog(leaving: Duration) {
        guard current?.flashLogging == true, current?.flashLogStopped == false, current?.download == nil,
              current?.readoutStartsAt == nil, !flashLogDownloadWanted, flashLogMayUseTheLink,
              let loggers = flashLoggers, let description, let capabilities = flashLogAvailability(description) else { return }
        let downloader = LogDownloader(revision: capabilities.revision, loggers: loggers, confirmsPagesItself: false,
                                       leavingNewest: entriesLogged(in: leaving))
        beginDownload(downloader, leaving: leaving)
    }

    /// Entries the board logs in `span` at the configured rates, a quarter over (the rates'
    /// tolerance): two entries per three-axis sample (metawear-logging.md §4.2).
    func entriesLogged(in span: Duration) -> UInt32 {
        let configuration = options.configuration
        let samplesPerSecond = (configuration.gyro?.rate.hertz ?? 0) + (configuration.accelerometer?.rate.hertz ?? 0)
        let seconds = Double(span.components.seconds) + Double(span.components.attoseconds) / 1e18
        return UInt32(min(Double(UInt32.max), (2 * samplesPerSecond * seconds * 1.25).rounded(.up)))
    }
}
