import GNSS
import MetaWear

/// One attached board inside ``SessionController``: its timestampers, location merger, the
/// accelerometer samples a gyro point may pair with, and its open chunk and segment.
struct BoardStream {
    var gyroRate: Double
    var accelerometerRate: Double?
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
    /// Set on re-attach: the first point of the new stream counts the samples the link
    /// drop cost from the time since `previousPointTime`.
    var resumedStream = false
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

    /// Adds one point to the open chunk (and to the next segment when it is not written yet);
    /// true when the chunk now holds `chunkSize` points. Called in place through the
    /// controller's dictionary: a copy of the stream would copy the chunk's bytes per point.
    mutating func commit(_ p: RecordedPoint, source: TimeSource, chunkSize: Int) -> Bool {
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
