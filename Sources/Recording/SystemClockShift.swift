/// Moving times taken on the uncorrected system clock onto GNSS time (issue 21).
///
/// While the system clock is not synchronised and no fix has given the GNSS correction yet,
/// every time the recorder converts from the monotonic clock is on the system clock. The first
/// fix's correction applies to all of them (``TimeBase/correction(at:)`` converts the times
/// before it with the first correction): each moves by the same number of milliseconds.
extension RecordedPoint {
    /// The point with each of its times (gyroscope, accelerometer, location) `offset` ms later.
    public func shifted(by offset: Double) -> RecordedPoint {
        var p = self
        p.gyroscope.timestamp += offset
        p.accelerometer?.timestamp += offset
        p.location?.timestamp += offset
        return p
    }
}

extension PointCodec {
    /// Encoded points with every time `offset` ms later; bytes that do not decode are kept as
    /// they are (nil), never dropped.
    public static func shifted(_ bytes: [UInt8], by offset: Double) -> [UInt8]? {
        guard let points = try? decode(bytes) else { return nil }
        return encode(points.map { $0.shifted(by: offset) })
    }
}

extension TimeSource {
    /// The source of a time of this source once converted with the first GNSS correction: an
    /// unsynchronised one becomes GNSS-corrected, the others stay.
    var convertedWithTheFirstFix: TimeSource { self == .unsynchronisedSystemClock ? .gnssCorrected : self }
}

extension ChunkToSeal {
    /// The chunk with its points `offset` ms later, GNSS-corrected (an unsynchronised chunk);
    /// nil when its bytes do not decode.
    func shiftedOntoGNSSTime(by offset: Double) -> ChunkToSeal? {
        guard timeSource == .unsynchronisedSystemClock else { return self }
        guard let bytes = PointCodec.shifted(self.bytes, by: offset) else { return nil }
        var chunk = self
        chunk.bytes = bytes
        chunk.checksum = chunk.checksum.map { _ in CRC32.checksum(bytes) }
        chunk.firstTimestamp += offset
        chunk.lastTimestamp += offset
        chunk.timeSource = .gnssCorrected
        return chunk
    }
}

extension BoardStream {
    /// Moves every epoch time the stream keeps `offset` ms later, onto GNSS time: the points of
    /// its open chunk and next segment, the samples waiting for a fix or an accelerometer
    /// reading, the readings they may pair with, its last point, its start and its hold.
    func shiftOntoGNSSTime(by offset: Double) {
        merger.shiftAll(by: offset) { $0.source = $0.source.convertedWithTheFirstFix }
        for k in recentAccelerometer.indices { recentAccelerometer[k].timestamp += offset }
        accelerometerStampedUntil += offset
        for k in waitingForAccelerometer.indices {
            waitingForAccelerometer[k].time += offset
            waitingForAccelerometer[k].location?.timestamp += offset
            waitingForAccelerometer[k].payload.source = waitingForAccelerometer[k].payload.source.convertedWithTheFirstFix
        }
        if committedCount > 0, let bytes = PointCodec.shifted(committed, by: offset) {
            committed = bytes
            committedChecksum = CRC32.checksum(bytes)
            firstTimestamp += offset
            lastTimestamp += offset
            worstSource = worstSource.convertedWithTheFirstFix
        }
        if unwrittenCount > 0, let bytes = PointCodec.shifted(unwritten, by: offset) {
            unwritten = bytes
            unwrittenSource = unwrittenSource.convertedWithTheFirstFix
        }
        previousPointTime? += offset
        began? += offset
        hold?.shift(by: offset)
        journaledReadings.shift(by: offset)
    }
}

extension BackfillHold {
    /// Moves the held points and every epoch time of the hold `offset` ms later (GNSS-corrected).
    mutating func shift(by offset: Double) {
        after? += offset
        points = points.map { (point: $0.point.shifted(by: offset), source: $0.source.convertedWithTheFirstFix) }
        unjournaledBackfill = unjournaledBackfill.map { $0.shifted(by: offset) }
        newestLinkSince? += offset
        lastPageAt? += offset
    }
}

extension LoggedRecording {
    /// Moves the board's last point and the accelerometer readings waiting for a pair `offset` ms later.
    mutating func shift(by offset: Double) {
        lastPointTime? += offset
        for k in accelerometerReadings.indices { accelerometerReadings[k].timestamp += offset }
    }
}

extension LoggedRest {
    /// Moves the session's start and end and what the board left of it `offset` ms later.
    mutating func shift(by offset: Double) {
        startedAt += offset
        end? += offset
        recording.shift(by: offset)
        storedTail = storedTail.map { $0.shifted(by: offset) }
    }
}

extension PendingRestartGap {
    /// Moves every epoch time of a gap this process timed (a stop's gap, a board away at the
    /// stop) `offset` ms later: its edges, its stored points, what was sealed into it, and the
    /// fixes of the stream that stopped (the logged samples' ticks are on the monotonic clock).
    mutating func shift(by offset: Double) {
        gap.after? += offset
        gap.until? += offset
        gap.tail = gap.tail.map { $0.shifted(by: offset) }
        gap.head = gap.head.map { $0.shifted(by: offset) }
        until? += offset
        sealedThrough? += offset
        sealed = sealed.map { (key: $0.key, time: $0.time + offset) }
        stoppedStream?.merger.shiftAll(by: offset) { $0.source = $0.source.convertedWithTheFirstFix }
    }
}
