import ExportFormats
import Foundation

/// The GNSS track drawn to scale: a local equirectangular projection around the track's
/// centre (metres east and north; over a walk's few kilometres its error is far below a
/// pixel), one scale for both axes, a scale bar and north up. Start and end are marked, and
/// each stretch without a fix is a dashed line from the last fix before it to the first after.
struct TrackMap {
    static let trackColor = "#6a3d9a"
    static let outageColor = "#e6550d"
    /// Start and end in colours none of the traces use, so neither is mistaken for a trace.
    static let startColor = "#00a087"
    static let endColor = "#222222"

    var width: Double
    var height: Double

    /// The map as an `<svg>` element of `width` × `height`.
    func svg(_ model: SessionPictureModel) -> String {
        var out = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"track\" width=\"\(Int(width))\" height=\"\(Int(height))\""
            + " viewBox=\"0 0 \(Int(width)) \(Int(height))\" font-family=\"sans-serif\" font-size=\"12\">"
            + "<rect width=\"100%\" height=\"100%\" fill=\"#fbfbf8\" stroke=\"#ccc\"/>"
        let fixes = model.track + model.outages.flatMap { [$0.before, $0.after].compactMap { $0 } }
        guard let first = fixes.first else {
            out += "<text x=\"\(Int(width / 2))\" y=\"\(Int(height / 2))\" text-anchor=\"middle\" fill=\"#666\">"
                + "no GNSS fix in this session: no track to draw</text></svg>"
            return out
        }
        let projection = Projection(fixes: fixes, fallback: first, width: width, height: height, margin: 28)
        let drawn = Self.thinned(model.track.map(projection.point))
        if drawn.count > 1 {
            out += "<polyline class=\"track-line\" fill=\"none\" stroke=\"\(Self.trackColor)\" stroke-width=\"2.5\""
                + " stroke-linejoin=\"round\" stroke-linecap=\"round\" points=\""
                + drawn.map { PictureText.coordinate($0.x) + "," + PictureText.coordinate($0.y) }.joined(separator: " ") + "\"/>"
        }
        for outage in model.outages {
            guard let before = outage.before.map(projection.point), let after = outage.after.map(projection.point) else { continue }
            let title = "no fix for " + PictureText.duration(milliseconds: outage.end - outage.start)
                + " from " + PictureText.timeOfDay(outage.start)
            out += "<line class=\"no-fix\" x1=\"\(PictureText.coordinate(before.x))\" y1=\"\(PictureText.coordinate(before.y))\""
                + " x2=\"\(PictureText.coordinate(after.x))\" y2=\"\(PictureText.coordinate(after.y))\" stroke=\"\(Self.outageColor)\""
                + " stroke-width=\"2.5\" stroke-dasharray=\"6 4\"><title>\(PictureText.escaped(title))</title></line>"
            // Rings at both ends, so a short outage still catches the eye.
            for p in [before, after] {
                out += "<circle cx=\"\(PictureText.coordinate(p.x))\" cy=\"\(PictureText.coordinate(p.y))\" r=\"5\" fill=\"none\""
                    + " stroke=\"\(Self.outageColor)\" stroke-width=\"2\"/>"
            }
        }
        for outage in model.outages where outage.before == nil || outage.after == nil {
            // No fix at the start or the end: mark where the track begins or stops instead.
            guard let fix = (outage.before ?? outage.after).map(projection.point) else { continue }
            out += "<circle class=\"no-fix\" cx=\"\(PictureText.coordinate(fix.x))\" cy=\"\(PictureText.coordinate(fix.y))\" r=\"9\""
                + " fill=\"none\" stroke=\"\(Self.outageColor)\" stroke-width=\"2\" stroke-dasharray=\"3 3\"/>"
        }
        if let start = model.track.first.map(projection.point) {
            out += "<circle class=\"start\" cx=\"\(PictureText.coordinate(start.x))\" cy=\"\(PictureText.coordinate(start.y))\" r=\"6\""
                + " fill=\"\(Self.startColor)\" stroke=\"#fff\" stroke-width=\"1.5\"/>"
                + Self.label("start", at: start, color: Self.startColor)
        }
        let start = model.track.first.map(projection.point)
        if let end = model.track.last.map(projection.point), model.track.count > 1 {
            out += "<rect class=\"end\" x=\"\(PictureText.coordinate(end.x - 6))\" y=\"\(PictureText.coordinate(end.y - 6))\""
                + " width=\"12\" height=\"12\" fill=\"\(Self.endColor)\" stroke=\"#fff\" stroke-width=\"1.5\"/>"
                + Self.label("end", at: end, color: Self.endColor, below: start.map { hypot($0.x - end.x, $0.y - end.y) < 30 } ?? false)
        }
        out += scaleBar(metresPerPixel: projection.metresPerPixel)
        out += "<text x=\"\(Int(width) - 16)\" y=\"22\" text-anchor=\"middle\" font-weight=\"bold\">N</text>"
            + "<path d=\"M\(Int(width) - 16) 26 l-5 12 l5 -3 l5 3 z\" fill=\"#333\"/>"
        return out + "</svg>"
    }

