#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Groups the sentences of one reporting cycle and merges them into one ``GNSSFix``.
///
/// Pure: sentences and their arrival times in, fixes out. The cycle key is the UTC time
/// of day of the timestamped sentences (RMC, GGA, GLL, GNS, ZDA, GST). A cycle closes when
/// a sentence of another cycle arrives, or earlier, once the assembler has learned which
/// sentence ends each cycle on this receiver (as gpsd does): the last sentence of two
/// consecutive cycles, when it occurs once per cycle.
///
/// A sentence belongs to the cycle when its time is the cycle's, or within 10 ms of it and
/// of a kind the cycle does not have yet (receivers round fractions differently across the
/// sentences of one cycle, `.99` in one and `.00` in the next). A second RMC or GGA is
/// always a new cycle, so fixes 10, 50 or 100 ms apart (100, 20 or 10 Hz) are never merged,
/// and never dropped as late sentences of the cycle before.
///
/// Each fix says what kind it is (``GNSSFix/Status``, gpsd's numbering): from the GGA
/// quality, else the NMEA 2.3 mode indicator of RMC, GLL, GNS or VTG. A fix needs a valid
/// status (RMC/GLL `A`, GGA quality above 0, a usable GNS mode) not contradicted by a mode
/// indicator `N`; a GGA naming fewer than 3 satellites in a satellite fix does not make one
/// (gpsd's minimum) unless another sentence of the cycle says the fix is valid. A dead
/// reckoning, manual or simulator fix keeps its position and its status, so users of the
/// fix (the recorder) can refuse what is not a measurement.
///
/// The fix's dimension is GSA's when it says 3D or when no GGA/GNS altitude came with it; a
/// valid GGA or GNS altitude makes the fix 3D with that altitude even when GSA says 2D, as
/// gpsd reports it (its TPV `mode` 3 with `altMSL`).
///
/// Date reasoning follows gpsd: the date comes from ZDA (4-digit year) or RMC (two-digit
/// year, `yy < 69` is 20yy); cycles without a date inherit the last date, moving to the
/// next day when the time of day goes backwards by more than 12 hours (midnight). Dates
/// from cycles without a fix are used for that cycle only, because cold-booting receivers
/// send garbage dates (GPS week rollover) until they lock. With
/// ``Options/weekRolloverPivot`` set, dates before the pivot are moved forward by 1024
/// weeks until they are not, as gpsd does with its build date.
public struct FixAssembler: Sendable {
    /// Behaviour switches.
    public struct Options: Sendable {
        /// Dates earlier than this are assumed to suffer the 10-bit GPS week rollover and
        /// are moved forward in steps of 1024 weeks. Nil leaves dates as sent (replaying
        /// old logs).
        public var weekRolloverPivot: Date?
        /// Emit a cycle as soon as its learned last sentence arrives instead of waiting
        /// for the next cycle's first sentence.
        public var learnsCycleEnder: Bool

        public init(weekRolloverPivot: Date? = nil, learnsCycleEnder: Bool = true) {
            self.weekRolloverPivot = weekRolloverPivot
            self.learnsCycleEnder = learnsCycleEnder
        }

        /// For live receivers: rollover pivot 2024-01-01, cycle-ender learning on.
        public static let live = Options(
            weekRolloverPivot: Date(timeIntervalSince1970: 1_704_067_200), learnsCycleEnder: true)
    }

    /// What the assembler has dropped or inferred, for status reports.
    public struct Statistics: Sendable, Equatable {
        /// Fixes emitted.
        public var fixes = 0
        /// RMC/GGA/GLL/GNS/ZDA/GST sentences with an empty time field (cold start).
        public var sentencesWithoutTime = 0
        /// Timestamped sentences that arrived after their cycle had been emitted.
        public var lateSentences = 0
        /// Dates that were not a real calendar day.
        public var invalidDates = 0
        /// Dates moved forward by 1024 weeks.
        public var rolloverCorrections = 0
        public init() {}
    }

    public let options: Options
    public private(set) var statistics = Statistics()

    private var cycle = Cycle()
    /// The cycle emitted last, to tell its late sentences from the next cycle's first ones.
    private var emitted: (time: NMEATimeOfDay, kinds: Cycle.Kinds)?
    private var dateAnchor: (date: NMEADate, timeOfDay: NMEATimeOfDay)?
    private var enderCandidate: Int?
    private var ender: Int?

    public init(options: Options = Options()) {
        self.options = options
    }

