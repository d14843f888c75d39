/// A session recording while the system clock is not synchronised and before the gateway's
/// first GNSS fix has every time on the uncorrected system clock, which may be seconds to
/// months off (a board computer without a battery-backed clock). The first fix gives the
/// correction; ``TimeBase`` converts the monotonic times before it with that first correction,
/// so the session's times taken before it move by that same amount, wherever they are: here
/// (the open chunks, samples waiting for a fix, held points, resume points, chunks waiting for
/// a seal), and in the store (its start, sealed chunks, the segment journal,
/// ``RecordingStore/convertOntoGNSSTime(sessionID:by:)``). Before, a board streaming through a
/// GNSS cold start gave a session whose times jumped by the clock's error partway through.
extension SessionController {
    /// Converts the session's times taken on the system clock onto GNSS time, once the first
    /// fix has corrected the clock (call after ``TimeBase/observe(_:at:)``, before the fix is
    /// located). Nothing when the session started on a corrected or synchronised clock, or
    /// the clock is synchronised now (no GNSS correction then: its times before stay as they
    /// are, and so does its time source).
    func convertOntoGNSSTimeOnceCorrected() {
        guard let s = session, s.startSource == .unsynchronisedSystemClock, timeBase.source == .gnssCorrected else { return }
        let offset = timeBase.correction(at: s.startedMonotonic) * 1000
        session?.startedAt = timeBase.epochMilliseconds(monotonic: s.startedMonotonic)
        session?.startSource = .gnssCorrected
        for stream in boards.values { stream.shiftOntoGNSSTime(by: offset) }
        for key in resumeAt.keys {
            resumeAt[key]?.time? += offset
            resumeAt[key]?.heard? += offset
            resumeAt[key]?.hold?.shift(by: offset)
        }
        // The fixes a logged session's points are located with too: newer fixes are added only after them.
        loggedFixes.shiftAll(by: offset) { $0.source = $0.source.convertedWithTheFirstFix }
        for key in loggedRecordings.keys {
            loggedRecordings[key]?.lastPointTime? += offset
            for k in loggedRecordings[key]?.accelerometerReadings.indices ?? 0..<0 {
                loggedRecordings[key]?.accelerometerReadings[k].timestamp += offset
            }
        }
        failedSeals = failedSeals.map { $0.sessionID == s.id ? $0.shiftedOntoGNSSTime(by: offset) ?? $0 : $0 }
        sealsForTheStop = sealsForTheStop?.map { $0.sessionID == s.id ? $0.shiftedOntoGNSSTime(by: offset) ?? $0 : $0 }
        boundRestartGapsAgain(by: offset)
        do {
            try store.convertOntoGNSSTime(sessionID: s.id, by: offset)
            // Every point committed so far is GNSS-corrected now.
            session?.pointsSource = s.pointsSource.convertedWithTheFirstFix
        } catch {
            lastStoreError = "times of session \(s.id) before the first fix not converted: \(error)"
        }
    }

    /// A restart gap bounded by this process's stream before the first fix has its end on the
    /// system clock: moved onto GNSS time with the stream, and kept so again. Only while nothing
    /// of it is filled (the filling compares its samples' times, GNSS-corrected from now on,
    /// with that end).
    private func boundRestartGapsAgain(by offset: Double) {
        for (board, gaps) in restartGaps {
            for k in gaps.indices where gaps[k].filled == 0 && gaps[k].endsAtThisProcessStream {
                guard let until = gaps[k].until else { continue }
                restartGaps[board]?[k].until = until + offset
                do { try store.restartGapBounded(sessionID: gaps[k].gap.sessionID, board: board, until: until + offset) } catch {
                    lastStoreError = "restart gap of \(board) in session \(gaps[k].gap.sessionID) not bounded again: \(error)"
                }
            }
        }
    }
}