    /// Drops points closer than half a pixel to the last one kept: a long track of 1 Hz
    /// fixes stays as many vertices as the map can show.
    static func thinned(_ points: [(x: Double, y: Double)]) -> [(x: Double, y: Double)] {
        var out: [(x: Double, y: Double)] = []
        for (i, p) in points.enumerated() {
            if let last = out.last, i < points.count - 1, hypot(p.x - last.x, p.y - last.y) < 0.5 { continue }
            out.append(p)
        }
        return out
    }

    /// A marker's name beside it: above and to the right, or below when it would cover the
    /// other marker's (a walk that ends where it began).
    static func label(_ text: String, at p: (x: Double, y: Double), color: String, below: Bool = false) -> String {
        "<text x=\"\(PictureText.coordinate(p.x + 10))\" y=\"\(PictureText.coordinate(below ? p.y + 20 : p.y - 8))\" fill=\"\(color)\""
            + " font-weight=\"bold\" paint-order=\"stroke\" stroke=\"#fff\" stroke-width=\"3\">\(text)</text>"
    }

    /// A bar of a round length, about a fifth of the map wide, at the bottom left.
    func scaleBar(metresPerPixel: Double) -> String {
        let metres = PictureText.niceStep(width / 5 * metresPerPixel)
        let pixels = metres / metresPerPixel
        let y = height - 14
        return "<g class=\"scale-bar\"><path d=\"M12 \(Int(y) - 5) v5 h\(PictureText.coordinate(pixels)) v-5\" fill=\"none\" stroke=\"#333\""
            + " stroke-width=\"1.5\"/><text x=\"\(PictureText.coordinate(12 + pixels / 2))\" y=\"\(Int(y) - 8)\" text-anchor=\"middle\">"
            + PictureText.distance(metres: metres) + "</text></g>"
    }

    /// Metres east and north of the track's centre, scaled into the map.
    struct Projection {
        static let earthRadius = 6_371_008.8
        var latitude0: Double
        var longitude0: Double
        var cosLatitude: Double
        var metresPerPixel: Double
        var width: Double
        var height: Double

        init(fixes: [SessionPictureModel.Fix], fallback: SessionPictureModel.Fix, width: Double, height: Double, margin: Double) {
            let lats = fixes.map(\.latitude), lons = fixes.map(\.longitude)
            latitude0 = ((lats.min() ?? fallback.latitude) + (lats.max() ?? fallback.latitude)) / 2
            longitude0 = ((lons.min() ?? fallback.longitude) + (lons.max() ?? fallback.longitude)) / 2
            cosLatitude = cos(latitude0 * .pi / 180)
            self.width = width
            self.height = height
            metresPerPixel = 1
            let metres = fixes.map(east(of:))
            let spanX = (metres.map(\.x).max() ?? 0) - (metres.map(\.x).min() ?? 0)
            let spanY = (metres.map(\.y).max() ?? 0) - (metres.map(\.y).min() ?? 0)
            // At least 50 m across, so a standing walker's few metres of jitter do not fill the map.
            metresPerPixel = max(spanX / (width - 2 * margin), spanY / (height - 2 * margin), 50 / (width - 2 * margin))
        }

        func east(of fix: SessionPictureModel.Fix) -> (x: Double, y: Double) {
            let x = (fix.longitude - longitude0) * .pi / 180 * Self.earthRadius * cosLatitude
            let y = (fix.latitude - latitude0) * .pi / 180 * Self.earthRadius
            return (x, y)
        }

        func point(_ fix: SessionPictureModel.Fix) -> (x: Double, y: Double) {
            let m = east(of: fix)
            return (width / 2 + m.x / metresPerPixel, height / 2 - m.y / metresPerPixel)
        }
    }
}