    /// Adds one sentence; calls `emit` for each cycle this completes (at most two).
    public mutating func ingest(
        _ sentence: NMEASentence, arrival: Date, emit: (GNSSFix) -> Void
    ) {
        guard let kind = Self.kind(of: sentence) else { return }
        if Self.carriesTime(sentence) {
            guard let time = sentence.time else {
                // A cold-start sentence with no time: nothing here can be keyed, and any
                // untimed sentences gathered so far belong to the same empty cycle.
                statistics.sentencesWithoutTime += 1
                if cycle.time == nil { cycle = Cycle() }
                return
            }
            if cycle.time == nil, let emitted, Self.belongs(time, kind, toCycleAt: emitted.time, with: emitted.kinds) {
                statistics.lateSentences += 1
                ender = nil  // the learned ender was wrong; relearn from time changes
                return
            }
            if let current = cycle.time, !Self.belongs(time, kind, toCycleAt: current, with: cycle.kinds) {
                learnEnder()
                close(emit)
            }
            if cycle.time == nil {
                cycle.time = time
                if cycle.arrival == nil { cycle.arrival = arrival }
            }
        } else if cycle.arrival == nil {
            cycle.arrival = arrival
        }
        cycle.merge(sentence)
        if kind >= 0 {
            cycle.noteKind(kind)
            if options.learnsCycleEnder, let ender, ender == kind, cycle.time != nil,
                !cycle.kindRepeated(kind)
            {
                close(emit)
            }
        }
    }

    /// Adds one sentence and returns the fixes it completed.
    public mutating func ingest(_ sentence: NMEASentence, arrival: Date) -> [GNSSFix] {
        var fixes: [GNSSFix] = []
        ingest(sentence, arrival: arrival) { fixes.append($0) }
        return fixes
    }

    /// Emits the cycle in progress (end of stream, or the source went quiet).
    public mutating func flush(_ emit: (GNSSFix) -> Void) {
        if cycle.time != nil { close(emit) } else { cycle = Cycle() }
    }

    /// Emits the cycle in progress and returns it, if any.
    public mutating func flush() -> GNSSFix? {
        var fix: GNSSFix?
        flush { fix = $0 }
        return fix
    }

    // MARK: - Cycle bookkeeping

    private mutating func learnEnder() {
        guard options.learnsCycleEnder else { return }
        // Only a sentence that occurs once per cycle can mark its end: with two GSAs per
        // cycle, the first one would close the cycle too early.
        var candidate: Int?
        if let last = cycle.lastKind, !cycle.kindRepeated(last) { candidate = last }
        if let candidate, candidate == enderCandidate {
            ender = candidate
        } else {
            ender = nil
        }
        enderCandidate = candidate
    }

    /// Whether a timed sentence of `kind` at `time` is part of the cycle at `cycleTime`
    /// that already has `kinds`: the same time, or within 10 ms and a kind it lacks.
    private static func belongs(_ time: NMEATimeOfDay, _ kind: Int, toCycleAt cycleTime: NMEATimeOfDay, with kinds: Cycle.Kinds) -> Bool {
        time == cycleTime || (time.sameCycle(as: cycleTime) && !kinds.contains(kind))
    }

    private mutating func close(_ emit: (GNSSFix) -> Void) {
        defer { cycle = Cycle() }
        guard let timeOfDay = cycle.time else { return }
        emitted = (timeOfDay, cycle.kinds)
        let arrival = cycle.arrival ?? Date(timeIntervalSince1970: 0)
        var fix = cycle.fix(timeOfDay: timeOfDay, arrival: arrival)
        if let date = resolveDate(timeOfDay: timeOfDay, trusted: fix.mode >= .twoD) {
            let days = date.daysSinceEpoch
            let seconds = Double(days) * 86_400 + Double(timeOfDay.microseconds) / 1_000_000
            let time = Date(timeIntervalSince1970: seconds)
            fix.time = time
            fix.systemClockOffset = time.timeIntervalSince(arrival)
        }
        statistics.fixes += 1
        emit(fix)
    }

    /// The date of the closing cycle, or nil when none is known yet.
    private mutating func resolveDate(timeOfDay: NMEATimeOfDay, trusted: Bool) -> NMEADate? {
        var own: NMEADate?
        if let zda = cycle.zdaDate {
            own = zda
        } else if let rmc = cycle.rmcDate {
            own = NMEADate(year: rmc.year < 69 ? 2000 + rmc.year : 1900 + rmc.year,
                           month: rmc.month, day: rmc.day)
        }
        if let candidate = own, !candidate.isValid {
            statistics.invalidDates += 1
            own = nil
        }
        var date: NMEADate
        if let own {
            date = correctRollover(own)
            if trusted || dateAnchor == nil { dateAnchor = (date, timeOfDay) }
        } else if let anchor = dateAnchor {
            date = anchor.date
            // Time of day went backwards by more than half a day: we crossed midnight.
            if timeOfDay.microseconds + 43_200_000_000 < anchor.timeOfDay.microseconds {
                date = NMEADate(daysSinceEpoch: date.daysSinceEpoch + 1)
            }
            dateAnchor = (date, timeOfDay)
        } else {
            return nil
        }
        return date
    }

