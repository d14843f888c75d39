import ExportFormats
import Recording

/// Pictures of a session for a researcher to look at before reading the data: per board the
/// gyro traces against time with gaps (and backfilled stretches) shaded, the hazard survey's
/// answers, the session's numbers and the GNSS track to scale. Either a self-contained HTML
/// page or one standalone SVG image: inline SVG and CSS only, no fonts, scripts or anything
/// fetched, so the file opens offline. Traces are decimated to pixel columns, so a long
/// session's file stays small and quick to open; the page says so.
public enum SessionPicture {
    /// Pixel columns of each trace (and so at most two vertices per column per axis).
    public static let traceColumns = 1000
    static let traceHeight = 170.0
    static let mapHeight = 420.0

    /// The session as one self-contained HTML page.
    public static func html(_ d: SessionDataset) -> String { html(SessionPictureModel(d)) }

    /// The session as one standalone SVG image.
    public static func svg(_ d: SessionDataset) -> String { svg(SessionPictureModel(d)) }

    /// The page of a model.
    public static func html(_ m: SessionPictureModel) -> String {
        let layout = Layout(m)
        var out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            + "<title>Session \(PictureText.escaped(m.sessionID)) (mwgate)</title><style>\(style)</style></head><body>\n"
            + "<h1>Walking session</h1><p class=\"sub\">\(PictureText.escaped(m.sessionID)) · \(PictureText.escaped(subtitle(m)))</p>\n"
            + "<div class=\"top\"><section class=\"numbers\"><h2>Numbers</h2><table>"
        for (label, value) in numbers(m) {
            out += "<tr><th>\(PictureText.escaped(label))</th><td>\(PictureText.escaped(value))</td></tr>"
        }
        out += "</table></section><section class=\"survey\"><h2>Hazard survey</h2>"
        let answers = surveyLines(m)
        out += answers.isEmpty ? "" : "<ul>" + answers.map { "<li>\(PictureText.escaped($0))</li>" }.joined() + "</ul>"
        out += "</section></div>\n<section><h2>GNSS track</h2>" + layout.map.svg(m) + "\n"
            + "<p class=\"legend\">\(PictureText.escaped(trackLegend(m)))</p></section>\n"
            + "<section><h2>Gyroscope</h2>" + legend(m) + "\n"
        for trace in m.traces { out += layout.chart.svg(trace) + "\n" }
        out += "<p class=\"note\">\(PictureText.escaped(decimationNote(m)))</p></section>\n"
            + "<footer>Written by mwgate’s <code>mwctl export --format html</code>; self-contained, opens offline.</footer>\n"
            + "</body></html>\n"
        return out
    }

