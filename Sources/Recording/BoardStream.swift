import GNSS
import MetaWear

/// One attached board inside ``SessionController``: its timestampers, location merger, the
/// accelerometer samples a gyro point may pair with, and its open chunk and segment.
///
/// A reference, so the controller's dictionary hands out the stream and every access changes
/// it in place. As a struct (several hundred bytes) each access through the dictionary moved
/// it out and back and allocated the accessor's frame, and a read copied all its arrays'
/// references: several times per point.
final class BoardStream {
    let gyroRate: Double
    let accelerometerRate: Double?
    var gyro: SampleTimestamper<MotionSamples>
    var accelerometer: SampleTimestamper<MotionSamples>?
    var merger: LocationMerger<GyroItem>
    var recentAccelerometer: [AccelerometerReading] = []
    /// Time of the newest stamped accelerometer sample, epoch ms.
    var accelerometerStampedUntil = -Double.infinity
    /// Gyro points waiting until the accelerometer stream is stamped past them.
    var waitingForAccelerometer: [LocationMerger<GyroItem>.Located] = []
    var committed: [UInt8] = []
    /// CRC-32 of `committed`, extended as points are appended.
    var committedChecksum: UInt32 = 0
    var committedCount = 0
    var firstTimestamp = 0.0
    var lastTimestamp = 0.0
    var worstSource = TimeSource.systemClockSynchronised
    var missedInChunk = 0
    /// Time of the board's previous point in this session (epoch ms), kept across a
    /// re-attach so the gap of a reconnect is measured; nil before its first point.
    var previousPointTime: Double?
    /// When this stream's last gyro notification arrived (monotonic ns); nil before its first.
    /// A new link's first stamps may lie hundreds of ms off, its arrivals do not: with the
    /// newest point, it tells a stream stalled at a stop from one that is only late.
    var lastGyroArrival: Int64?
    /// Set on re-attach: the first point of the new stream counts the samples the link
    /// drop cost from the time since `previousPointTime`.
    var resumedStream = false
    /// It resumed from the session's start (``SessionController/ResumePoint/fromTheStart``).
    var resumedFromTheStart = false
    /// When this stream began, epoch ms (its board attached, or the session started with it
    /// linked); nil when not told.
    var began: Double?
    /// The stream began in the session with nothing before it (no resume point): the board
    /// measures and logs from `began` (its sensors on, or started then). A first point later
    /// than the stall rule allows after it, or none by the stop, leaves a gap from `began` that
    /// opens the session (``SessionController/openingStall(_:firstPointAt:)``).
    var opensAtItsStart = false
    var seq = 0
    /// This board's points in the session so far (sealed, failed and open chunks): the
    /// index the next committed point gets.
    var pointsCommitted = 0
    /// Points in this session's segments (or chunks) so far: the next segment's first index.
    var pointsWritten = 0
    /// Committed points at or past `pointsWritten`: the start of the next segment.
    var unwritten: [UInt8] = []
    var unwrittenCount = 0
    var unwrittenSource = TimeSource.systemClockSynchronised
    /// Whether the board keeps a flash log that can fill its gaps: points after a gap are
    /// then held until the backfill comes (or the wait ends). Its log tells a delay from a
    /// loss, so a step the stream's end cuts short is marked, in both sensors' stamps alike (a
    /// delay the log shows moves both: ``SampleTimestamper/unconfirmedStepAtTheEndIsALoss``).
    var backfillExpected = false {
        didSet {
            gyro.unconfirmedStepAtTheEndIsALoss = backfillExpected
            accelerometer?.unconfirmedStepAtTheEndIsALoss = backfillExpected
        }
    }
    /// Points after a gap, waiting for the board's flash log to fill it.
    var hold: BackfillHold?
    /// The accelerometer readings of the points journaled provisionally, and the committed
    /// points to journal again because theirs changed.
    var journaledReadings = JournaledReadings()
    /// Whether the session's board list names this board (from its first committed point).
    var listedInSession = false

    init(gyroRate: Double, accelerometerRate: Double?, gyro: SampleTimestamper<MotionSamples>,
         accelerometer: SampleTimestamper<MotionSamples>?, merger: LocationMerger<GyroItem>) {
        self.gyroRate = gyroRate
        self.accelerometerRate = accelerometerRate
        self.gyro = gyro
        self.accelerometer = accelerometer
        self.merger = merger
    }

