/// The gyro samples a peripheral board handed to bluetoothd, as runs of consecutive 16-bit
/// sample numbers (the x axis of the model's signal), so a test can tell a sample the gateway
/// lost from one the board never sent.
struct SentSampleLog: Sendable {
    struct Run: Sendable {
        var first: UInt16
        var last: UInt16
        var count: Int
        /// Wall-clock seconds (CLOCK_REALTIME) of the first and last sample.
        var start: Double
        var end: Double
    }

    private(set) var runs: [Run] = []

    mutating func record(x: UInt16, at time: Double) {
        if var run = runs.last, run.last &+ 1 == x {
            run.last = x
            run.count += 1
            run.end = time
            runs[runs.count - 1] = run
        } else {
            runs.append(Run(first: x, last: x, count: 1, start: time, end: time))
        }
    }

    /// The board restarted its sample numbering (power cycle or reset).
    mutating func boardReset() {
        runs.append(Run(first: 0, last: 0, count: 0, start: 0, end: 0))
    }

    /// `first-last (count, start s-end s)` per run, runs of a reset board after a `|`.
    var summary: String {
        runs.map { run in
            run.count == 0 ? "|" : "\(run.first)-\(run.last) (\(run.count), \(seconds(run.start))-\(seconds(run.end)) s)"
        }.joined(separator: " ")
    }

    private func seconds(_ time: Double) -> String {
        let milliseconds = Int64((time * 1000).rounded())
        let fraction = String(milliseconds % 1000)
        return "\(milliseconds / 1000)." + String(repeating: "0", count: 3 - fraction.count) + fraction
    }
}
