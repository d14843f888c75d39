/// When a page of a board's flash-log readout may be placed (issue 21): only once the gap it
/// fills has an end in the recorder.
///
/// A page is placed between the board's last point before its gap and the newest point its
/// hold took in; a logged sample after that is "outside the gap" (streamed later), and the page
/// is then confirmed, deleted on the board. A board that comes back on a new link while points
/// wait (a drop during a hold) has its log read at once, from the hold's last point through
/// the new link's gap, but that gap's end, the new link's first point, reaches the recorder
/// only after the timestamper's lookahead and the fix wait (about 2 s). A readout done by then
/// (the real-BlueZ VM board reads ~2,100 entries/s, and a page no longer waits for the next
/// tick) found the new gap past the hold's end: 20 drops, 10 readouts "0 filled a gap, 59-113
/// outside the gap", those samples deleted unfilled. A page therefore waits while the board's
/// new link has no point in the recorder, and until the hold holds a second of points of its
/// newest link (the first ones of a new timestamper may be stamped some tens of milliseconds
/// early), and is placed then.
extension SessionController {
    /// Whether a flash-log page of `board` must wait before ``backfill(board:logged:accelerometer:bootOrigins:complete:now:)``
    /// (the board waits at its end meanwhile; it sends no page before this one is answered).
    public func pageWaitsForItsGap(board: String) -> Bool {
        guard session != nil, let stream = boards[board], stream.backfillExpected else { return false }
        if stream.resumedStream { return true }
        guard let hold = stream.hold, let newest = hold.points.last?.point.gyroscope.timestamp else { return false }
        return newest - hold.since < Self.heldSpanBeforePages
    }

    /// Milliseconds of the newest link's points a hold takes in before pages are placed.
    static let heldSpanBeforePages = 1000.0
}
