import MetaWear

/// A board's sample period by its own clock: the ticks between neighbouring samples of its flash
/// log, summed over the readouts of a session (issues 18 §2.6, 21).
///
/// From arrivals alone the rate fit cannot tell a board's rate from a link whose latency stays
/// up or down for seconds: the real-BlueZ VM's under load tilted it to its 5 % bound, and a
/// healthy 100 Hz stream was stamped at 105 Hz, 1.7 s before the board sent its samples by the
/// session's end (session group at cbb2391). The log's ticks are 1.46 ms coarse but exact: over
/// a few seconds of neighbours the period comes out within a few hundredths of a per cent,
/// whatever the link did, and it is the board's real rate (a BMI160's or BMI270's is not quite
/// the nominal one).
struct LoggedPeriod {
    private var ticks: UInt64 = 0
    private var spans = 0
    private var last: LoggedSample?
    /// The nominal period the neighbours were counted at, ms: a new rate counts afresh.
    private var nominalPeriodMs: Double?

    init(nominalPeriodMs: Double? = nil) { self.nominalPeriodMs = nominalPeriodMs }

    /// Neighbours counted before the period is trusted: 5 s at 100 Hz, the ticks' 1.46 ms then
    /// 0.03 % of a period.
    static let minimumSpans = 500

    /// Adds a readout page's samples (oldest first) of a sensor logging every `nominalPeriodMs`
    /// ms. Two samples of one boot less than one and a half periods apart are neighbours; a
    /// longer span is a sensor pause (a stream restart stops it for 0.2-0.5 s), and a sample
    /// read again (a readout restarted) is no later than the last one.
    mutating func add(_ page: [LoggedSample], nominalPeriodMs: Double) {
        if self.nominalPeriodMs != nominalPeriodMs { self = LoggedPeriod(nominalPeriodMs: nominalPeriodMs) }
        let longest = 1.5 * nominalPeriodMs / BoardTicks.millisecondsPerTick
        for sample in page {
            if let last, last.resetUID == sample.resetUID, sample.tick <= last.tick { continue }
            defer { last = sample }
            guard let last, last.resetUID == sample.resetUID, Double(sample.tick - last.tick) <= longest else { continue }
            ticks += UInt64(sample.tick - last.tick)
            spans += 1
        }
    }

    /// The period, nanoseconds, once ``minimumSpans`` neighbours are counted.
    var nanoseconds: Double? {
        spans >= Self.minimumSpans ? BoardTicks.milliseconds(ticks) * 1e6 / Double(spans) : nil
    }
}