    /// The standalone image of a model: the same pieces stacked, text drawn as SVG text.
    public static func svg(_ m: SessionPictureModel) -> String {
        let layout = Layout(m)
        let width = layout.chart.width
        var body = ""
        var y = 30.0
        body += "<text x=\"12\" y=\"\(Int(y))\" font-size=\"20\" font-weight=\"bold\">Walking session \(PictureText.escaped(m.sessionID))</text>"
        y += 22
        body += "<text x=\"12\" y=\"\(Int(y))\" fill=\"#555\">\(PictureText.escaped(subtitle(m)))</text>"
        let rows = numbers(m)
        let answers = ["Hazard survey:"] + surveyLines(m)
        let top = y + 10
        for (i, (label, value)) in rows.enumerated() {
            let row = top + 18 * Double(i + 1)
            body += "<text x=\"12\" y=\"\(Int(row))\" fill=\"#555\">\(PictureText.escaped(label))</text>"
                + "<text x=\"170\" y=\"\(Int(row))\">\(PictureText.escaped(value))</text>"
        }
        for (i, line) in answers.enumerated() {
            body += "<text x=\"\(Int(width / 2) + 40)\" y=\"\(Int(top + 18 * Double(i + 1)))\"\(i == 0 ? " font-weight=\"bold\"" : "")>"
                + PictureText.escaped(line) + "</text>"
        }
        y = top + 18 * Double(max(rows.count, answers.count)) + 16
        body += "<g transform=\"translate(0 \(Int(y)))\">" + layout.map.svg(m) + "</g>"
        y += layout.map.height + 18
        body += "<text x=\"12\" y=\"\(Int(y))\" fill=\"#555\">\(PictureText.escaped(trackLegend(m)))</text>"
        y += 10
        body += "<g transform=\"translate(0 \(Int(y)))\">" + legend(m) + "</g>"
        y += 26
        for trace in m.traces {
            body += "<g transform=\"translate(0 \(Int(y)))\">" + layout.chart.svg(trace) + "</g>"
            y += layout.chart.height + 6
        }
        y += 14
        body += "<text x=\"12\" y=\"\(Int(y))\" fill=\"#555\">\(PictureText.escaped(decimationNote(m)))</text>"
        y += 14
        return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            + "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(Int(width))\" height=\"\(Int(y))\" viewBox=\"0 0 \(Int(width)) \(Int(y))\""
            + " font-family=\"sans-serif\" font-size=\"13\"><title>Walking session \(PictureText.escaped(m.sessionID))</title>"
            + "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>" + body + "</svg>\n"
    }

    /// The pieces' sizes, shared by both formats.
    struct Layout {
        var chart: TraceChart
        var map: TrackMap

        init(_ m: SessionPictureModel) {
            let range = m.timeRange ?? m.startedAt...(m.startedAt + 1)
            let span = range.upperBound > range.lowerBound ? range : range.lowerBound...(range.lowerBound + 1)
            chart = TraceChart(plotWidth: SessionPicture.traceColumns, plotHeight: SessionPicture.traceHeight, range: span)
            map = TrackMap(width: chart.width, height: SessionPicture.mapHeight)
        }
    }

    static func subtitle(_ m: SessionPictureModel) -> String {
        let state = switch m.state {
        case "recording": "still recording"
        case "awaiting_survey": "stopped, awaiting the survey"
        case "submitted": "survey submitted"
        default: m.state
        }
        return "started " + PictureText.dateTime(m.startedAt) + " · " + state
    }

    /// The session's numbers, label and value.
    static func numbers(_ m: SessionPictureModel) -> [(String, String)] {
        let received = m.pointCount, missed = m.missedSamples
        let lossPercent = received + missed == 0 ? 0 : Double(missed) / Double(received + missed) * 100
        let gaps = m.traces.reduce(0) { $0 + $1.shaded.filter { if case .gap = $0.kind { true } else { false } }.count }
        var rows: [(String, String)] = [
            ("Started", PictureText.dateTime(m.startedAt)),
            ("Stopped", m.endedAt.map(PictureText.dateTime) ?? "still recording"),
            ("Duration", PictureText.duration(milliseconds: m.durationMilliseconds)),
            ("Boards", m.traces.isEmpty ? "none" : m.traces.map(\.board).joined(separator: ", ")),
            ("Points", PictureText.number(Double(received)) + " gyro samples"),
            ("Loss", PictureText.number(Double(missed)) + " samples missed in " + PictureText.number(Double(gaps))
                + (gaps == 1 ? " gap (" : " gaps (") + PictureText.number(lossPercent, decimals: 2) + " %)"),
            ("Distance", PictureText.distance(metres: m.distanceMetres)),
        ]
        let locatedPercent = received == 0 ? 0 : Double(m.locatedPoints) / Double(received) * 100
        rows.append(("Located", PictureText.number(locatedPercent, decimals: 1) + " % of points, "
                     + PictureText.number(Double(m.outages.count)) + (m.outages.count == 1 ? " stretch" : " stretches") + " without a fix"))
        if let source = m.timeSource { rows.append(("Time source", source)) }
        return rows
    }

    /// The survey's answers as lines.
    static func surveyLines(_ m: SessionPictureModel) -> [String] {
        switch m.survey {
        case .noHazard: return ["No hazard reported."]
        case let .hazards(map):
            return map.sorted { $0.key < $1.key }.map { "\($0.key): intensity \($0.value)" }
        case nil:
            return [m.state == "recording" ? "Not asked yet: the session is still recording." : "Not answered yet: the walker has not submitted the survey."]
        }
    }

    static func trackLegend(_ m: SessionPictureModel) -> String {
        var text = "Track to scale (north up, local equirectangular projection): teal dot start, black square end"
        if !m.outages.isEmpty {
            let longest = m.outages.map { $0.end - $0.start }.max() ?? 0
            text += "; dashed orange: no fix (\(m.outages.count) " + (m.outages.count == 1 ? "stretch" : "stretches")
                + ", longest " + PictureText.duration(milliseconds: longest) + ")"
        }
        return text + "."
    }

    /// The traces' key: axis colours, and the shadings present.
    static func legend(_ m: SessionPictureModel) -> String {
        var items: [(String, String, Bool)] = TraceChart.axisColors.map { ("\($0.0) (°/s)", $0.1, false) }
        let kinds = m.traces.flatMap(\.shaded)
        items.append(("gap (samples missed)", TraceChart.gapColor, true))
        if kinds.contains(where: { $0.kind == .backfilled }) { items.append(("backfilled later", TraceChart.backfilledColor, true)) }
        var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"legend\" width=\"640\" height=\"20\" font-family=\"sans-serif\" font-size=\"12\">"
        var x = 12.0
        for (label, color, box) in items {
            out += box
                ? "<rect x=\"\(Int(x))\" y=\"4\" width=\"18\" height=\"12\" fill=\"\(color)\"/>"
                : "<line x1=\"\(Int(x))\" x2=\"\(Int(x) + 18)\" y1=\"10\" y2=\"10\" stroke=\"\(color)\" stroke-width=\"2.5\"/>"
            out += "<text x=\"\(Int(x) + 24)\" y=\"14\">\(PictureText.escaped(label))</text>"
            x += 24 + Double(label.count) * 7 + 18
        }
        return out + "</svg>"
    }

    static func decimationNote(_ m: SessionPictureModel) -> String {
        "Drawn decimated: " + PictureText.number(Double(m.pointCount)) + " samples shown as the lowest and highest value of each of "
            + "\(traceColumns) pixel columns per board (peaks kept, detail finer than a column is not drawn). "
            + "Every sample is in the CSV or JSON export."
    }

    static let style = """
        body{font-family:sans-serif;margin:24px;color:#222;max-width:1100px}\
        h1{margin:0 0 4px;font-size:24px}h2{font-size:16px;margin:18px 0 6px}.sub{color:#555;margin:0}\
        .top{display:flex;gap:48px;flex-wrap:wrap}table{border-collapse:collapse}\
        th{text-align:left;font-weight:normal;color:#555;padding:2px 16px 2px 0}td{padding:2px 0}\
        ul{margin:0;padding-left:20px}svg{display:block}svg.trace{margin-bottom:6px}\
        .legend,.note{color:#555;font-size:13px}footer{color:#888;font-size:12px;margin-top:16px}
        """
}
