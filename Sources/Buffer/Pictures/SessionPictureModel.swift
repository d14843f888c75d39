import Recording

/// What the pictures of one session show, gathered from its dataset: per board the gyro
/// samples and the stretches to shade, the walker's GNSS track with the stretches without a
/// fix, the survey and the session's numbers. Pure data; `SessionPicture` draws it.
public struct SessionPictureModel: Sendable {
    /// One gyro sample of a trace, °/s, epoch milliseconds.
    public struct Sample: Sendable, Hashable {
        public var time: Double
        public var x: Double
        public var y: Double
        public var z: Double
        /// The trace is interrupted before this sample (a gap or the edge of a shaded stretch),
        /// so no line joins it to the previous one.
        public var breaksLine: Bool

        /// A sample.
        public init(time: Double, x: Double, y: Double, z: Double, breaksLine: Bool = false) {
            self.time = time
            self.x = x
            self.y = y
            self.z = z
            self.breaksLine = breaksLine
        }
    }

    /// A stretch of a trace drawn with a shaded background, epoch milliseconds.
    public struct ShadedStretch: Sendable, Hashable {
        /// Why the stretch is shaded.
        public enum Kind: Sendable, Hashable {
            /// Samples the board took but the gateway never received.
            case gap(missedSamples: Int)
            /// Samples that arrived late and were filled in afterwards (issue 21's
            /// per-point `backfilled` flag); shaded so a reader knows they came later.
            case backfilled
        }

        public var kind: Kind
        public var start: Double
        public var end: Double

        /// A stretch.
        public init(kind: Kind, start: Double, end: Double) {
            self.kind = kind
            self.start = start
            self.end = end
        }
    }

    /// One board's trace.
    public struct BoardTrace: Sendable {
        public var board: String
        /// By time.
        public var samples: [Sample]
        public var shaded: [ShadedStretch]

        /// A trace.
        public init(board: String, samples: [Sample], shaded: [ShadedStretch]) {
            self.board = board
            self.samples = samples
            self.shaded = shaded
        }

        /// Gyro samples lost in the gaps of this trace.
        public var missedSamples: Int {
            shaded.reduce(0) { total, stretch in
                if case let .gap(missed) = stretch.kind { return total + missed }
                return total
            }
        }
    }

    /// A position of the track.
    public struct Fix: Sendable, Hashable {
        public var latitude: Double
        public var longitude: Double
        /// Epoch milliseconds.
        public var time: Double

        /// A position.
        public init(latitude: Double, longitude: Double, time: Double) {
            self.latitude = latitude
            self.longitude = longitude
            self.time = time
        }
    }

    /// Time during which the points had no location, between the last fix before it (if any)
    /// and the first fix after it (if any).
    public struct FixOutage: Sendable, Hashable {
        public var before: Fix?
        public var after: Fix?
        /// Epoch milliseconds of the first and last point without a location.
        public var start: Double
        public var end: Double

        /// An outage.
        public init(before: Fix?, after: Fix?, start: Double, end: Double) {
            self.before = before
            self.after = after
            self.start = start
            self.end = end
        }
    }

    public var sessionID: String
    /// Epoch milliseconds.
    public var startedAt: Double
    public var endedAt: Double?
    public var state: String
    public var timeSource: String?
    public var traces: [BoardTrace]
    /// Distinct consecutive positions, by time.
    public var track: [Fix]
    public var outages: [FixOutage]
    public var survey: HazardSurvey?
    /// Metres walked (the stored figure once the session stopped, else measured on the track).
    public var distanceMetres: Double
    /// Points with a location, of all points.
    public var locatedPoints: Int

    /// A model.
    public init(sessionID: String, startedAt: Double, endedAt: Double?, state: String, timeSource: String?,
                traces: [BoardTrace], track: [Fix], outages: [FixOutage], survey: HazardSurvey?,
                distanceMetres: Double, locatedPoints: Int) {
        self.sessionID = sessionID
        self.startedAt = startedAt
        self.endedAt = endedAt
        self.state = state
        self.timeSource = timeSource
        self.traces = traces
        self.track = track
        self.outages = outages
        self.survey = survey
        self.distanceMetres = distanceMetres
        self.locatedPoints = locatedPoints
    }

