import MetaWear

/// Steps in a stream's latency that the timestamper took for losses (issues 18 §2.6, 21).
///
/// From arrivals alone a lasting delay and a loss look the same: after either, every
/// notification sits whole periods above the line the earlier ones lay on. The real-BlueZ VM's
/// notifications at load 7 came 0.24 s, then 0.35 s later for the rest of a session; each step
/// outlasted the timestamper's 5 s confirmation, was marked as 35 and 34 lost samples, and every
/// sample after it was stamped late by the step. A board that logs tells them apart: its log
/// holds every sample it took, so where the samples streamed on both sides of a mark are
/// neighbours in one boot's log, none was lost, and the stamps after the mark are late by the
/// mark's periods.
extension SessionController {
    /// The marks among `board`'s held points that its downloaded log contradicts are cleared,
    /// and each such point goes as long after the point before it as the board took it after
    /// that one (by the log's ticks, in whole periods: one, or more across a sensor pause); the
    /// points after it on its link move with it (up to a newer link). A mark
    /// after a latency step moves its link back by the step; a mark at a new link's first point
    /// (a stream restarted while its samples were only late: the new timestamper began on
    /// arrivals seconds late, and the real-BlueZ VM's run 2 at dcdd80b marked 168, 163 and 101
    /// samples missing at three restarts, every stamp after them 4.3 s late) moves the new link
    /// by what the link before it was moved plus its own delay. When the moved link is still
    /// streaming, its timestamper stamps that much earlier from now on too
    /// (``SampleTimestamper/takeBack(lateBy:)``), and what it stamped since, still on its way to
    /// the hold, moves with it. Done before the log's samples are placed, so they are placed
    /// against the board's times.
    func takeBackDelaysTheLogShows(board: String) {
        guard let stream = boards[board], let hold = stream.hold, let scale = streamed[board]?.scale else { return }
        let contradicted = marksTheLogContradicts(board: board, hold: hold, log: LogTicks(hold.logged.samples))
        guard !contradicted.isEmpty else { return }
        let periodMs = stream.gyro.estimatedPeriod / 1e6
        var points = hold.points
        var previous = hold.opensSession ? nil : hold.after
        for k in points.indices {
            let marked = points[k].point
            defer { previous = points[k].point.gyroscope.timestamp }
            let raw = RawVector(stored: marked.gyroscope, scale: scale)
            guard marked.missedBefore > 0, !marked.backfilled, let span = contradicted[raw] else { continue }
            points[k].point.missedBefore = 0
            points[k].point.gapMilliseconds = 0
            let markedAt = marked.gyroscope.timestamp
            // Whole periods by the ticks (1.46 ms coarse): a sensor pause between them stays.
            let taken = max(1, (span / periodMs).rounded()) * periodMs
            let late = previous.map { markedAt - $0 - taken } ?? Double(marked.missedBefore) * periodMs
            guard late > 0, let window = streamed[board], let streamedAt = window.samples.lastIndex(where: { $0.raw == raw }) else { continue }
            let linkEnd = hold.linkStarts.first { $0 > k } ?? points.count
            let lateNs = Int64((late * 1e6).rounded())
            for j in k..<linkEnd { points[j].point = moved(points[j].point, by: -late, stream: stream, scale: scale) }
            streamed[board]?.move(link: window.samples[streamedAt].link, from: streamedAt, by: -lateNs)
            guard linkEnd == points.count, window.samples[streamedAt].link == window.link else { continue }
            // Its link streams on.
            stream.gyro.takeBack(lateBy: lateNs)
            stream.merger.moveHeld(from: markedAt, by: -late)
            for i in stream.waitingForAccelerometer.indices where stream.waitingForAccelerometer[i].time >= markedAt {
                stream.waitingForAccelerometer[i].time -= late
            }
            if let last = stream.previousPointTime, last >= markedAt { stream.previousPointTime = last - late }
        }
        stream.hold?.points = points
    }

    /// `point` moved by `offset` ms, located again for its new time.
    private func moved(_ point: RecordedPoint, by offset: Double, stream: BoardStream, scale: Double) -> RecordedPoint {
        var p = point
        p.gyroscope.timestamp += offset
        let value = MotionSamples(single: RawVector(stored: point.gyroscope, scale: scale), scale: scale)[0]
        let located = stream.merger.locate(GyroItem(sample: value, missedBefore: 0, source: timeBase.source), p.gyroscope.timestamp)
        p.location = located.location
        p.missingLocation = located.missing
        return p
    }
}

extension StreamedWindow {
    /// Moves the samples of `link` from position `start` on by `offset` ns (the stream stamped
    /// them late): they keep their order, and no sample of another link lies among them.
    mutating func move(link: Int, from start: Int, by offset: Int64) {
        for i in start..<samples.count where samples[i].link == link { samples[i].time += offset }
    }
}

extension SessionController {
    /// The marks of a kept gap's stored points (its tail, sealed at the stop with the marks
    /// they had) that the gap's log contradicts: the sample before each, streamed, is its
    /// neighbour in one boot's log, so none is missing there. The store revises them to none in
    /// the sealed chunks (``RecordingStore/reviseGapMarks(sessionID:board:_:)``). The stop kept
    /// the gap of a latency step taken for a loss whose points still waited for the log (the
    /// real-BlueZ VM's marks of 35 and 34 samples, e06f64a). Their times stay late by the step:
    /// a sealed point's time is not revised.
    func clearStoredMarksTheLogContradicts(_ pending: PendingRestartGap, board: String, scale: Double) {
        let log = LogTicks(pending.logged.samples)
        let window = streamed[board]?.samples ?? []
        var marks: [GapMark] = []
        var previous: RawVector?
        for point in pending.gap.tail {
            let raw = RawVector(stored: point.gyroscope, scale: scale)
            defer { previous = raw }
            guard point.missedBefore > 0, !point.backfilled else { continue }
            // The tail's first point follows the session's last committed one: the stream's.
            let before = previous ?? window.lastIndex { $0.raw == raw }.flatMap { $0 > 0 ? window[$0 - 1].raw : nil }
            guard let before, log.follow(before, raw) else { continue }
            marks.append(GapMark(timestamp: point.gyroscope.timestamp, missedBefore: 0, gapMilliseconds: 0))
        }
        guard !marks.isEmpty else { return }
        do { try store.reviseGapMarks(sessionID: pending.gap.sessionID, board: board, marks) } catch {
            lastStoreError = "gap marks of \(board) in session \(pending.gap.sessionID) not revised: \(error)"
        }
    }
}
