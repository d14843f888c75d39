import Foundation
import Testing
@testable import GNSS

/// Hand-written NMEA for each rule of issue 20: cycles close together are kept apart, every
/// fix says what kind it is (gpsd's TPV `status`), and what is not a measurement never
/// passes as one.
@Suite("Fix kinds and cycles")
struct FixKindTests {
    typealias S = NMEATestData

    /// `hhmmss.sss` for a time of day in milliseconds, with `decimals` fraction digits.
    static func clock(_ milliseconds: Int, decimals: Int) -> String {
        let seconds = milliseconds / 1000
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let fraction = String(String(1000 + milliseconds % 1000).dropFirst().prefix(decimals))
        return two(seconds / 3600) + two(seconds / 60 % 60) + two(seconds % 60) + "." + fraction
    }

    /// Minutes of latitude for fix `i`: each fix is somewhere else.
    static func latitude(_ i: Int) -> String { "3340.\(7753 + i)" }

    @Test(arguments: [(10, 3), (10, 2), (50, 2), (100, 1), (100, 2)])
    func consecutiveFixesAreNeverMergedOrLost(_ interval: Int, _ decimals: Int) throws {
        let start = 10 * 3_600_000 + 21 * 60_000 + 44_000 - interval  // a second rolls over after the first fix
        var text = ""
        for i in 0..<40 {
            let time = Self.clock(start + i * interval, decimals: decimals)
            text += S.sentence("GPRMC,\(time),A,\(Self.latitude(i)),S,01826.0491,E,0.1,,270226,,,A") + "\r\n"
            text += S.sentence("GPGGA,\(time),\(Self.latitude(i)),S,01826.0491,E,1,08,0.9,12.0,M,32.0,M,,") + "\r\n"
        }
        let (fixes, decoder) = NMEADecoder.decode(Array(text.utf8), arrival: Date(timeIntervalSince1970: 0))
        #expect(fixes.count == 40)
        #expect(decoder.assembler.statistics.lateSentences == 0)
        #expect(fixes.map(\.timeOfDay.microseconds) == (0..<40).map { Int64(start + $0 * interval) * 1000 })
        for (i, fix) in fixes.enumerated() {
            let minutes = try #require(Double(Self.latitude(i).dropFirst(2)))
            #expect(abs(try #require(fix.latitude) + 33 + minutes / 60) < 1e-9, "fix \(i)")
        }
    }

    /// The issue's receiver: RMC only, `.990` then `.000`.
    @Test func rmcOnlyStreamTenMillisecondsApart() {
        let text = ["102143.990", "102144.000", "102144.010"].enumerated().map { i, time in
            S.sentence("GPRMC,\(time),A,\(Self.latitude(i)),S,01826.0491,E,0.1,,270226,,,A") + "\r\n"
        }.joined()
        #expect(S.fixes(text).count == 3)
    }

    /// Sentences of one cycle whose fractions were rounded differently still merge.
    @Test func roundingDifferencesWithinACycleStillMerge() throws {
        let text = S.sentence("GPRMC,102143.99,A,3340.7753,S,01826.0491,E,0.1,,270226,,,A") + "\r\n"
            + S.sentence("GPGGA,102144.00,3340.7753,S,01826.0491,E,2,08,0.9,12.0,M,32.0,M,,") + "\r\n"
            + S.sentence("GPRMC,102144.99,A,3340.7754,S,01826.0491,E,0.1,,270226,,,A") + "\r\n"
        let fixes = S.fixes(text)
        #expect(fixes.count == 2)
        #expect(fixes.first?.altitudeMSL == 12.0 && fixes.first?.status == .dgps)
    }

