import Foundation
import GNSS
import Recording
import Testing

/// Only measured fixes give points a location by default; dead reckoning only when the
/// configuration accepts it, and then marked; manual input and simulator fixes never.
@Suite("Which fixes are merged")
struct FixKindMergeTests {
    static let timeBase = TimeBase(wallNanoseconds: 1_800_000_000_000_000_000, monotonicNanoseconds: 0, systemClockSynchronised: true)

    static func fix(_ status: GNSSFix.Status) -> GNSSFix {
        let when = Date(timeIntervalSince1970: 1_800_000_000)
        return GNSSFix(time: when, timeOfDay: .init(microseconds: 0), mode: .threeD, latitude: 47.1, longitude: 8.5,
                       hdop: 1, systemClockOffset: 0, arrival: when, status: status)
    }

    @Test(arguments: GNSSFix.Status.allCases)
    func onlyMeasurementsByDefault(_ status: GNSSFix.Status) {
        let byDefault = LocatedFix(Self.fix(status), timeBase: Self.timeBase)
        let accepting = LocatedFix(Self.fix(status), timeBase: Self.timeBase, acceptingDeadReckoning: true)
        switch status {
        case .gps, .dgps, .rtkFixed, .rtkFloat, .pps:
            #expect(byDefault?.deadReckoned == false && accepting?.deadReckoned == false)
        case .deadReckoning, .gnssDeadReckoning:
            #expect(byDefault == nil && accepting?.deadReckoned == true)
        case .unknown, .manual, .simulated:
            #expect(byDefault == nil && accepting == nil)
        }
    }

    @Test func deadReckonedLocationsAreMarkedInPoints() {
        var merger = LocationMerger<Int>(maxWait: 1000, freshness: 2000)
        let measured = LocatedFix(time: 1000, latitude: 1, longitude: 2, accuracy: 3)
        let estimated = LocatedFix(time: 2000, latitude: 1.1, longitude: 2, accuracy: 3, deadReckoned: true)
        _ = merger.add(fix: measured, now: 1000)
        _ = merger.add(fix: estimated, now: 2000)
        #expect(merger.locate(0, 1000).location?.deadReckoned == false)
        #expect(merger.locate(0, 1500).location?.deadReckoned == true, "interpolated towards a dead-reckoned fix")
        #expect(merger.locate(0, 2000).location?.deadReckoned == true)
    }

    @Test func simulatorTimeDoesNotCorrectTheClock() {
        var base = TimeBase(wallNanoseconds: 0, monotonicNanoseconds: 0, systemClockSynchronised: false)
        var simulated = Self.fix(.simulated)
        simulated.systemClockOffset = 30
        base.observe(simulated, at: 0)
        #expect(base.source == .unsynchronisedSystemClock)
        var measured = Self.fix(.gps)
        measured.systemClockOffset = 30
        base.observe(measured, at: 0)
        #expect(base.source == .gnssCorrected)
    }
}