    /// The sample periods the board's log's ticks show (``LoggedPeriod``): its timestampers take
    /// those they know (``SampleTimestamper/takeBoardPeriod(_:)``).
    func takeBoardPeriods(_ periods: (gyro: LoggedPeriod, accelerometer: LoggedPeriod)) {
        if let period = periods.gyro.nanoseconds { gyro.takeBoardPeriod(period) }
        if let period = periods.accelerometer.nanoseconds { accelerometer?.takeBoardPeriod(period) }
    }

    /// The point of a sample the merger released, with the accelerometer sample nearest it.
    func point(_ l: LocationMerger<GyroItem>.Located) -> RecordedPoint {
        RecordedPoint(gyroscope: GyroReading(l.payload.sample, timestamp: l.time), location: l.location,
                      missingLocation: l.missing, accelerometer: nearestAccelerometer(to: l.time),
                      missedBefore: l.payload.missedBefore)
    }

    /// The accelerometer sample nearest `time` within half an accelerometer period.
    func nearestAccelerometer(to time: Double) -> AccelerometerReading? {
        guard let rate = accelerometerRate else { return nil }
        // Samples older than a second before this gyro sample can never match again.
        let stale = recentAccelerometer.prefix(while: { $0.timestamp < time - 1000 }).count
        if stale > 256 { recentAccelerometer.removeFirst(stale) }
        guard let b = recentAccelerometer.nearest(to: time), abs(b.timestamp - time) <= 500 / rate + 1 else { return nil }
        return b
    }

    /// Adds one point to the open chunk (and to the next segment when it is not written yet);
    /// true when the chunk now holds `chunkSize` points.
    func commit(_ p: RecordedPoint, source: TimeSource, chunkSize: Int) -> Bool {
        if committedCount == 0 { firstTimestamp = p.gyroscope.timestamp; worstSource = source }
        let start = committed.count
        PointCodec.append(p, to: &committed)
        committedChecksum = CRC32.checksum(committed, continuing: committedChecksum, from: start)
        committedCount += 1
        lastTimestamp = p.gyroscope.timestamp
        worstSource = max(worstSource, source)
        missedInChunk += p.missedBefore
        // Not yet in a segment (arrived and committed since the last write): the next
        // segment starts with it.
        if pointsCommitted >= pointsWritten {
            if unwrittenCount == 0 { unwrittenSource = source }
            unwritten.append(contentsOf: committed[start...])
            unwrittenCount += 1
            unwrittenSource = max(unwrittenSource, source)
        } else if accelerometerRate != nil {
            journaledReadings.committed(p, at: pointsCommitted, bytes: committed[start...], source: source)
        }
        pointsCommitted += 1
        return committedCount >= chunkSize
    }
}

/// A gyro sample waiting in the location merger, with what its point needs besides the time.
struct GyroItem {
    var sample: MotionSample
    var missedBefore: Int
    var source: TimeSource
}

/// Points of one board held after a gap until its flash log fills the gap, so the backfilled
/// samples go into the open chunk in time order, before it is sealed. What is held is
/// journaled as held records each second (a crash loses at most the last second), and the
/// log's pages are confirmed (deleted on the board) only once what they hold is journaled.
struct BackfillHold {
    /// How long points are held at most, milliseconds of their time.
    static let defaultWait = 60_000.0

    /// Time of the board's last committed point before the gap, epoch ms (nil: none).
    var after: Double?
    /// The gap opens the board's part of the session (`after` is the session's start): what
    /// its log or stream gives from the start is the session's, and none is counted missing
    /// before the first of it, as before any board's first point. Its sensors may only start
    /// with the session (they are off between sessions by default, and a board away at the
    /// stop may have linked since with them off): counted from the start, the 30-130 ms they
    /// took to start were marked missing (StallAtStartEndToEndTests, load 4-7).
    var opensSession = false
    /// The index the hold's first point gets (the board's committed points when it began).
    var startIndex: Int
    /// The held points in order, with their time source.
    var points: [(point: RecordedPoint, source: TimeSource)] = []
    /// Logged samples downloaded so far (pages of one or more readouts).
    var logged = LoggedSamples()
    /// Backfilled points placed from the pages so far and not yet journaled.
    var unjournaledBackfill: [RecordedPoint] = []
    /// How many of the board's points after the gap (held, then still provisional, in sample
    /// order) held records hold.
    var journaled = 0
    /// A second readout was asked for, the first having ended before the gap did.
    var readAgain = false
    /// Logged samples downloaded when the log was last asked for again for a mark past its end
    /// (``marksPastTheLog(scale:)``), and how often it was: it is asked again only after a
    /// readout that brought more, and at most ``readsForMarks`` times (a mark whose sample the
    /// log will never hold waits for the hold's end).
    var loggedWhenReadForAMark = 0
    var readForMarks = 0
    static let readsForMarks = 3
    /// Pages of the log the store refused since it last took one: each refusal ends its
    /// readout unconfirmed, and the log is asked for again at once, up to
    /// ``declinedReadoutsReadAgain`` times in a row.
    var declinedInARow = 0

