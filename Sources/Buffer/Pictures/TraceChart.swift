import ExportFormats
import Foundation

/// One board's gyro traces (x, y, z in °/s) against the session's elapsed time, with its gaps
/// and backfilled stretches shaded behind them. Every board's chart shares the session's time
/// axis, so boards line up one above the other. Lines are decimated to the chart's pixel
/// columns (`TraceDecimator`).
struct TraceChart {
    static let axisColors = [("x", "#d62728"), ("y", "#2ca02c"), ("z", "#1f77b4")]
    static let gapColor = "#f5c6a0"
    static let backfilledColor = "#c6dbef"

    /// Columns of the plot area: one vertex pair per column per axis at most.
    var plotWidth: Int
    var plotHeight: Double
    /// The session's time axis, epoch milliseconds.
    var range: ClosedRange<Double>

    static let left = 56.0, right = 12.0, top = 26.0, bottom = 30.0

    var width: Double { Self.left + Double(plotWidth) + Self.right }
    var height: Double { Self.top + plotHeight + Self.bottom }

    /// The chart as an `<svg>` element of `width` × `height`.
    func svg(_ trace: SessionPictureModel.BoardTrace) -> String {
        let decimator = TraceDecimator(columns: plotWidth, range: range)
        let limit = Self.valueLimit(trace.samples)
        var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"trace\" width=\"\(Int(width))\" height=\"\(Int(height))\""
            + " viewBox=\"0 0 \(Int(width)) \(Int(height))\" font-family=\"sans-serif\" font-size=\"11\">"
            + "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>"
            + "<text x=\"\(Int(Self.left))\" y=\"16\" font-size=\"13\" font-weight=\"bold\">board \(PictureText.escaped(trace.board))</text>"
            + "<text x=\"\(Int(width - Self.right))\" y=\"16\" text-anchor=\"end\" fill=\"#555\">"
            + PictureText.number(Double(trace.samples.count)) + " samples"
            + (trace.missedSamples > 0 ? ", " + PictureText.number(Double(trace.missedSamples)) + " missed" : "") + "</text>"
        out += shading(trace.shaded, decimator: decimator)
        out += grid(limit: limit)
        if trace.samples.isEmpty {
            out += "<text x=\"\(Int(Self.left) + plotWidth / 2)\" y=\"\(Int(Self.top + plotHeight / 2))\" text-anchor=\"middle\""
                + " fill=\"#666\">no samples from this board</text>"
        }
        for (index, (axis, color)) in Self.axisColors.enumerated() {
            let runs = decimator.runs(trace.samples) { [$0.x, $0.y, $0.z][index] }
            guard !runs.isEmpty else { continue }
            out += "<path class=\"axis-\(axis)\" fill=\"none\" stroke=\"\(color)\" stroke-width=\"1.2\" stroke-linejoin=\"round\" d=\""
            for run in runs {
                for (i, v) in run.enumerated() {
                    let x = Self.left + v.column, y = Self.top + plotHeight / 2 - v.value / limit * plotHeight / 2
                    out += (i == 0 ? "M" : "L") + PictureText.coordinate(x) + " " + PictureText.coordinate(y)
                }
                // A lone vertex draws nothing; a short stroke keeps it visible.
                if run.count == 1 { out += "h0.8" }
            }
            out += "\"/>"
        }
        return out + "</svg>"
    }

