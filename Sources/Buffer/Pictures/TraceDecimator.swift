/// Reduces a trace to what a pixel column can show: the smallest and largest value of the
/// samples falling in each column, in the order they occurred. Peaks survive (a one-sample
/// spike is a column's maximum) while the vertex count stays at most two per column,
/// whatever the session's length.
struct TraceDecimator {
    /// A vertex in chart units: `column` from 0 to `columns`, `value` as sampled.
    struct Vertex: Hashable {
        var column: Double
        var value: Double
    }

    /// Number of pixel columns of the chart.
    var columns: Int
    /// Time of column 0 and of the right edge, epoch milliseconds.
    var range: ClosedRange<Double>

    /// The column a time falls in.
    func column(of time: Double) -> Int {
        let span = range.upperBound - range.lowerBound
        guard span > 0 else { return 0 }
        return min(columns - 1, max(0, Int((time - range.lowerBound) / span * Double(columns))))
    }

    /// Runs of vertices (a new run where the line breaks) for one axis of `samples`. A break
    /// inside a column is below a pixel wide, so it is kept only when it starts a new column:
    /// the number of runs is bounded by the columns too.
    func runs(_ samples: [SessionPictureModel.Sample], value: (SessionPictureModel.Sample) -> Double) -> [[Vertex]] {
        var runs: [[Vertex]] = []
        var run: [Vertex] = []
        var bucket: (column: Int, low: Double, lowIndex: Int, high: Double, highIndex: Int)?
        func flush() {
            guard let b = bucket else { return }
            let x = Double(b.column) + 0.5
            if b.low == b.high {
                run.append(Vertex(column: x, value: b.low))
            } else if b.lowIndex < b.highIndex {
                run.append(Vertex(column: x, value: b.low))
                run.append(Vertex(column: x, value: b.high))
            } else {
                run.append(Vertex(column: x, value: b.high))
                run.append(Vertex(column: x, value: b.low))
            }
        }
        for (index, sample) in samples.enumerated() {
            let v = value(sample)
            guard v.isFinite else { continue }
            let c = column(of: sample.time)
            if var b = bucket, b.column == c {
                if v < b.low { b.low = v; b.lowIndex = index }
                if v > b.high { b.high = v; b.highIndex = index }
                bucket = b
                continue
            }
            flush()
            if sample.breaksLine, !run.isEmpty {
                runs.append(run)
                run = []
            }
            bucket = (c, v, index, v, index)
        }
        flush()
        if !run.isEmpty { runs.append(run) }
        return runs
    }
}