    /// How often in a row the log is read again at once after the store refused a page. A
    /// store that refuses the same page four times is full or failing, not busy: reading on
    /// would only read the log again and again. The gap then waits for its wait (or the
    /// board's next link), and the board keeps the page, unconfirmed.
    static let declinedReadoutsReadAgain = 3

    /// Time of the first point of the board's newest link that the hold took in, epoch ms
    /// (nil: none since the hold began).
    var newestLinkSince: Double?
    /// Where in ``points`` each newer link's points begin: a link's timestamper starts afresh,
    /// so a delay its predecessor's stamps carried does not reach past it.
    var linkStarts: [Int] = []

    /// When the wait for the log began, epoch ms: the first held point, or the first point of
    /// a newer link. A link that drops while points wait joins its gap to the hold, and the
    /// log of that gap can only be read once the board is back: counted from the first held
    /// point, a board away for more than the wait less a download had the whole stretch
    /// committed unfilled before its log arrived (real-BlueZ VM: away 30-64 s, docs/bluez-vm.md).
    var since: Double { newestLinkSince ?? points.first?.point.gyroscope.timestamp ?? 0 }

    /// When the store last took a page of the log that brought samples, epoch ms (nil: none yet).
    /// A session never pauses the board's logging to trim it, so the first readout after a
    /// long healthy stretch reads all of it before it reaches the gap: the points wait as long
    /// as its pages come (``isBeingRead(now:wait:)``).
    var lastPageAt: Double?

    /// Whether the store took such a page within the last `wait` ms: the readout is on its way.
    /// Not past ``longestReadInWaits`` waits from the first held point, which bounds the points
    /// held in memory (at the default wait 30 min: 180,000 points at 100 Hz) for a log read
    /// slower than the board fills it.
    func isBeingRead(now: Double, wait: Double) -> Bool {
        guard now - firstHeld <= Self.longestReadInWaits * wait else { return false }
        return lastPageAt.map { now - $0 <= wait } ?? false
    }

    /// Longest a hold lasts from its first point, in waits, while its log's pages come.
    static let longestReadInWaits = 30.0

    /// Time of the first held point, epoch ms.
    var firstHeld: Double { points.first?.point.gyroscope.timestamp ?? 0 }

    /// Longest a hold lasts from its first point, in waits, however often its board's link
    /// drops before its log is read (at the default wait 5 min: 30,000 points at 100 Hz).
    static let longestHoldInWaits = 5.0

    /// Whether a held point's mark lies past the log downloaded so far: the log does not hold
    /// its sample (at `scale` LSB per unit). A mark made while a readout ran (its step confirmed
    /// 5 s after it began) joins the points held for an earlier one, and the readout ends
    /// before it: committed then, a delay the log would have shown stayed a false mark, and
    /// the points after it as late as the delay (the real-BlueZ VM's latency steps, issue 21).
    /// A loss's mark is past the log too until the log holds the sample after the loss.
    func marksPastTheLog(scale: Double) -> Bool {
        let marked = points.filter { $0.point.missedBefore > 0 && !$0.point.backfilled }
        guard !marked.isEmpty else { return false }
        let logged = Set(self.logged.samples.map(\.raw))
        return marked.contains { !logged.contains(RawVector(stored: $0.point.gyroscope, scale: scale)) }
    }

