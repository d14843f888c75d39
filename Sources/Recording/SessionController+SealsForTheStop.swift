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