    /// GGA quality -> gpsd's TPV status; RMC says `V` so the quality alone decides.
    @Test(arguments: [(0, nil), (1, 1), (2, 2), (3, 9), (4, 3), (5, 4), (6, 5), (7, 7), (8, 8)] as [(Int, Int?)])
    func ggaQualityMapsAsGpsdStatus(_ quality: Int, _ status: Int?) throws {
        let text = S.sentence("GPRMC,120000.00,V,5155.55442,N,00434.65873,E,0.0,,010125,,") + "\r\n"
            + S.sentence("GPGGA,120000.00,5155.55442,N,00434.65873,E,\(quality),06,1.0,10.0,M,46.0,M,,") + "\r\n"
        let fix = try #require(S.fixes(text).first)
        #expect(fix.hasPosition == (status != nil))
        #expect(status.map { fix.status.rawValue == $0 } ?? (fix.status == .unknown))
        let tpv = TPVEncoder.encode(fix)
        // gpsd leaves a plain GPS fix's status out.
        #expect(tpv.contains("\"status\"") == (status != nil && status != 1), "\(tpv)")
        if let status, status != 1 { #expect(tpv.contains("\"status\":\(status)")) }
    }

    /// The NMEA 2.3 mode indicator of RMC, GLL and VTG counts the same way.
    @Test(arguments: [("A", 1), ("D", 2), ("P", 2), ("E", 5), ("F", 4), ("R", 3), ("M", 7), ("S", 8), ("N", nil)] as [(String, Int?)])
    func modeIndicatorMapsAsGpsdStatus(_ mode: String, _ status: Int?) throws {
        let sentences = [
            "GPRMC,120000.00,A,5155.55442,N,00434.65873,E,0.0,,010125,,,\(mode)",
            "GPGLL,5155.55442,N,00434.65873,E,120000.00,A,\(mode)",
        ]
        for body in sentences {
            let fix = try #require(S.fixes(S.sentence(body) + "\r\n").first)
            #expect(fix.hasPosition == (status != nil), "\(body)")
            #expect(status.map { fix.status.rawValue == $0 } ?? (fix.status == .unknown), "\(body): \(fix.status)")
        }
        // VTG's mode with a position from an NMEA 2.2 RMC (no mode of its own).
        let vtg = S.sentence("GPRMC,120000.00,A,5155.55442,N,00434.65873,E,0.0,,010125,,") + "\r\n"
            + S.sentence("GPVTG,,T,,M,0.0,N,0.0,K,\(mode)") + "\r\n"
        let fix = try #require(S.fixes(vtg).first)
        #expect(fix.status.rawValue == (status ?? 1), "VTG \(mode)")
    }

    /// Today's streams that used to pass as measurements: dead reckoning and a simulator.
    @Test func deadReckoningAndSimulatorAreNotMeasurements() throws {
        func fix(_ quality: Int, satellites: String = "00") throws -> GNSSFix {
            let text = S.sentence("GPRMC,120000.00,V,5155.55442,N,00434.65873,E,0.0,,010125,,,N") + "\r\n"
                + S.sentence("GPGGA,120000.00,5155.55442,N,00434.65873,E,\(quality),\(satellites),,10.0,M,46.0,M,,") + "\r\n"
            return try #require(S.fixes(text).first)
        }
        let deadReckoned = try fix(6)
        #expect(deadReckoned.hasPosition && deadReckoned.isDeadReckoning && !deadReckoned.isMeasurement)
        let simulated = try fix(8)
        #expect(simulated.hasPosition && simulated.status == .simulated && !simulated.isMeasurement && !simulated.isDeadReckoning)
        let measured = try fix(1, satellites: "07")
        #expect(measured.isMeasurement && measured.status == .gps)
    }

    /// gpsd needs 3 satellites: a GGA naming fewer gives no fix, unless the receiver's other
    /// sentences say the fix is valid.
    @Test(arguments: [("00", "V", false), ("02", "V", false), ("03", "V", true), ("12", "V", true), ("", "V", true), ("00", "A", true)])
    func fewerThanThreeSatellitesIsNoFix(_ satellites: String, _ rmcStatus: String, _ hasPosition: Bool) throws {
        let text = S.sentence("GPRMC,120000.00,\(rmcStatus),5155.55442,N,00434.65873,E,0.0,,010125,,") + "\r\n"
            + S.sentence("GPGGA,120000.00,5155.55442,N,00434.65873,E,1,\(satellites),1.0,10.0,M,46.0,M,,") + "\r\n"
        let fix = try #require(S.fixes(text).first)
        #expect(fix.hasPosition == hasPosition, "\(satellites) satellites, RMC \(rmcStatus)")
    }

    @Test func combinedGNSModeGivesTheKind() throws {
        let text = S.sentence("GNGNS,120000.00,5155.55442,N,00434.65873,E,RNE,14,0.8,10.0,46.0,,,V") + "\r\n"
        let fix = try #require(S.fixes(text).first)
        #expect(fix.status == .rtkFixed && fix.altitudeMSL == 10.0)
    }
}
