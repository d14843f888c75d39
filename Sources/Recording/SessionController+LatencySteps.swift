import MetaWear

/// Steps in a stream's latency that the timestamper took for losses (issues 18 §2.6, 21).
///
/// From arrivals alone a lasting delay and a loss look the same: after either, every
/// notification sits whole periods above the line the earlier ones lay on. The real-BlueZ VM's
/// notifications at load 7 came 0.24 s, then 0.35 s later for the rest of a session; each step
/// outlasted the timestamper's 5 s confirmation, was marked as 35 and 34 lost samples, and every
/// sample after it was stamped late by the step. A stream restarted while its samples were only
/// late gets a new timestamper that begins on arrivals seconds late (VM run 2 at dcdd80b: marks
/// of 168, 163 and 101 samples at three watchdog restarts, every stamp after them 4.3 s late).
/// A board that logs tells them apart: its log holds every sample it took, so where the
/// samples streamed on both sides of a mark are neighbours in one boot's log, none was lost, and
/// the stamps after the mark are late by the mark's step less what the ticks say.
extension SessionController {
    /// One mark the log contradicts, cleared: the points from `from` up to `linkEnd` (its link's)
    /// were moved back `late` ms.
    struct DelayTakenBack {
        var from: Int
        var linkEnd: Int
        var late: Double
        /// ``late`` in nanoseconds, the stream window's and the timestamper's unit.
        var lateNanoseconds: Int64 { Int64((late * 1e6).rounded()) }
        /// The marked point's counts and time before the move.
        var raw: RawVector
        var markedAt: Double
        /// Where the accelerometer's late stamps begin, epoch ms: it streamed beside the gyro on
        /// the same link, so its notifications came as late, its timestamper took the same step
        /// for a loss (or began on the same late arrivals), and the first sample it stamped after
        /// the step lies about `late` after the last one before it. Halfway between them.
        var accelerometerLateFrom: Double { markedAt - late / 2 }
    }

    /// Clears the marks of `points` (in order, the first after `previous`, epoch ms) that
    /// `contradicted` names (``marksTheLogContradicts(board:points:logs:)``): each such point goes
    /// as long after the point before it as the board took it after that one (by the log's
    /// ticks, in whole periods: one, or more across a sensor pause), and the points after it on
    /// its link (up to the next of `linkStarts`) move with it (`move`). A new link after a moved
    /// one thus moves by that link's move plus its own delay.
    func takeBackDelays(_ points: inout [RecordedPoint], after previous: Double?, linkStarts: [Int],
                        contradicted: [RawVector: Double], scale: Double, periodMs: Double,
                        move: (RecordedPoint, Double) -> RecordedPoint) -> [DelayTakenBack] {
        var previous = previous
        var taken: [DelayTakenBack] = []
        for k in points.indices {
            let marked = points[k]
            defer { previous = points[k].gyroscope.timestamp }
            let raw = RawVector(stored: marked.gyroscope, scale: scale)
            guard marked.missedBefore > 0, !marked.backfilled, let span = contradicted[raw] else { continue }
            points[k].missedBefore = 0
            points[k].gapMilliseconds = 0
            // Whole periods by the ticks (1.46 ms coarse): a sensor pause between them stays.
            let took = max(1, (span / periodMs).rounded()) * periodMs
            let late = previous.map { marked.gyroscope.timestamp - $0 - took } ?? Double(marked.missedBefore) * periodMs
            guard late > 0 else { continue }
            let linkEnd = linkStarts.first { $0 > k } ?? points.count
            for j in k..<linkEnd { points[j] = move(points[j], -late) }
            taken.append(DelayTakenBack(from: k, linkEnd: linkEnd, late: late, raw: raw, markedAt: marked.gyroscope.timestamp))
        }
        return taken
    }

