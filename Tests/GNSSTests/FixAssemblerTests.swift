import Foundation
import Testing
@testable import GNSS

@Suite("Fix assembler")
struct FixAssemblerTests {
    typealias S = NMEATestData

    func cycle(_ time: String, date: String? = "210810", status: String = "A", quality: Int = 1,
               gsaMode: Int = 3, lat: String = "5155.55442", alt: String = "-4.0") -> String {
        var lines: [String] = []
        if let date {
            lines.append(S.sentence("GPRMC,\(time),\(status),\(lat),N,00434.65873,E,10.0,90.0,\(date),,,\(status == "A" ? "A" : "N")"))
        }
        lines.append(S.sentence("GPGGA,\(time),\(lat),N,00434.65873,E,\(quality),06,2.51,\(alt),M,46.0,M,,"))
        lines.append(S.sentence("GPGSA,A,\(gsaMode),27,15,09,28,18,08,,,,,,,3.33,2.51,2.20"))
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    @Test func mergesOneCycle() throws {
        let text = cycle("083723.00") + S.sentence("GPGST,083723.00,1.0,3.0,4.0,0.0,3.0,4.0,5.0") + "\r\n"
        let fixes = S.fixes(text)
        let fix = try #require(fixes.first)
        #expect(fixes.count == 1)
        #expect(fix.mode == .threeD)
        #expect(TPVEncoder.iso8601(try #require(fix.time)) == "2010-08-21T08:37:23.000Z")
        #expect(abs(try #require(fix.latitude) - 51.925907) < 1e-9)
        #expect(fix.altitudeMSL == -4.0)
        #expect(abs(try #require(fix.speed) - 5.144444) < 1e-5)
        #expect(fix.track == 90.0)
        #expect(fix.hdop == 2.51 && fix.pdop == 3.33 && fix.vdop == 2.20)
        #expect(fix.horizontalError == 5.0)
        #expect(fix.verticalError == 5.0)
        #expect(fix.satellitesUsed == 6 && fix.quality == 1)
    }

    @Test func noDateBeforeFirstRMC() throws {
        let text = cycle("235958.00", date: nil) + cycle("235959.00")
        let fixes = S.fixes(text)
        #expect(fixes.count == 2)
        #expect(fixes[0].time == nil && fixes[0].systemClockOffset == nil)
        #expect(fixes[0].hasPosition)
        #expect(fixes[1].time != nil)
    }

    @Test func carriesDateAcrossMidnight() throws {
        let text = cycle("235959.00", date: "311224") + cycle("000000.00", date: nil) + cycle("000001.00", date: nil)
        let times = S.fixes(text).map { $0.time.map(TPVEncoder.iso8601) }
        #expect(times == ["2024-12-31T23:59:59.000Z", "2025-01-01T00:00:00.000Z", "2025-01-01T00:00:01.000Z"])
    }

    @Test func twoDigitYearsFollowGpsd() throws {
        #expect(S.fixes(cycle("120000.00", date: "010168")).first?.time.map(TPVEncoder.iso8601) == "2068-01-01T12:00:00.000Z")
        #expect(S.fixes(cycle("120000.00", date: "010169")).first?.time.map(TPVEncoder.iso8601) == "1969-01-01T12:00:00.000Z")
    }

    @Test func zdaYearWins() throws {
        let text = cycle("120000.00", date: "010199") + S.sentence("GPZDA,120000.00,01,01,2099,,") + "\r\n"
        #expect(S.fixes(text).first?.time.map(TPVEncoder.iso8601) == "2099-01-01T12:00:00.000Z")
    }

    @Test func weekRolloverCorrection() throws {
        // 1999-08-22 is the GPS week-0 date after the 1999 rollover: +1024 weeks = 2019-04-07,
        // +2048 weeks = 2038-11-21. With a 2024 pivot it moves twice.
        let text = cycle("000430.00", date: "220899")
        let plain = S.fixes(text).first?.time.map(TPVEncoder.iso8601)
        #expect(plain == "1999-08-22T00:04:30.000Z")
        let pivot = FixAssembler.Options(weekRolloverPivot: Date(timeIntervalSince1970: 1_500_000_000))
        #expect(S.fixes(text, options: pivot).first?.time.map(TPVEncoder.iso8601) == "2019-04-07T00:04:30.000Z")
        #expect(S.fixes(text, options: .live).first?.time.map(TPVEncoder.iso8601) == "2038-11-21T00:04:30.000Z")
    }

    @Test func voidCycleDateDoesNotReplaceTrustedDate() throws {
        // gp-320fw: after a good fix on 2019-04-07 the receiver reboots and sends Void RMCs
        // dated 2006-12-16; a later GGA-only cycle must still be dated from the good fix.
        let text = cycle("120000.00", date: "070419")
            + S.sentence("GPRMC,120001.00,V,,,,,,,161206,,,N") + "\r\n"
            + cycle("120002.00", date: nil)
        let fixes = S.fixes(text)
        #expect(fixes.map(\.mode) == [.threeD, .noFix, .threeD])
        #expect(fixes[1].time.map(TPVEncoder.iso8601) == "2006-12-16T12:00:01.000Z")
        #expect(fixes[2].time.map(TPVEncoder.iso8601) == "2019-04-07T12:00:02.000Z")
    }

    @Test func navStatusVDoesNotInvalidate() throws {
        // u-blox M9 sends nav status V on good fixes.
        let text = S.sentence("GNRMC,120000.00,A,5155.55442,N,00434.65873,E,0.0,,010125,,,D,V") + "\r\n"
        let fix = try #require(S.fixes(text).first)
        #expect(fix.mode == .twoD && fix.hasPosition)
    }

    @Test func faaModeNotValidInvalidates() throws {
        let text = S.sentence("GPRMC,120000.00,A,5155.55442,N,00434.65873,E,0.0,,010125,,,N") + "\r\n"
        #expect(S.fixes(text).first?.mode == .noFix)
    }

    @Test func voidCycleIsNoFix() throws {
        let fix = try #require(S.fixes(cycle("120000.00", status: "V", quality: 0, gsaMode: 1)).first)
        #expect(fix.mode == .noFix && fix.latitude == nil && fix.altitudeMSL == nil)
    }

    /// The rule chosen (docs/gnss.md): a GGA altitude makes the fix 3D with that altitude even
    /// when GSA says 2D, as gpsd reports it; without an altitude GSA's 2D stands.
    @Test func gsa2DWithGGAAltitudeIs3DWithTheAltitude() throws {
        let fix = try #require(S.fixes(cycle("120000.00", gsaMode: 2)).first)
        #expect(fix.mode == .threeD && fix.altitudeMSL == -4.0 && fix.geoidSeparation == 46.0)
        let noAltitude = try #require(S.fixes(cycle("120000.00", gsaMode: 2, alt: "")).first)
        #expect(noAltitude.mode == .twoD && noAltitude.altitudeMSL == nil)
        #expect(TPVEncoder.encode(fix).contains(#""mode":3"#) && TPVEncoder.encode(fix).contains(#""altMSL":-4.0000"#))
    }

    @Test func coldStartSentencesWithoutTimeAreCountedNotEmitted() throws {
        let text = String(repeating: "$GPRMC,,V,,,,,,,,,,N*53\r\n$GPGGA,,,,,,0,,,,M,,M,,*66\r\n$GPGSA,A,1,,,,,,,,,,,,,,,*1E\r\n", count: 5)
        let (fixes, decoder) = NMEADecoder.decode(Array(text.utf8))
        #expect(fixes.isEmpty)
        #expect(decoder.assembler.statistics.sentencesWithoutTime == 10)
    }

    @Test func systemClockOffsetUsesArrival() throws {
        var assembler = FixAssembler()
        let arrival = Date(timeIntervalSince1970: 1_735_732_800 - 30)  // 30 s behind
        var fixes: [GNSSFix] = []
        for line in cycle("120000.00", date: "010125").split(separator: "\r\n") {
            fixes += assembler.ingest(NMEAParser.parse(text: String(line)), arrival: arrival)
        }
        if let fix = assembler.flush() { fixes.append(fix) }
        let fix = try #require(fixes.first)
        #expect(abs(try #require(fix.systemClockOffset) - 30) < 1e-6)
        #expect(fix.arrival == arrival)
    }

    @Test func learnsCycleEnderAndEmitsWithoutWaiting() throws {
        // After two identical cycles the assembler knows GSA ends a cycle and emits the
        // third cycle as soon as its GSA arrives, before the next cycle starts.
        var assembler = FixAssembler()
        var emittedAfter: [Int] = []
        let text = cycle("120000.00") + cycle("120001.00") + cycle("120002.00") + cycle("120003.00")
        for (index, line) in text.split(separator: "\r\n").enumerated() {
            assembler.ingest(NMEAParser.parse(text: String(line)), arrival: Date()) { _ in emittedAfter.append(index) }
        }
        // Lines 0-2 cycle 1, 3-5 cycle 2, ... Cycle 1 closes at line 3, cycle 2 at 6; from
        // cycle 3 on the GSA (line 8, 11) closes it.
        #expect(emittedAfter == [3, 6, 8, 11])
    }
}
