import Foundation

/// Distance walked along a GNSS track, robust to a standing receiver's jitter: a step counts
/// only once the position has moved further from the last anchor than the fix's accuracy
/// (at least `minimumStep`).
public struct TrackDistance: Sendable {
    /// Metres so far.
    public private(set) var metres: Double = 0
    /// Smallest step counted, metres.
    public var minimumStep: Double
    private var anchor: (lat: Double, lon: Double)?

    /// An empty track.
    public init(minimumStep: Double = 5) { self.minimumStep = minimumStep }

    /// Adds a position.
    public mutating func add(latitude: Double, longitude: Double, accuracy: Double?) {
        guard latitude.isFinite, longitude.isFinite else { return }
        guard let a = anchor else { anchor = (latitude, longitude); return }
        let d = Self.haversine(a.lat, a.lon, latitude, longitude)
        if d >= max(minimumStep, accuracy ?? 0) {
            metres += d
            anchor = (latitude, longitude)
        }
    }

    /// Great-circle distance in metres on a sphere of the WGS84 mean radius.
    public static func haversine(_ lat1: Double, _ lon1: Double, _ lat2: Double, _ lon2: Double) -> Double {
        let r = 6_371_008.8
        let p1 = lat1 * .pi / 180, p2 = lat2 * .pi / 180
        let dp = p2 - p1, dl = (lon2 - lon1) * .pi / 180
        let h = sin(dp / 2) * sin(dp / 2) + cos(p1) * cos(p2) * sin(dl / 2) * sin(dl / 2)
        return 2 * r * asin(min(1, sqrt(h)))
    }
}