    /// The shaded stretches, merged where they meet within a pixel column (thousands of short
    /// gaps stay a bounded number of rectangles); each at least one pixel wide.
    func shading(_ stretches: [SessionPictureModel.ShadedStretch], decimator: TraceDecimator) -> String {
        var out = ""
        for (kind, color) in [(false, Self.gapColor), (true, Self.backfilledColor)] {
            var merged: [(first: Int, last: Int, missed: Int, count: Int)] = []
            for s in stretches.sorted(by: { $0.start < $1.start }) {
                let missed: Int
                switch s.kind {
                case let .gap(m): guard !kind else { continue }; missed = m
                case .backfilled: guard kind else { continue }; missed = 0
                }
                let first = decimator.column(of: s.start), last = max(first, decimator.column(of: s.end))
                if let m = merged.last, first <= m.last + 1 {
                    merged[merged.count - 1] = (m.first, max(m.last, last), m.missed + missed, m.count + 1)
                } else {
                    merged.append((first, last, missed, 1))
                }
            }
            for m in merged {
                let title = kind ? "backfilled" : (m.count == 1 ? "gap: " : PictureText.number(Double(m.count)) + " gaps: ") + PictureText.number(Double(m.missed)) + " samples missed"
                out += "<rect class=\"\(kind ? "backfilled" : "gap")\" x=\"\(Int(Self.left) + m.first)\" y=\"\(Int(Self.top))\""
                    + " width=\"\(m.last - m.first + 1)\" height=\"\(PictureText.coordinate(plotHeight))\" fill=\"\(color)\">"
                    + "<title>\(title)</title></rect>"
            }
        }
        return out
    }

    /// Value gridlines (0, ±half, ±limit) and time ticks at round elapsed times.
    func grid(limit: Double) -> String {
        var out = "<g stroke=\"#e3e3e3\" stroke-width=\"1\">"
        var labels = ""
        for fraction in [-1.0, -0.5, 0, 0.5, 1] {
            let y = Self.top + plotHeight / 2 - fraction * plotHeight / 2
            out += "<line x1=\"\(Int(Self.left))\" x2=\"\(Int(Self.left) + plotWidth)\" y1=\"\(PictureText.coordinate(y))\" y2=\"\(PictureText.coordinate(y))\""
                + (fraction == 0 ? " stroke=\"#bbb\"" : "") + "/>"
            labels += "<text x=\"\(Int(Self.left) - 4)\" y=\"\(PictureText.coordinate(y + 4))\" text-anchor=\"end\">"
                + PictureText.number(fraction * limit) + "</text>"
        }
        let seconds = (range.upperBound - range.lowerBound) / 1000
        let step = Self.timeStep(seconds: seconds)
        var t = 0.0
        while t <= seconds + 1e-9, step > 0 {
            let x = Self.left + (seconds > 0 ? t / seconds * Double(plotWidth) : 0)
            out += "<line x1=\"\(PictureText.coordinate(x))\" x2=\"\(PictureText.coordinate(x))\" y1=\"\(Int(Self.top))\""
                + " y2=\"\(PictureText.coordinate(Self.top + plotHeight))\"/>"
            labels += "<text x=\"\(PictureText.coordinate(x))\" y=\"\(PictureText.coordinate(Self.top + plotHeight + 14))\" text-anchor=\"middle\">"
                + PictureText.clock(seconds: t) + "</text>"
            t += step
        }
        labels += "<text x=\"12\" y=\"\(PictureText.coordinate(Self.top + plotHeight / 2))\" text-anchor=\"middle\""
            + " transform=\"rotate(-90 12 \(PictureText.coordinate(Self.top + plotHeight / 2)))\">°/s</text>"
        return out + "</g><g fill=\"#444\">" + labels + "</g>"
    }

    /// The symmetric value range: the largest magnitude of any axis rounded up to a nice
    /// number, at least 10 °/s so a board at rest is not drawn as wild noise.
    static func valueLimit(_ samples: [SessionPictureModel.Sample]) -> Double {
        var largest = 0.0
        for s in samples {
            for v in [s.x, s.y, s.z] where v.isFinite { largest = max(largest, abs(v)) }
        }
        return max(10, 2 * PictureText.niceStep(largest / 2))
    }

    /// Seconds between time ticks: a round step giving four to ten ticks.
    static func timeStep(seconds: Double) -> Double {
        for step in [1.0, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600] where seconds / step <= 10 {
            return step
        }
        return PictureText.niceStep(seconds / 10)
    }
}