    private mutating func correctRollover(_ date: NMEADate) -> NMEADate {
        guard let pivot = options.weekRolloverPivot else { return date }
        let pivotDays = Int((pivot.timeIntervalSince1970 / 86_400).rounded(.down))
        var days = date.daysSinceEpoch
        guard days < pivotDays else { return date }
        while days < pivotDays { days += 1024 * 7 }
        statistics.rolloverCorrections += 1
        return NMEADate(daysSinceEpoch: days)
    }

    /// An identity for cycle-ender learning: sentence type and talker. GSV counts only on
    /// its last part; TXT, proprietary and unknown sentences are ignored (-1); nil means
    /// the sentence is not merged at all.
    private static func kind(of sentence: NMEASentence) -> Int? {
        func code(_ type: Int, _ talker: NMEATalker) -> Int {
            let talkerCode: Int
            switch talker {
            case .gps: talkerCode = 0
            case .glonass: talkerCode = 1
            case .galileo: talkerCode = 2
            case .beidou: talkerCode = 3
            case .qzss: talkerCode = 4
            case .navic: talkerCode = 5
            case .combined: talkerCode = 6
            case .other: talkerCode = 7
            }
            return type * 8 + talkerCode
        }
        switch sentence {
        case .rmc(let s): return code(0, s.talker)
        case .gga(let s): return code(1, s.talker)
        case .gsa(let s): return code(2, s.talker)
        case .gsv(let s):
            return s.messageNumber != nil && s.messageNumber == s.totalMessages
                ? code(3, s.talker) : -1
        case .vtg(let s): return code(4, s.talker)
        case .gll(let s): return code(5, s.talker)
        case .gns(let s): return code(6, s.talker)
        case .zda(let s): return code(7, s.talker)
        case .gst(let s): return code(8, s.talker)
        case .txt, .proprietary, .unsupported: return nil
        }
    }

    private static func carriesTime(_ sentence: NMEASentence) -> Bool {
        switch sentence {
        case .rmc, .gga, .gll, .gns, .zda, .gst: true
        default: false
        }
    }
}

/// The sentences of one reporting cycle, merged field by field.
private struct Cycle: Sendable {
    var time: NMEATimeOfDay?
    var arrival: Date?
    var rmc: NMEASentence.RMC?
    var gga: NMEASentence.GGA?
    var gll: NMEASentence.GLL?
    var gns: NMEASentence.GNS?
    var vtg: NMEASentence.VTG?
    var gst: NMEASentence.GST?
    var zdaDate: NMEADate?
    var rmcDate: NMEADate?
    var gsaMode: Int?
    var gsaUsed = 0
    var pdop: Double?
    var hdop: Double?
    var vdop: Double?
    var lastKind: Int?
    var kinds = Kinds()
    var repeated = Kinds()

    /// A set of sentence kinds (all < 128).
    struct Kinds: Sendable {
        private var bits: (UInt64, UInt64) = (0, 0)

        func contains(_ kind: Int) -> Bool {
            let bit = UInt64(1) << UInt64(kind & 63)
            return (kind < 64 ? bits.0 : bits.1) & bit != 0
        }

        mutating func insert(_ kind: Int) {
            let bit = UInt64(1) << UInt64(kind & 63)
            if kind < 64 { bits.0 |= bit } else { bits.1 |= bit }
        }
    }

    mutating func merge(_ sentence: NMEASentence) {
        switch sentence {
        case .rmc(let s):
            rmc = s
            if let date = s.date { rmcDate = date }
        case .gga(let s): gga = s
        case .gll(let s): gll = s
        case .gns(let s): gns = s
        case .vtg(let s): vtg = s
        case .gst(let s): gst = s
        case .zda(let s): if let date = s.date { zdaDate = date }
        case .gsa(let s):
            if let mode = s.fixMode { gsaMode = max(gsaMode ?? 0, mode) }
            gsaUsed += s.satellitesUsed
            pdop = pdop ?? s.pdop
            hdop = hdop ?? s.hdop
            vdop = vdop ?? s.vdop
        case .gsv, .txt, .proprietary, .unsupported: break
        }
    }

    mutating func noteKind(_ kind: Int) {
        if kinds.contains(kind) { repeated.insert(kind) }
        kinds.insert(kind)
        lastKind = kind
    }

    func kindRepeated(_ kind: Int) -> Bool { repeated.contains(kind) }

