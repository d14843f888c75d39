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
    /// `bootOrigins` where each boot's tick 0 lies on the monotonic clock. Nothing is recorded
    /// while no session records or the board is not attached; the page then is not durable.
    @discardableResult
    public func recordLogged(board: String, gyro: [LoggedSample], accelerometer: [LoggedSample] = [], gyroScale: Double,
                             accelerometerScale: Double? = nil, bootOrigins: [UInt8: Int64], now: Int64? = nil) -> LoggedOutcome {
        var outcome = LoggedOutcome()
        guard session != nil, let stream = boards[board] else { return outcome }
        var recording = loggedRecordings[board] ?? LoggedRecording(gyroRate: stream.gyroRate, accelerometerRate: stream.accelerometerRate)
        for (uid, origin) in bootOrigins where recording.gyro.origins[uid] == nil {
            recording.gyro.origins[uid] = origin
            recording.accelerometer?.origins[uid] = origin
        }
        if let scale = accelerometerScale, recording.accelerometer != nil {
            for sample in accelerometer {
                guard let time = recording.accelerometer?.place(sample) else { continue }
                recording.accelerometerReadings.append(AccelerometerReading(
                    MotionSamples(single: sample.raw, scale: scale)[0], timestamp: timeBase.epochMilliseconds(monotonic: time)))
            }
        }
        var pairing = BackfilledAccelerometer(rate: stream.accelerometerRate ?? 0)
        pairing.readings = recording.accelerometerReadings
        let periodMs = 1000 / stream.gyroRate
        for sample in gyro {
            guard let monotonic = recording.gyro.place(sample) else { outcome.skipped += 1; continue }
            let time = timeBase.epochMilliseconds(monotonic: monotonic)
            // Logged before the session (the sensors started a moment before it).
            guard time >= (session?.startedAt ?? time) else { outcome.skipped += 1; continue }
            let value = MotionSamples(single: sample.raw, scale: gyroScale)[0]
            let located = stream.merger.locate(GyroItem(sample: value, missedBefore: 0, source: timeBase.source), time)
            var point = RecordedPoint(gyroscope: GyroReading(value, timestamp: time), location: located.location,
                                      missingLocation: located.missing, accelerometer: pairing.nearest(time), backfilled: true)
            if let previous = recording.lastPointTime {
                point.missedBefore = max(0, Int(((time - previous) / periodMs).rounded()) - 1)
                if point.missedBefore > 0 { point.gapMilliseconds = max(1, Int((time - previous).rounded())) }
            }
            recording.lastPointTime = time
            outcome.recorded += 1
            if commit(board: board, point: point, source: timeBase.source) { sealOpenChunk(board: board) }
        }
        // Accelerometer readings a later gyro point may still pair with (the newest second).
        if let last = recording.lastPointTime { recording.accelerometerReadings.removeAll { $0.timestamp < last - 1000 } }
        loggedRecordings[board] = recording
        outcome.durable = writeSegments(now: now, force: true)
        return outcome
    }
}

/// A logged board's timelines and what its next points continue from.
struct LoggedRecording {
    var gyro: LoggedTimeline
    var accelerometer: LoggedTimeline?
    /// Accelerometer readings placed but not yet paired past, in time order.
    var accelerometerReadings: [AccelerometerReading] = []
    /// Time of the board's last point, epoch ms.
    var lastPointTime: Double?

    init(gyroRate: Double, accelerometerRate: Double?) {
        gyro = LoggedTimeline(rateHertz: gyroRate)
        accelerometer = accelerometerRate.map { LoggedTimeline(rateHertz: $0) }
    }
}
