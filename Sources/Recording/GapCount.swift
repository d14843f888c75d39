/// How a point's gap mark (`missed_before`, `gap_ms`) is counted from the times alone: the one
/// rule of the live stream, a gap's edges in a readout, a restart gap's points, logged
/// recordings and the marks a filled gap revises (where the board's ticks cannot say,
/// ``LogTicks/samplesBetween(_:_:spanByTime:periodMs:)``).
enum GapCount {
    /// Samples missing between two points `stepMs` apart at `periodMs` a sample: the step in
    /// periods, rounded, less the one that ends it, and never fewer than none (jitter, a step
    /// under a period and a half, misses nothing).
    static func missed(stepMs: Double, periodMs: Double) -> Int {
        max(0, Int((stepMs / periodMs).rounded()) - 1)
    }

    /// The gap's length stored beside `missed` missing samples: the step, at least 1 ms; 0 when
    /// none is missing.
    static func milliseconds(missed: Int, stepMs: Double) -> Int {
        missed > 0 ? max(1, Int(stepMs.rounded())) : 0
    }
}