    func fix(timeOfDay: NMEATimeOfDay, arrival: Date) -> GNSSFix {
        let ggaStatus = gga?.quality.flatMap(GNSSFix.Status.init(ggaQuality:)) ?? .unknown
        // gpsd needs 3 satellites for a satellite fix; dead reckoning, manual input and a
        // simulator need none. A GGA that does not name its satellites is taken at its word.
        let ggaSatellitesSuffice = !ggaStatus.isMeasurement || (gga?.satellitesUsed).map { $0 >= 3 } ?? true
        let ggaValid = ggaStatus != .unknown && ggaSatellitesSuffice
        let rmcValid = rmc?.isValid ?? false
        var valid = rmcValid || ggaValid || (gns?.anySystemValid ?? false) || (gll?.isValid ?? false)
        // An explicit "not valid" mode indicator overrides a status flag; a valid GGA quality
        // overrides both.
        if let faa = rmc?.mode ?? gll?.mode, faa == .notValid, !ggaValid { valid = false }

        var latitude: Double?
        var longitude: Double?
        if valid {
            if ggaValid, let lat = gga?.latitude, let lon = gga?.longitude {
                (latitude, longitude) = (lat, lon)
            } else if rmcValid, let lat = rmc?.latitude, let lon = rmc?.longitude {
                (latitude, longitude) = (lat, lon)
            } else if gns?.anySystemValid == true, let lat = gns?.latitude, let lon = gns?.longitude {
                (latitude, longitude) = (lat, lon)
            } else if gll?.isValid == true, let lat = gll?.latitude, let lon = gll?.longitude {
                (latitude, longitude) = (lat, lon)
            }
        }
        let altitude = ggaValid ? gga?.altitudeMSL : (gns?.anySystemValid == true ? gns?.altitudeMSL : nil)
        var mode = GNSSFix.Mode.noFix
        if latitude != nil {
            // gpsd: an altitude from GGA/GNS makes a 3D fix, whatever GSA said.
            mode = gsaMode == 3 || altitude != nil ? .threeD : .twoD
        }
        var fix = GNSSFix(time: nil, timeOfDay: timeOfDay, mode: mode, arrival: arrival, status: .unknown)
        fix.quality = gga?.quality
        guard mode >= .twoD else { return fix }
        fix.status = status(ggaValid: ggaValid, ggaStatus: ggaStatus)
        fix.latitude = latitude
        fix.longitude = longitude
        if mode == .threeD {
            fix.altitudeMSL = altitude
            fix.geoidSeparation = ggaValid ? gga?.geoidSeparation : gns?.geoidSeparation
        }
        if let knots = rmc?.speedKnots {
            fix.speed = knots * knotsToMetresPerSecond
        } else if let knots = vtg?.speedKnots {
            fix.speed = knots * knotsToMetresPerSecond
        } else if let kmh = vtg?.speedKmh {
            fix.speed = kmh / 3.6
        }
        fix.track = rmc?.courseTrue ?? vtg?.courseTrue
        fix.magneticVariation = rmc?.magneticVariation
        fix.hdop = gga?.hdop ?? hdop ?? gns?.hdop
        fix.pdop = pdop
        fix.vdop = vdop
        if let lat = gst?.latitudeSigma, let lon = gst?.longitudeSigma {
            fix.horizontalError = (lat * lat + lon * lon).squareRoot()
            fix.verticalError = gst?.altitudeSigma
        } else {
            // gpsd's estimate without GST: DOP times the user equivalent range error,
            // 19 m (2 m with DGPS) horizontally and 23 m (2.5 m) vertically.
            let differential = gga?.quality == 2
            fix.horizontalError = fix.hdop.map { $0 * (differential ? 2.0 : 19.0) }
            if mode == .threeD { fix.verticalError = vdop.map { $0 * (differential ? 2.5 : 23.0) } }
        }
        fix.satellitesUsed = gga?.satellitesUsed ?? gns?.satellitesUsed ?? (gsaUsed > 0 ? gsaUsed : nil)
        return fix
    }

    /// The kind of a valid fix: the GGA quality when it counts, else the first mode
    /// indicator (RMC, GLL, GNS, VTG), else a plain GPS fix (NMEA before 2.3).
    private func status(ggaValid: Bool, ggaStatus: GNSSFix.Status) -> GNSSFix.Status {
        if ggaValid { return ggaStatus }
        for mode in [rmc?.mode, gll?.mode, gns?.bestMode, vtg?.mode] {
            if let mode, mode != .notValid { return GNSSFix.Status(faaMode: mode) }
        }
        return .gps
    }
}

/// International knot: 1852 m per hour.
let knotsToMetresPerSecond = 1852.0 / 3600.0