    /// Whether the log downloaded so far reaches past the gap: it holds one of the held points
    /// (the raw counts of a sample streamed after the gap, at `scale` LSB per unit).
    func logReachesPastTheGap(scale: Double) -> Bool {
        let logged = Set(self.logged.samples.map(\.raw))
        return points.contains { logged.contains(RawVector(stored: $0.point.gyroscope, scale: scale)) }
    }
}

/// Logged samples downloaded from a board's flash log (pages of one or more readouts), in
/// readout order, each once, with where each boot's tick 0 lies.
struct LoggedSamples {
    private(set) var samples: [LoggedSample] = []
    private var seen: Set<LoggedSample> = []
    /// Where each boot's tick 0 lies (board clock reads), by reset UID.
    private(set) var bootOrigins: [UInt8: Int64] = [:]
    /// The boots the samples are of.
    private(set) var resetUIDs: Set<UInt8> = []

    /// Adds a page's samples, skipping those a restarted readout sends again, and the boot
    /// origins read with it; returns the new samples.
    @discardableResult
    mutating func add(_ page: [LoggedSample], bootOrigins origins: [UInt8: Int64]) -> [LoggedSample] {
        let fresh = page.filter { seen.insert($0).inserted }
        samples += fresh
        resetUIDs.formUnion(fresh.lazy.map(\.resetUID))
        for (uid, origin) in origins { bootOrigins[uid] = origin }
        return fresh
    }
}

/// A board's streamed samples of one sensor of the last two minutes (monotonic nanoseconds and
/// raw counts), kept across its links: what logged samples are matched against.
struct StreamedWindow {
    /// How much of the stream is kept, nanoseconds.
    static let span: Int64 = 120_000_000_000

    var samples: [BackfillPlanner.StreamedSample] = []
    /// While points wait for a gap's log: keep every sample from this time on (monotonic
    /// nanoseconds), however old. The readout of a long healthy stretch can outlast ``span``
    /// (5 minutes of stream: 2.5 minutes at a simulated board's pace), and the samples streamed
    /// after the gap while it ran, forgotten, no longer kept their logged twins out of the gap's
    /// fill: the same samples stored twice (602 of an 8 s gap's 1,402 after 10 minutes).
    var keptFrom: Int64?
    /// LSB per unit (°/s, g) of the streamed sensor (the range in force).
    var scale: Double?
    /// The number the samples of the board's current link get.
    private(set) var link = 0

    /// Whether the window holds `sample`: its raw counts within 1.5 ms of its time (a
    /// stored point's time went through epoch milliseconds, and may have been put 1 ms after
    /// the point before it, as the window's copy was).
    func holds(_ sample: BackfillPlanner.StreamedSample) -> Bool {
        let tolerance: Int64 = 1_500_000
        var low = samples.firstIndex(notBefore: sample.time - tolerance)
        while low < samples.count, samples[low].time <= sample.time + tolerance {
            if samples[low].raw == sample.raw { return true }
            low += 1
        }
        return false
    }

    /// The board's next samples come over a new link (a new stream, its own timestamper).
    mutating func beginLink() { link += 1 }

    /// Adds stamped samples (raw counts at their monotonic times) with their scale.
    mutating func append(_ stamped: [SampleTimestamper<MotionSamples>.Stamped]) {
        for s in stamped {
            scale = s.payload.scale
            for (k, t) in s.times.enumerated() { append(BackfillPlanner.StreamedSample(time: t, raw: s.payload.raw(k), link: link)) }
        }
    }

    /// Adds samples in time order, forgetting those older than ``span``. A new link's first
    /// samples stamped before the last one of the link before go 1 ms after it, as their
    /// points do (``SessionController/overlapPlacedAfter``): the planner needs time order, and
    /// places a gap's samples between the same neighbours the session has.
    mutating func append(_ sample: BackfillPlanner.StreamedSample) {
        var sample = sample
        if let last = samples.last, sample.time <= last.time { sample.time = last.time + 1_000_000 }
        samples.append(sample)
        // Trimmed in steps, so the copy is paid once per thousand samples.
        if samples.count > 1024, let first = samples.first, sample.time - first.time > Self.span + 10_000_000_000,
           keptFrom.map({ first.time < $0 }) ?? true {
            let keep = samples.firstIndex { kept in
                sample.time - kept.time <= Self.span || keptFrom.map { kept.time >= $0 } == true
            } ?? samples.count
            samples.removeFirst(keep)
        }
    }
}
