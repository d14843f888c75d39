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
    /// were moved back, each to where the log's ticks put it, by no more than the marked one's
    /// `late` ms and never forward.
    struct DelayTakenBack {
        var from: Int
        var linkEnd: Int
        var late: Double
        /// How far each moved point went back, ms: by its counts, and by its time before the move.
        var moves: [RawVector: Double]
        var movedAt: [(time: Double, back: Double)]
        /// How late the link's stream still comes, ms: how far its newest point went back, or
        /// what its timestamper still takes back (``SampleTimestamper/takeBack(lateBy:at:)``)
        /// when it streams on (0: the delay has ended).
        var stillLate: Double
        /// ``late`` in nanoseconds, the stream window's and the timestamper's unit.
        var lateNanoseconds: Int64 { Int64((late * 1e6).rounded()) }
        /// The logs the mark was read in, the marked sample in them, and when the board took it
        /// (epoch ms): where the ticks put each sample after it.
        var logs: [LogTicks]
        var markedLog: LoggedSample?
        var markedTaken: Double

        /// How far a gyro sample with the counts `raw` stamped at `time` (epoch ms) goes back, ms:
        /// to where the log's ticks put it after the marked one, by no more than ``late`` and never
        /// forward; `otherwise` when the log does not hold it.
        func back(_ raw: RawVector, at time: Double, otherwise: Double) -> Double {
            guard let m = markedLog, let s = logs.lazy.compactMap({ $0.sample(raw) }).first, s.resetUID == m.resetUID,
                  s.tick >= m.tick else { return otherwise }
            return min(late, max(0, time - (markedTaken + BoardTicks.milliseconds(UInt64(s.tick - m.tick)))))
        }
        /// The marked point's counts and time before the move.
        var raw: RawVector
        var markedAt: Double
        /// Where the accelerometer's late stamps begin, epoch ms: it streamed beside the gyro on
        /// the same link, so its notifications came as late, its timestamper took the same step
        /// for a loss (or began on the same late arrivals), and the first sample it stamped after
        /// the step lies about `late` after the last one before it. Halfway between them.
        var accelerometerLateFrom: Double { markedAt - late / 2 }

        /// How far a sample of the link stamped at `time` (epoch ms) goes back, ms: as the gyro
        /// point stamped nearest before it (the accelerometer's notifications came as late as
        /// the gyro's beside them); none before ``accelerometerLateFrom``.
        func back(at time: Double) -> Double {
            guard time >= accelerometerLateFrom else { return 0 }
            var low = 0, high = movedAt.count
            while low < high {
                let mid = (low + high) / 2
                if movedAt[mid].time <= time { low = mid + 1 } else { high = mid }
            }
            return low == 0 ? late : movedAt[low - 1].back
        }
    }

    /// Clears the marks of `points` (in order, the first after `previous`, epoch ms) that
    /// `contradicted` names (``marksTheLogContradicts(board:points:logs:)``): each such point goes
    /// as long after the point before it as the board took it after that one (by the log's
    /// ticks, in whole periods: one, or more across a sensor pause), and each point after it on
    /// its link (up to the next of `linkStarts`) to where `logs`' ticks put it after the marked
    /// one (past the log's end, at `periodMs` a sample after the last one it holds), by no more
    /// than the marked one and never forward (`move`). The delay may have ended before the
    /// readout (the real stack's latency wanders by 0.8 s for seconds at a time): the points
    /// stamped after that lie on the board's times already, and moved with the marked one they
    /// came before the board took them (real-BlueZ VM, session group at cbb2391: 0.7 s, and the
    /// log's samples after the stop were no twins of theirs: 48 stored twice). A new link after
    /// a moved one thus moves by that link's move plus its own delay.
    func takeBackDelays(_ points: inout [RecordedPoint], after previous: Double?, linkStarts: [Int],
                        contradicted: [RawVector: Double], logs: [LogTicks], scale: Double, periodMs: Double,
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
            var delay = DelayTakenBack(from: k, linkEnd: linkEnd, late: late, moves: [:], movedAt: [], stillLate: late, logs: logs,
                                       markedLog: logs.lazy.compactMap { $0.sample(raw) }.first,
                                       markedTaken: marked.gyroscope.timestamp - late, raw: raw, markedAt: marked.gyroscope.timestamp)
            // The last point the ticks placed (first the marked one), and where it went.
            var placed = (at: k, time: delay.markedTaken)
            for j in k..<linkEnd {
                let counts = RawVector(stored: points[j].gyroscope, scale: scale)
                let time = points[j].gyroscope.timestamp
                let byTicks = j == k ? late : delay.back(counts, at: time, otherwise: Double.nan)
                if byTicks.isNaN {
                    // Past the log's end: a period after the last one it placed.
                    delay.stillLate = min(late, max(0, time - (placed.time + Double(j - placed.at) * periodMs)))
                } else {
                    delay.stillLate = byTicks
                    placed = (j, time - byTicks)
                }
                delay.moves[counts] = delay.stillLate
                delay.movedAt.append((time, delay.stillLate))
                points[j] = move(points[j], -delay.stillLate)
            }
            taken.append(delay)
        }
        return taken
    }

    /// The marks among `board`'s held points that its downloaded log contradicts are cleared
    /// and the points moved (``takeBackDelays(_:after:linkStarts:contradicted:logs:scale:periodMs:move:)``),
    /// with their samples in the stream windows. When the moved link is still streaming, its
    /// timestampers stamp as much earlier from now on as the delay still lasts
    /// (``SampleTimestamper/takeBack(lateBy:at:)``: nothing when it has ended), and what they
    /// stamped since, still on its way to the hold, moves by the ticks too. Done before the
    /// log's samples are placed, so they are placed against the board's times.
    func takeBackDelaysTheLogShows(board: String) {
        guard let stream = boards[board], let hold = stream.hold, let scale = streamed[board]?.scale else { return }
        var points = hold.points.map(\.point)
        let logs = [LogTicks(hold.logged.samples)] + (previousLog[board].map { [LogTicks($0.samples)] } ?? [])
        let contradicted = marksTheLogContradicts(board: board, points: points, logs: logs)
        guard !contradicted.isEmpty else { return }
        let taken = takeBackDelays(&points, after: hold.opensSession ? nil : hold.after, linkStarts: hold.linkStarts,
                                   contradicted: contradicted, logs: logs, scale: scale, periodMs: stream.gyro.estimatedPeriod / 1e6) {
            self.moved($0, by: $1, stream: stream, scale: scale)
        }
        for k in points.indices { stream.hold?.points[k].point = points[k] }
        for var delay in taken {
            guard let window = streamed[board], let at = window.samples.lastIndex(where: { $0.raw == delay.raw }) else { continue }
            let link = window.samples[at].link
            let streamsOn = delay.linkEnd == points.count && link == window.link
            if streamsOn {
                // What of the delay still lasts, by the envelope's come-down since the mark: the
                // stamps handed out since the newest held point are as late.
                let still = stream.gyro.takeBack(lateBy: delay.lateNanoseconds) { !$0.isEmpty && $0.raw(0) == delay.raw }
                delay.stillLate = Double(still) / 1e6
            }
            streamed[board]?.move(link: link, from: at) { raw, time in
                Int64((delay.back(raw, at: self.timeBase.epochMilliseconds(monotonic: time), otherwise: delay.moves[raw] ?? delay.stillLate)
                       * 1e6).rounded())
            }
            streamedAccelerometer[board]?.move(link: link, stampedFrom: timeBase.monotonic(epochMilliseconds: delay.accelerometerLateFrom)) {
                Int64((delay.back(at: self.timeBase.epochMilliseconds(monotonic: $0)) * 1e6).rounded())
            }
            guard streamsOn else { continue }
            stream.takeBackAccelerometer(delay)
            // Stamped since the newest held point: by the ticks where the log holds them (those
            // stamped before the delay ended are as late as it was), else as late as it still is.
            func back(_ item: GyroItem, at time: Double) -> Double {
                delay.back(RawVector(stored: GyroReading(item.sample, timestamp: time), scale: scale), at: time, otherwise: delay.stillLate)
            }
            stream.merger.moveHeld { back($0, at: $1) }
            for i in stream.waitingForAccelerometer.indices {
                stream.waitingForAccelerometer[i].time -= back(stream.waitingForAccelerometer[i].payload, at: stream.waitingForAccelerometer[i].time)
            }
            if let last = stream.previousPointTime, last >= delay.markedAt, let newest = points.last?.gyroscope.timestamp {
                stream.previousPointTime = max(newest, last - delay.stillLate)
            }
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
        let logs = [LogTicks(pending.logged.samples)]
        let contradicted = marksTheLogContradicts(board: board, points: pending.gap.tail, logs: logs)
        guard !contradicted.isEmpty else { return }
        let before = pending.gap.tail
        var tail = before
        let taken = takeBackDelays(&tail, after: pending.opensSession ? nil : pending.gap.after, linkStarts: pending.tailLinkStarts,
                                   contradicted: contradicted, logs: logs, scale: scale, periodMs: periodMs) { $0.moved(by: $1) }
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
            streamed[board]?.move(link: window.samples[at].link, from: at, through: through) { raw, _ in
                Int64(((delay.moves[raw] ?? delay.stillLate) * 1e6).rounded())
            }
            // The accelerometer's samples stamped up to the tail's last point, and half a period
            // after it (those after belong to what followed the stop).
            let accelerometerThrough = delay.linkEnd == tail.count
                ? before.last.map { timeBase.monotonic(epochMilliseconds: $0.gyroscope.timestamp + periodMs / 2) } : nil
            streamedAccelerometer[board]?.move(link: window.samples[at].link,
                                               stampedFrom: timeBase.monotonic(epochMilliseconds: delay.accelerometerLateFrom),
                                               through: accelerometerThrough) {
                Int64((delay.back(at: self.timeBase.epochMilliseconds(monotonic: $0)) * 1e6).rounded())
            }
        }
    }
}

