import MetaWear

/// Recording a board that logs its sensors instead of streaming them (rates beyond the link,
/// issue 21 part 3): each page of its flash log's download becomes the board's points, on
/// the session's time base (``LoggedTimeline``), located from the GNSS fixes by time, marked
/// `backfilled` (they came from the board's log, not the link), and committed to the board's
/// open chunk in order like streamed points (2,000 to a chunk); the page may be deleted on
/// the board once they are written.
extension SessionController {
    /// What one page of a logged board did.
    public struct LoggedOutcome: Hashable, Sendable {
        /// Points added to the session.
        public var recorded = 0
        /// Samples recorded before (a page read again) or without a board clock.
        public var skipped = 0
        /// Whether what the page holds is in the store (the board may delete it).
        public var durable = false

        /// Nothing recorded yet.
        public init() {}
    }

    /// The gyro (and `accelerometer`) samples of one page of `board`'s log, in readout order.
    /// `gyroScale` and `accelerometerScale` are the ranges' LSB per unit while logging (P2);
    /// `bootOrigins` where each boot's tick 0 lies on the monotonic clock. The samples a
    /// stopped session still waits for (``LoggedRest``) are sealed into it first; the rest is
    /// recorded into the session that records, when the board is attached. With no rest and
    /// nothing recording, nothing is recorded and the page is not durable.
    @discardableResult
    public func recordLogged(board: String, gyro: [LoggedSample], accelerometer: [LoggedSample] = [], gyroScale: Double,
                             accelerometerScale: Double? = nil, bootOrigins: [UInt8: Int64], now: Int64? = nil) -> LoggedOutcome {
        var outcome = LoggedOutcome()
        var page = LoggedPage(gyro: gyro, accelerometer: accelerometer, gyroScale: gyroScale, accelerometerScale: accelerometerScale,
                              bootOrigins: bootOrigins)
        let restsStored = fillLoggedRests(board: board, page: &page, outcome: &outcome, now: now)
        guard let session, let stream = boards[board] else {
            // Read out for stopped sessions: what no rest took was logged while no session
            // recorded, and nothing keeps it.
            outcome.durable = loggedDrains.contains(board) && restsStored
            return outcome
        }
        var recording = loggedRecordings[board] ?? LoggedRecording(gyroRate: stream.gyroRate, accelerometerRate: stream.accelerometerRate)
        // Logged before the session (the sensors started a moment before it).
        let placed = place(page, on: &recording, from: session.startedAt, through: .infinity)
        outcome.skipped += placed.skipped
        loggedRecordings[board] = recording
        // Its boot origins are kept before its points are (a restart places the rest with them).
        keepLoggedSession(board: board)
        for point in placed.points {
            outcome.recorded += 1
            if commit(board: board, point: point, source: timeBase.source) { sealOpenChunk(board: board) }
        }
        outcome.durable = restsStored && writeSegments(now: now, force: true)
        return outcome
    }

    /// `page`'s samples placed on `recording`'s timelines (the gyro points located by the
    /// fixes kept for logged boards, paired with the nearest accelerometer sample), those with
    /// times from `start` through `end` as points in order; the page keeps the samples placed
    /// after `end` (for a later session) and those without a boot origin.
    func place(_ page: LoggedPage, on recording: inout LoggedRecording, from start: Double, through end: Double)
        -> (points: [RecordedPoint], skipped: Int, later: LoggedPage) {
        var later = page
        later.gyro = []
        later.accelerometer = []
        for (uid, origin) in page.bootOrigins where recording.gyro.origins[uid] == nil {
            recording.gyro.origins[uid] = origin
            recording.accelerometer?.origins[uid] = origin
        }
        if let scale = page.accelerometerScale, recording.accelerometer != nil {
            for sample in page.accelerometer {
                guard let monotonic = recording.accelerometer?.place(sample) else {
                    if recording.accelerometer?.origins[sample.resetUID] == nil { later.accelerometer.append(sample) }
                    continue
                }
                let time = timeBase.epochMilliseconds(monotonic: monotonic)
                if time > end { later.accelerometer.append(sample); continue }
                recording.accelerometerReadings.append(AccelerometerReading(MotionSamples(single: sample.raw, scale: scale)[0],
                                                                            timestamp: time))
            }
        }
        var pairing = BackfilledAccelerometer(rate: recording.accelerometerRate ?? 0)
        pairing.readings = recording.accelerometerReadings
        let periodMs = 1000 / recording.gyroRate
        var points: [RecordedPoint] = []
        var skipped = 0
        for sample in page.gyro {
            guard let monotonic = recording.gyro.place(sample) else {
                if recording.gyro.origins[sample.resetUID] == nil { later.gyro.append(sample) }
                skipped += 1
                continue
            }
            let time = timeBase.epochMilliseconds(monotonic: monotonic)
            if time > end { later.gyro.append(sample); continue }
            guard time >= start else { skipped += 1; continue }
            let value = MotionSamples(single: sample.raw, scale: page.gyroScale)[0]
            let located = loggedFixes.locate(GyroItem(sample: value, missedBefore: 0, source: timeBase.source), time)
            var point = RecordedPoint(gyroscope: GyroReading(value, timestamp: time), location: located.location,
                                      missingLocation: located.missing, accelerometer: pairing.nearest(time), backfilled: true)
            if let previous = recording.lastPointTime {
                point.missedBefore = GapCount.missed(stepMs: time - previous, periodMs: periodMs)
                if point.missedBefore > 0 { point.gapMilliseconds = GapCount.milliseconds(missed: point.missedBefore, stepMs: time - previous) }
            }
            recording.lastPointTime = time
            points.append(point)
        }
        // Accelerometer readings a later gyro point may still pair with (the newest second).
        if let last = recording.lastPointTime { recording.accelerometerReadings.removeAll { $0.timestamp < last - 1000 } }
        return (points, skipped, later)
    }
}

/// One page of a logged board's download, as ``SessionController/recordLogged(board:gyro:accelerometer:gyroScale:accelerometerScale:bootOrigins:now:)`` takes it.
struct LoggedPage {
    var gyro: [LoggedSample]
    var accelerometer: [LoggedSample]
    var gyroScale: Double
    var accelerometerScale: Double?
    var bootOrigins: [UInt8: Int64]
}

/// A logged board's timelines and what its next points continue from.
struct LoggedRecording {
    let gyroRate: Double
    let accelerometerRate: Double?
    var gyro: LoggedTimeline
    var accelerometer: LoggedTimeline?
    /// Accelerometer readings placed but not yet paired past, in time order.
    var accelerometerReadings: [AccelerometerReading] = []
    /// Time of the board's last point, epoch ms.
    var lastPointTime: Double?

    init(gyroRate: Double, accelerometerRate: Double?) {
        self.gyroRate = gyroRate
        self.accelerometerRate = accelerometerRate
        gyro = LoggedTimeline(rateHertz: gyroRate)
        accelerometer = accelerometerRate.map { LoggedTimeline(rateHertz: $0) }
    }
}