    /// Gyro samples received, all boards.
    public var pointCount: Int { traces.reduce(0) { $0 + $1.samples.count } }
    /// Gyro samples lost in gaps, all boards.
    public var missedSamples: Int { traces.reduce(0) { $0 + $1.missedSamples } }
    /// Milliseconds from the start to the stop (to the last sample while recording).
    public var durationMilliseconds: Double {
        let last = traces.compactMap { $0.samples.last?.time }.max() ?? startedAt
        return max(0, (endedAt ?? last) - startedAt)
    }
    /// First and last sample time of all boards, the common time axis of the traces.
    public var timeRange: ClosedRange<Double>? {
        let first = traces.compactMap { $0.samples.first?.time }.min()
        let last = traces.compactMap { $0.samples.last?.time }.max()
        guard let first, let last else { return nil }
        return first...max(last, first)
    }
}

extension SessionPictureModel {
    /// The model of a recombined session.
    public init(_ d: SessionDataset) {
        var byBoard: [String: [RecordedPoint]] = [:]
        for bp in d.points { byBoard[bp.board, default: []].append(bp.point) }
        let boards = (d.boards + byBoard.keys).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        let traces = boards.sorted().map { Self.trace(board: $0, points: byBoard[$0] ?? []) }
        let (track, outages, located, measured) = Self.track(d.points.map(\.point))
        self.init(sessionID: d.sessionID, startedAt: d.startedAt, endedAt: d.endedAt, state: d.state, timeSource: d.timeSource,
                  traces: traces, track: track, outages: outages, survey: d.survey,
                  distanceMetres: d.distanceMetres ?? measured, locatedPoints: located)
    }

    /// One board's samples and shaded stretches. A point's gap (`missedBefore`, lasting
    /// `gapMilliseconds`) shades the time from the previous sample to it; a run of backfilled
    /// points shades from its first to its last sample.
    static func trace(board: String, points: [RecordedPoint]) -> BoardTrace {
        var samples: [Sample] = []
        var shaded: [ShadedStretch] = []
        var backfilledRun: (start: Double, end: Double)?
        samples.reserveCapacity(points.count)
        for point in points {
            let g = point.gyroscope
            let gap = point.missedBefore > 0
            if let run = backfilledRun, !point.backfilled || gap {
                shaded.append(ShadedStretch(kind: .backfilled, start: run.start, end: run.end))
                backfilledRun = nil
            }
            if gap {
                // Older points have no gap duration: the previous sample of the board bounds it.
                let start = point.gapMilliseconds > 0 ? g.timestamp - Double(point.gapMilliseconds) : samples.last?.time ?? g.timestamp
                shaded.append(ShadedStretch(kind: .gap(missedSamples: point.missedBefore), start: start, end: g.timestamp))
            }
            if point.backfilled { backfilledRun = (backfilledRun?.start ?? g.timestamp, g.timestamp) }
            samples.append(Sample(time: g.timestamp, x: Double(g.x), y: Double(g.y), z: Double(g.z), breaksLine: gap))
        }
        if let run = backfilledRun { shaded.append(ShadedStretch(kind: .backfilled, start: run.start, end: run.end)) }
        return BoardTrace(board: board, samples: samples, shaded: shaded)
    }

    /// The walker's track from every board's points (they share one receiver): distinct
    /// consecutive positions, the stretches without a location, the number of located points
    /// and the distance measured along the track.
    static func track(_ points: [RecordedPoint]) -> ([Fix], [FixOutage], Int, Double) {
        var track: [Fix] = []
        var outages: [FixOutage] = []
        var located = 0
        var distance = TrackDistance()
        var open: (start: Double, end: Double)?
        for point in points {
            let time = point.gyroscope.timestamp
            guard let l = point.location else {
                open = (open?.start ?? time, time)
                continue
            }
            located += 1
            let fix = Fix(latitude: l.latitude, longitude: l.longitude, time: l.timestamp)
            if let o = open {
                outages.append(FixOutage(before: track.last, after: fix, start: o.start, end: o.end))
                open = nil
            }
            if let last = track.last, last.latitude == fix.latitude, last.longitude == fix.longitude { continue }
            track.append(fix)
            distance.add(latitude: l.latitude, longitude: l.longitude, accuracy: l.accuracy.map(Double.init))
        }
        if let o = open { outages.append(FixOutage(before: track.last, after: nil, start: o.start, end: o.end)) }
        return (track, outages, located, distance.metres)
    }
}
