import MetaWear

/// The gap marks of a restart (or stop) gap's stored points, once the board's log filled the
/// stretch before them (issue 21).
extension SessionController {
    /// A filled gap's stored points that a backfilled point now precedes: each was stored with
    /// the mark of the gap it followed (recovery seals the points a link drop's gap held with
    /// their live mark, a stop commits its held points with theirs), and the log has filled
    /// that gap since. Each is counted again from the backfilled point before it, by the
    /// board's ticks where the log holds both (``LogTicks``), else by the times, and the store
    /// revises the sealed chunk that holds it (``RecordingStore/reviseGapMarks(sessionID:board:_:)``).
    /// Before, a kill -9 while a link drop's points waited for the log left its first point
    /// marking the whole drop missing after the restart gap had filled it.
    func reviseStoredMarks(_ pending: PendingRestartGap, board: String, scale: Double, periodMs: Double) {
        guard !pending.sealed.isEmpty else { return }
        let filled = pending.sealed.sorted { $0.time < $1.time }
        let log = LogTicks(pending.logged.samples)
        var marks: [GapMark] = []
        var previousStored = -Double.infinity
        // The first backfilled point at or after the stored point in hand.
        var next = 0
        for point in pending.gap.tail {
            let time = point.gyroscope.timestamp
            defer { previousStored = time }
            while next < filled.count, filled[next].time < time { next += 1 }
            guard point.missedBefore > 0, !point.backfilled, next > 0, filled[next - 1].time > previousStored else { continue }
            let before = filled[next - 1]
            let step = time - before.time
            let byTicks = log.sample(RawVector(stored: point.gyroscope, scale: scale)).flatMap {
                log.samplesBetween(before.key, BackfillKey($0), spanByTime: step, periodMs: periodMs)
            }
            let missed = byTicks ?? GapCount.missed(stepMs: step, periodMs: periodMs)
            guard missed != point.missedBefore else { continue }
            marks.append(GapMark(timestamp: time, missedBefore: missed, gapMilliseconds: GapCount.milliseconds(missed: missed, stepMs: step)))
        }
        guard !marks.isEmpty else { return }
        do { try store.reviseGapMarks(sessionID: pending.gap.sessionID, board: board, marks) } catch {
            lastStoreError = "gap marks of \(board) in session \(pending.gap.sessionID) not revised: \(error)"
        }
    }
}