    /// The marks among `board`'s held points that its downloaded log contradicts are cleared
    /// and the points moved (``takeBackDelays(_:after:linkStarts:contradicted:scale:periodMs:move:)``),
    /// with their samples in the stream window. When the moved link is still streaming, its
    /// timestamper stamps that much earlier from now on too (``SampleTimestamper/takeBack(lateBy:)``),
    /// and what it stamped since, still on its way to the hold, moves with it. Done before the
    /// log's samples are placed, so they are placed against the board's times.
    func takeBackDelaysTheLogShows(board: String) {
        guard let stream = boards[board], let hold = stream.hold, let scale = streamed[board]?.scale else { return }
        let contradicted = marksTheLogContradicts(board: board, hold: hold, log: LogTicks(hold.logged.samples))
        guard !contradicted.isEmpty else { return }
        var points = hold.points.map(\.point)
        let taken = takeBackDelays(&points, after: hold.opensSession ? nil : hold.after, linkStarts: hold.linkStarts,
                                   contradicted: contradicted, scale: scale, periodMs: stream.gyro.estimatedPeriod / 1e6) {
            self.moved($0, by: $1, stream: stream, scale: scale)
        }
        for k in points.indices { stream.hold?.points[k].point = points[k] }
        for delay in taken {
            let lateNs = delay.lateNanoseconds
            guard let window = streamed[board], let at = window.samples.lastIndex(where: { $0.raw == delay.raw }) else { continue }
            let link = window.samples[at].link
            streamed[board]?.move(link: link, from: at, by: -lateNs)
            streamedAccelerometer[board]?.move(link: link, stampedFrom: timeBase.monotonic(epochMilliseconds: delay.accelerometerLateFrom),
                                               by: -lateNs)
            // Its link streams on.
            guard delay.linkEnd == points.count, link == window.link else { continue }
            stream.gyro.takeBack(lateBy: lateNs)
            stream.takeBackAccelerometer(from: delay.accelerometerLateFrom, by: delay.late)
            stream.merger.moveHeld(from: delay.markedAt, by: -delay.late)
            for i in stream.waitingForAccelerometer.indices where stream.waitingForAccelerometer[i].time >= delay.markedAt {
                stream.waitingForAccelerometer[i].time -= delay.late
            }
            if let last = stream.previousPointTime, last >= delay.markedAt { stream.previousPointTime = last - delay.late }
        }
    }

    /// `point` moved by `offset` ms with its accelerometer reading (stamped as late: see
    /// ``DelayTakenBack/accelerometerLateFrom``), located again for its new time.
    private func moved(_ point: RecordedPoint, by offset: Double, stream: BoardStream, scale: Double) -> RecordedPoint {
        var p = point.moved(by: offset)
        let value = MotionSamples(single: RawVector(stored: point.gyroscope, scale: scale), scale: scale)[0]
        let located = stream.merger.locate(GyroItem(sample: value, missedBefore: 0, source: timeBase.source), p.gyroscope.timestamp)
        p.location = located.location
        p.missingLocation = located.missing
        return p
    }

