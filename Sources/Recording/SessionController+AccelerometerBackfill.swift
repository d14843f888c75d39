import MetaWear

/// Accelerometer backfill (issue 21): when the accelerometer streams, the board logs it too, and
/// each gyro point a backfill adds gets its accelerometer sample from the log, placed on the
/// streamed time base by the same rules as the gyro's (anchors: logged samples whose raw counts
/// the accelerometer stream carried, or the stored tail of a restart gap).
extension SessionController {
    /// Keeps the streamed accelerometer samples (raw counts at their monotonic times) for matching.
    func rememberStreamedAccelerometer(board: String, _ stamped: [SampleTimestamper<MotionSamples>.Stamped]) {
        guard backfillBoards.contains(board) else { return }
        streamedAccelerometer[board, default: StreamedWindow()].keptFrom = streamKeptFrom(board: board)
        streamedAccelerometer[board]?.append(stamped)
    }

    /// The board's logged accelerometer samples of this readout that were not streamed, placed
    /// on the streamed time base; the accelerometer readings of `stored` points (a restart
    /// gap's tail) are anchors besides the stream. With `earliest` (streamed time base, ns),
    /// samples from long before it are not planned (``BackfillPlanner/samples(_:reaching:)``).
    func backfilledAccelerometer(board: String, stored: [RecordedPoint] = [], reaching earliest: Int64? = nil) -> BackfilledAccelerometer {
        guard let rate = boards[board]?.accelerometerRate else { return BackfilledAccelerometer() }
        var result = BackfilledAccelerometer(rate: rate) { [self] in nearestAccelerometer(board: board, time: $0) }
        guard let log = loggedAccelerometer[board], !log.samples.isEmpty, let window = streamedAccelerometer[board],
              let scale = window.scale else { return result }
        var times = Set<Double>()
        var tail: [BackfillPlanner.StreamedSample] = []
        for reading in stored.compactMap(\.accelerometer) where times.insert(reading.timestamp).inserted {
            tail.append(BackfillPlanner.StreamedSample(time: timeBase.monotonic(epochMilliseconds: reading.timestamp),
                                                       raw: RawVector(counts: (reading.x, reading.y, reading.z), scale: scale)))
        }
        let streamed = (tail + window.samples).sorted { $0.time < $1.time }
        let planner = BackfillPlanner(nominalPeriod: 1e9 / rate, bootOrigins: log.bootOrigins)
        let logged = earliest.map { planner.samples(log.samples, reaching: min($0, streamed.first?.time ?? $0)).kept } ?? log.samples
        let plan = planner.plan(streamed: streamed, logged: logged)
        result.readings = plan.backfilled.map {
            AccelerometerReading(MotionSamples(single: $0.raw, scale: scale)[0], timestamp: timeBase.epochMilliseconds(monotonic: $0.time))
        }
        return result
    }
}

/// Backfilled accelerometer readings in time order, and the streamed ones: what a backfilled
/// gyro point pairs with.
struct BackfilledAccelerometer {
    /// Accelerometer samples a second per rate; 0 when the accelerometer does not stream.
    var rate: Double = 0
    /// The streamed reading nearest a time.
    var streamed: ((Double) -> AccelerometerReading?)?
    var readings: [AccelerometerReading] = []

    /// The reading nearest `time`, backfilled or streamed, within half a period (and 1 ms).
    func nearest(_ time: Double) -> AccelerometerReading? {
        var best = streamed?(time)
        if let logged = readings.nearest(to: time), best.map({ abs(logged.timestamp - time) < abs($0.timestamp - time) }) ?? true {
            best = logged
        }
        guard let best, rate > 0, abs(best.timestamp - time) <= 500 / rate + 1 else { return nil }
        return best
    }
}

extension Array where Element == AccelerometerReading {
    /// The reading nearest `time` in these readings (in time order), the earlier of two as near;
    /// nil when there are none.
    func nearest(to time: Double) -> AccelerometerReading? {
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if self[mid].timestamp < time { low = mid + 1 } else { high = mid }
        }
        var best: AccelerometerReading?
        for i in [low - 1, low] where i >= 0 && i < count {
            if best == nil || abs(self[i].timestamp - time) < abs(best!.timestamp - time) { best = self[i] }
        }
        return best
    }
}
