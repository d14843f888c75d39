/// While the system clock is not synchronised and before the gateway's first GNSS fix, every
/// time this process takes is on the uncorrected system clock, which may be seconds to months
/// off (a board computer without a battery-backed clock). The first fix gives the correction;
/// ``TimeBase`` converts the monotonic times before it with that first correction, so every
/// time this process took before it moves by that same amount, wherever it is: the recording
/// session's (its open chunks, samples waiting for a fix, held points, resume points, chunks
/// waiting for a seal), those of the sessions it stopped before the fix (and of their gaps and
/// logged rests still waiting for a board's log), the ends of restart gaps its streams bounded,
/// and in the store each of those sessions' start, end, sealed chunks and segment journal
/// (``RecordingStore/convertOntoGNSSTime(sessionID:by:)``). Before, a board streaming through
/// a GNSS cold start gave a session whose times jumped by the clock's error partway through,
/// and a session stopped before the fix kept the clock's error.
extension SessionController {
    /// Converts every time this process took on the system clock onto GNSS time: call when a
    /// fix has made the time base GNSS-corrected for the first time (``TimeBase/observe(_:at:)``),
    /// before the fix is located. Not when the clock became synchronised instead: there is no
    /// GNSS correction then, and the times before stay as they are, and so do their sessions'
    /// time sources.
    func convertOntoGNSSTimeOnceCorrected() {
        // The first fix's correction: every time before it converts with it (``TimeBase/correction(at:)``).
        let offset = timeBase.correction * 1000
        var converted = stoppedBeforeTheFirstFix
        stoppedBeforeTheFirstFix = []
        if let s = session {
            // Started on a synchronised clock that was lost since: its times stay as they are.
            guard s.startSource == .unsynchronisedSystemClock else { return }
            converted.append(s.id)
            session?.startedAt = timeBase.epochMilliseconds(monotonic: s.startedMonotonic)
            session?.startSource = .gnssCorrected
        }
        for stream in boards.values { stream.shiftOntoGNSSTime(by: offset) }
        for key in resumeAt.keys {
            resumeAt[key]?.time? += offset
            resumeAt[key]?.heard? += offset
            resumeAt[key]?.hold?.shift(by: offset)
        }
        // The fixes a logged session's points are located with too: newer fixes are added only after them.
        loggedFixes.shiftAll(by: offset) { $0.source = $0.source.convertedWithTheFirstFix }
        for key in loggedRecordings.keys { loggedRecordings[key]?.shift(by: offset) }
        failedSeals = failedSeals.map { $0.shiftedOntoGNSSTime(by: offset) ?? $0 }
        sealsForTheStop = sealsForTheStop?.map { $0.shiftedOntoGNSSTime(by: offset) ?? $0 }
        for k in endsWaitingForSeals.indices where converted.contains(endsWaitingForSeals[k].sessionID) {
            endsWaitingForSeals[k].endedAt += offset
            endsWaitingForSeals[k].timeSource = endsWaitingForSeals[k].timeSource.convertedWithTheFirstFix
        }
        shiftWhatWaitsForTheLogs(converted: Set(converted), by: offset)
        for id in converted {
            do {
                try store.convertOntoGNSSTime(sessionID: id, by: offset)
                // Every point committed so far is GNSS-corrected now.
                if let s = session, s.id == id { session?.pointsSource = s.pointsSource.convertedWithTheFirstFix }
            } catch {
                lastStoreError = "times of session \(id) before the first fix not converted: \(error)"
            }
        }
    }

    /// What waits for a board's log: a gap or logged rest of a `converted` session moves whole
    /// (this process timed all of it). A restart gap of an earlier gateway's session that this
    /// process's stream bounded has only its end moved, however much of it is filled (its
    /// stored tail, and the points sealed into it, are on that session's clock; the filling
    /// compares the log's samples, GNSS-corrected from now on, with that end), and kept again.
    private func shiftWhatWaitsForTheLogs(converted: Set<String>, by offset: Double) {
        for (board, gaps) in restartGaps {
            for k in gaps.indices {
                let sessionID = gaps[k].gap.sessionID
                if converted.contains(sessionID) {
                    restartGaps[board]?[k].shift(by: offset)
                    continue
                }
                guard gaps[k].endsAtThisProcessStream, let until = gaps[k].until else { continue }
                restartGaps[board]?[k].until = until + offset
                do { try store.restartGapBounded(sessionID: sessionID, board: board, until: until + offset) } catch {
                    lastStoreError = "restart gap of \(board) in session \(sessionID) not bounded again: \(error)"
                }
            }
        }
        for (board, rests) in loggedRests {
            for k in rests.indices where converted.contains(rests[k].sessionID) { loggedRests[board]?[k].shift(by: offset) }
        }
        for (board, rest) in pendingLoggedRests where converted.contains(rest.sessionID) { pendingLoggedRests[board]?.shift(by: offset) }
    }
}