extension StreamedWindow {
    /// Moves the samples of `link` from position `start` on (through position `end`, when
    /// given) back by `back(counts, time)` ns each (the stream stamped them late, each by as
    /// much as its point): they keep their order, and no sample of another link lies among them.
    mutating func move(link: Int, from start: Int, through end: Int? = nil, back: (RawVector, Int64) -> Int64) {
        guard start < samples.count else { return }
        for i in start...min(end ?? samples.count - 1, samples.count - 1) where samples[i].link == link {
            samples[i].time -= back(samples[i].raw, samples[i].time)
        }
    }

    /// The samples of `link` stamped at `from` or later (through `through`, when given;
    /// monotonic ns) back by `back(time)` ns each, in time order still.
    mutating func move(link: Int, stampedFrom from: Int64, through: Int64? = nil, back: (Int64) -> Int64) {
        let start = samples.firstIndex(notBefore: from)
        let end = min(through.map { samples.firstIndex(notBefore: $0 + 1) - 1 } ?? samples.count - 1, samples.count - 1)
        guard start <= end else { return }
        for i in start...end where samples[i].link == link { samples[i].time -= back(samples[i].time) }
        samples[start...end].sort { $0.time < $1.time }
    }
}

extension BoardStream {
    /// The accelerometer's stamps from the delay's ``SessionController/DelayTakenBack/accelerometerLateFrom``
    /// on came as late as the gyro's beside them on this link: its timestamper stamps as much
    /// earlier from now on as the link still came late (``SampleTimestamper/takeBack(lateBy:)``),
    /// and the readings it stamped since, still to be paired with a gyro point, move back as the
    /// gyro points stamped beside them.
    func takeBackAccelerometer(_ delay: SessionController.DelayTakenBack) {
        guard accelerometerRate != nil else { return }
        accelerometer?.takeBack(lateBy: Int64((delay.stillLate * 1e6).rounded()))
        for i in recentAccelerometer.indices { recentAccelerometer[i].timestamp -= delay.back(at: recentAccelerometer[i].timestamp) }
        recentAccelerometer.sort { $0.timestamp < $1.timestamp }
        accelerometerStampedUntil -= delay.back(at: accelerometerStampedUntil)
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