    /// The same for a gap a stop kept (its tail: the points that waited for the log, sealed at
    /// the stop with their marks and late times), once its log shows the neighbours: the tail
    /// is moved in memory before the gap's samples are placed against it, and the store revises
    /// the sealed points (marks and times, ``RecordingStore/reviseGapMarks(sessionID:board:_:)``).
    /// A gap an earlier gateway stored the tail of is on another clock: only its marks are
    /// cleared (``clearStoredMarksTheLogContradicts(_:board:scale:)``).
    func takeBackStoredDelays(_ pending: inout PendingRestartGap, board: String, scale: Double, periodMs: Double) {
        guard pending.tailStreamedHere else { return }
        let contradicted = marksTheLogContradicts(board: board, points: pending.gap.tail, logs: [LogTicks(pending.logged.samples)])
        guard !contradicted.isEmpty else { return }
        let before = pending.gap.tail
        var tail = before
        let taken = takeBackDelays(&tail, after: pending.opensSession ? nil : pending.gap.after, linkStarts: pending.tailLinkStarts,
                                   contradicted: contradicted, scale: scale, periodMs: periodMs) { $0.moved(by: $1) }
        guard !taken.isEmpty else { return }
        var marks: [GapMark] = []
        for (old, new) in zip(before, tail) where old != new {
            marks.append(GapMark(timestamp: old.gyroscope.timestamp, missedBefore: new.missedBefore, gapMilliseconds: new.gapMilliseconds,
                                 movedTo: new.gyroscope.timestamp))
        }
        do { try store.reviseGapMarks(sessionID: pending.gap.sessionID, board: board, marks) } catch {
            lastStoreError = "gap marks of \(board) in session \(pending.gap.sessionID) not revised: \(error)"
            return
        }
        pending.gap.tail = tail
        if let last = before.last?.gyroscope.timestamp, pending.until == last { pending.until = tail.last?.gyroscope.timestamp }
        let lastRaw = tail.last.map { RawVector(stored: $0.gyroscope, scale: scale) }
        for delay in taken {
            guard let window = streamed[board], let at = window.samples.lastIndex(where: { $0.raw == delay.raw }) else { continue }
            let through = delay.linkEnd == tail.count ? lastRaw.flatMap { raw in window.samples.lastIndex { $0.raw == raw } } : nil
            streamed[board]?.move(link: window.samples[at].link, from: at, through: through, by: -delay.lateNanoseconds)
            // The accelerometer's samples stamped up to the tail's last point, and half a period
            // after it (those after belong to what followed the stop).
            let accelerometerThrough = delay.linkEnd == tail.count
                ? before.last.map { timeBase.monotonic(epochMilliseconds: $0.gyroscope.timestamp + periodMs / 2) } : nil
            streamedAccelerometer[board]?.move(link: window.samples[at].link,
                                               stampedFrom: timeBase.monotonic(epochMilliseconds: delay.accelerometerLateFrom),
                                               through: accelerometerThrough, by: -delay.lateNanoseconds)
        }
    }
}

extension StreamedWindow {
    /// Moves the samples of `link` from position `start` on (through position `end`, when
    /// given) by `offset` ns (the stream stamped them late): they keep their order, and no
    /// sample of another link lies among them.
    mutating func move(link: Int, from start: Int, through end: Int? = nil, by offset: Int64) {
        guard start < samples.count else { return }
        for i in start...min(end ?? samples.count - 1, samples.count - 1) where samples[i].link == link { samples[i].time += offset }
    }

    /// The same for the samples of `link` stamped at `from` or later (through `through`, when
    /// given; monotonic ns).
    mutating func move(link: Int, stampedFrom from: Int64, through: Int64? = nil, by offset: Int64) {
        let start = samples.firstIndex(notBefore: from)
        let end = through.map { samples.firstIndex(notBefore: $0 + 1) - 1 }
        guard end.map({ $0 >= start }) ?? true else { return }
        move(link: link, from: start, through: end, by: offset)
    }
}

extension BoardStream {
    /// The accelerometer's stamps from `from` on (epoch ms) came `late` ms late, as the gyro's
    /// beside them on this link (``SessionController/DelayTakenBack/accelerometerLateFrom``):
    /// its timestamper stamps that much earlier from now on (``SampleTimestamper/takeBack(lateBy:)``),
    /// and the readings it stamped since, still to be paired with a gyro point, move back.
    func takeBackAccelerometer(from: Double, by late: Double) {
        guard accelerometerRate != nil else { return }
        accelerometer?.takeBack(lateBy: Int64((late * 1e6).rounded()))
        for i in recentAccelerometer.indices where recentAccelerometer[i].timestamp >= from { recentAccelerometer[i].timestamp -= late }
        recentAccelerometer.sort { $0.timestamp < $1.timestamp }
        if accelerometerStampedUntil >= from { accelerometerStampedUntil -= late }
    }
}

extension SessionController {
    /// The marks of a kept gap's stored points (its tail, sealed at the stop with the marks
    /// they had) that the gap's log contradicts: the sample before each, streamed, is its
    /// neighbour in one boot's log, so none is missing there. The store revises them to none in
    /// the sealed chunks (``RecordingStore/reviseGapMarks(sessionID:board:_:)``). A gap this
    /// process streamed the tail of has them moved as well first
    /// (``takeBackStoredDelays(_:board:scale:periodMs:)``).
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
