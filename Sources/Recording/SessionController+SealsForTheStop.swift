/// A shutdown's stop writes once (issue 18 §2.7): every board's stop detaches it, which seals
/// its last chunk, and the session's end follows once the last board has stopped. Each of
/// those commits is an fsync, on a loaded gateway or an SD card the slowest steps between the
/// SIGTERM and the exit (the real-BlueZ VM at load 12: 0.69 s for a board's detach with its
/// chunk's seal, 0.47 s for the end). So from the shutdown's seal on, the chunks wait in
/// memory and go into the end's transaction: one commit for all the boards.
///
/// Held chunks are no less durable than the open chunk was: the points written since the
/// last segment write are sealed on their own once a write would have been due
/// (``sealHeldChunksIfDue(now:)``), so a board slow to stop (the seal waits up to 15 s for it)
/// leaves at most one ``Configuration/checkpointInterval`` unwritten, as while recording.
extension SessionController {
    /// The seal of a shutdown begins (the boards are being stopped): chunks sealed from now on
    /// are stored with the session's end (``stop(trigger:now:boardsStoppedAt:)``). Nothing
    /// while no session records.
    public func holdSealsForTheStop() {
        guard session != nil, sealsForTheStop == nil else { return }
        sealsForTheStop = []
    }

    /// Seals the held chunks one by one when a segment write is due: their newest points were
    /// not written since the last one.
    func sealHeldChunksIfDue(now: Int64) {
        guard let held = sealsForTheStop, !held.isEmpty,
              lastSegmentWrite == .min || now - lastSegmentWrite >= configuration.checkpointInterval else { return }
        // Sealed the usual way: a refused chunk waits for a retry, and the board's later ones behind it.
        failedSeals += held
        sealsForTheStop = []
        retryFailedSeals(now: now, force: true)
    }
}

/// A chunk of a session the store still refuses when its end is stored (disk full, I/O error)
/// is kept in memory for a retry; its points written since the last segment write were in no
/// segment (the stop writes them with the chunk), and the end would drop the session's segments
/// and leave it out of recovery: a gateway ended before the retry lost them. So the session
/// stays open in the store, its refused chunks' points journaled, until they are sealed; a
/// restart in between recovers it from the journal (accepted data is never lost).
extension SessionController {
    /// Whether `end` waits for refused chunks of its session: if so, their points are journaled
    /// and the end is stored once the last of them is sealed (``retryFailedSeals(now:force:)``).
    func endOnceSealed(_ end: SessionEnd) -> Bool {
        let refused = failedSeals.filter { $0.sessionID == end.sessionID }
        guard !refused.isEmpty else { return false }
        let segments = refused.compactMap { chunk in
            chunk.segmentsThrough.map {
                OpenSegment(sessionID: chunk.sessionID, board: chunk.board, firstIndex: $0 - chunk.pointCount, bytes: chunk.bytes,
                            pointCount: chunk.pointCount, timeSource: chunk.timeSource)
            }
        }
        do { try store.append(segments) } catch {
            lastStoreError = "refused chunks of session \(end.sessionID) not journaled: \(error)"
        }
        endsWaitingForSeals.append(end)
        return true
    }

    /// Stores the ends whose sessions' chunks are all sealed now.
    func storeEndsNoLongerWaiting() {
        endsWaitingForSeals = endsWaitingForSeals.filter { end in
            guard !failedSeals.contains(where: { $0.sessionID == end.sessionID }) else { return true }
            do { try store.endSession(end) } catch {
                lastStoreError = "end of session \(end.sessionID) not stored: \(error)"
                return true
            }
            return false
        }
    }
}
