import Testing
@testable import GNSS

@Suite("NMEA parser")
struct NMEAParserTests {
    @Test func rmcWithNMEA41NavStatus() throws {
        guard case .rmc(let rmc) = NMEAParser.parse(
            text: "$GNRMC,055234.000,A,4739.71890,N,12219.58362,W,0.00,286.35,050826,,,A,V*13")
        else { Issue.record("not RMC"); return }
        #expect(rmc.talker == .combined)
        #expect(rmc.isValid)
        #expect(abs(try #require(rmc.latitude) - 47.661981667) < 1e-9)
        #expect(abs(try #require(rmc.longitude) + 122.326393667) < 1e-9)
        #expect(rmc.courseTrue == 286.35)
        #expect(rmc.date == NMEADate(year: 26, month: 8, day: 5))
        #expect(rmc.mode == .autonomous)
        #expect(rmc.navigationalStatus == UInt8(ascii: "V"))
        #expect(rmc.time == NMEATimeOfDay(microseconds: (5 * 3600 + 52 * 60 + 34) * 1_000_000))
    }

    /// Found by the fuzz suite (make fuzz, seed 0x8ff0921f9fec5ea0): a '-' slipped into the
    /// HDOP field gave a fix with HDOP -0.9, which became a negative location accuracy
    /// (HDOP × 5 m) in recorded documents. Quantities that cannot be negative read as absent.
    @Test func negativeDOPsSpeedsAndSigmasReadAsAbsent() {
        guard case .gga(let gga) = NMEAParser.parse(text: "GPGGA,092750.000,5321.6802,N,00630.3372,W,1,8,-0.9,280.2,M,-34.0,M,,")
        else { Issue.record("not GGA"); return }
        #expect(gga.hdop == nil)
        #expect(gga.geoidSeparation.map { abs($0 + 34.0) < 1e-3 } ?? false)  // signed quantities keep their sign
        guard case .gsa(let gsa) = NMEAParser.parse(text: "GPGSA,A,3,10,07,05,02,29,04,08,13,,,,,-1.72,-1.03,-1.38")
        else { Issue.record("not GSA"); return }
        #expect(gsa.pdop == nil && gsa.hdop == nil && gsa.vdop == nil)
        guard case .rmc(let rmc) = NMEAParser.parse(text: "GPRMC,225446,A,4916.45,N,12311.12,W,-000.5,054.7,191194,020.3,E")
        else { Issue.record("not RMC"); return }
        #expect(rmc.speedKnots == nil)
        guard case .gst(let gst) = NMEAParser.parse(text: "GPGST,172814.0,-0.006,0.023,-0.020,273.6,-0.023,0.020,-0.031")
        else { Issue.record("not GST"); return }
        #expect(gst.rangeRMS == nil && gst.semiMinor == nil && gst.latitudeSigma == nil && gst.altitudeSigma == nil)
        #expect(gst.semiMajor.map { abs($0 - 0.023) < 1e-4 } ?? false)
        #expect(gst.longitudeSigma.map { abs($0 - 0.020) < 1e-4 } ?? false)
        // End to end: the fix from a negative-HDOP GGA has no HDOP (and so no accuracy from it).
        let fixes = NMEATestData.fixes(NMEATestData.sentence("GPRMC,092750.000,A,5321.6802,N,00630.3372,W,0.02,31.66,280511,,,A") + "\r\n"
            + NMEATestData.sentence("GPGGA,092750.000,5321.6802,N,00630.3372,W,1,8,-0.9,280.2,M,-34.0,M,,") + "\r\n")
        #expect(!fixes.isEmpty && fixes.allSatisfy { $0.hdop == nil })
    }

    @Test func rmcPre23WithoutMode() {
        guard case .rmc(let rmc) = NMEAParser.parse(text: "GPRMC,225446,A,4916.45,N,12311.12,W,000.5,054.7,191194,020.3,E")
        else { Issue.record("not RMC"); return }
        #expect(rmc.mode == nil)
        #expect(rmc.magneticVariation == 20.3)
    }

    @Test func emptyColdStartSentences() {
        guard case .rmc(let rmc) = NMEAParser.parse(text: "$GPRMC,,V,,,,,,,,,,N*53") else {
            Issue.record("not RMC"); return
        }
        #expect(rmc.time == nil && rmc.latitude == nil && !rmc.isValid && rmc.mode == .notValid)
        guard case .gga(let gga) = NMEAParser.parse(text: "$GPGGA,,,,,,0,,,,M,,M,,*66") else {
            Issue.record("not GGA"); return
        }
        #expect(gga.quality == 0 && gga.altitudeMSL == nil)
    }

    @Test func ggaNegativeAltitude() {
        guard case .gga(let gga) = NMEAParser.parse(
            text: "$GPGGA,083723.00,5155.55442,N,00434.65873,E,1,06,2.51,-4.0,M,46.0,M,,*70")
        else { Issue.record("not GGA"); return }
        #expect(gga.altitudeMSL == -4.0)
        #expect(gga.geoidSeparation == 46.0)
        #expect(gga.satellitesUsed == 6)
        #expect(gga.hdop == 2.51)
    }

    @Test func gsaWithSystemID() {
        guard case .gsa(let gsa) = NMEAParser.parse(text: "$GNGSA,A,3,13,27,37,,,,,,,,,,1.5,0.9,1.2,4*39")
        else { Issue.record("not GSA"); return }
        #expect(gsa.fixMode == 3 && gsa.satellitesUsed == 3 && gsa.system == .beidou)
        #expect(gsa.pdop == 1.5 && gsa.hdop == 0.9 && gsa.vdop == 1.2)
    }

    @Test func vtgBothForms() {
        guard case .vtg(let new) = NMEAParser.parse(text: "$GPVTG,000.0,T,357.0,M,000.1,N,0000.1,K,A") else {
            Issue.record("not VTG"); return
        }
        #expect(new.courseTrue == 0 && new.courseMagnetic == 357 && new.speedKnots == 0.1 && new.mode == .autonomous)
        guard case .vtg(let old) = NMEAParser.parse(text: "GPVTG,054.7,034.4,005.5,010.2") else {
            Issue.record("not VTG"); return
        }
        #expect(old.courseTrue == 54.7 && old.courseMagnetic == 34.4 && old.speedKnots == 5.5 && old.speedKmh == 10.2)
    }

    @Test func gnsModeString() {
        guard case .gns(let gns) = NMEAParser.parse(
            text: "$GNGNS,074155.799,3114.8770,N,12135.2463,E,ANNA,05,1.3,156.9,8.3,,0000*52")
        else { Issue.record("not GNS"); return }
        #expect(gns.anySystemValid && gns.systemCount == 4 && gns.altitudeMSL == 156.9)
        guard case .gns(let none) = NMEAParser.parse(text: "$GNGNS,074150.799,,,,,NNNN,00,,,0.0,,0000") else {
            Issue.record("not GNS"); return
        }
        #expect(!none.anySystemValid)
    }

    @Test func zdaGllGstTxt() {
        guard case .zda(let zda) = NMEAParser.parse(text: "$GPZDA,000427.00,22,08,1999,,") else {
            Issue.record("not ZDA"); return
        }
        #expect(zda.date == NMEADate(year: 1999, month: 8, day: 22) && zda.zoneHours == nil)
        guard case .gll(let gll) = NMEAParser.parse(text: "$GPGLL,5155.55442,N,00434.65873,E,083723.00,A,A") else {
            Issue.record("not GLL"); return
        }
        #expect(gll.isValid && gll.mode == .autonomous && gll.time != nil)
        guard case .gst(let gst) = NMEAParser.parse(text: "$GPGST,172814.0,0.006,0.023,0.020,273.6,0.023,0.020,0.031") else {
            Issue.record("not GST"); return
        }
        #expect(gst.latitudeSigma == 0.023 && gst.longitudeSigma == 0.020 && gst.altitudeSigma == 0.031)
        guard case .txt(let txt) = NMEAParser.parse(text: "$GPTXT,01,01,02,ANTSTATUS=OK") else {
            Issue.record("not TXT"); return
        }
        #expect(txt.text == "ANTSTATUS=OK")
    }

    @Test func talkers() {
        let cases: [(String, NMEATalker)] = [
            ("GP", .gps), ("GN", .combined), ("GL", .glonass), ("GA", .galileo), ("GB", .beidou),
            ("BD", .beidou), ("GQ", .qzss),
        ]
        for (talker, expected) in cases {
            guard case .gga(let gga) = NMEAParser.parse(text: "\(talker)GGA,120000.00,,,,,0,,,,M,,M,,") else {
                Issue.record("\(talker) not parsed"); continue
            }
            #expect(gga.talker == expected)
        }
    }

    @Test func proprietaryAndUnknownAreSkipped() {
        if case .proprietary = NMEAParser.parse(text: "$PSRFEPE,074150.799,V,,,,,") {} else { Issue.record("not proprietary") }
        if case .unsupported = NMEAParser.parse(text: "$GPGBS,1,2,3") {} else { Issue.record("not unsupported") }
    }

    @Test func rejectsOutOfRangeValues() {
        guard case .rmc(let rmc) = NMEAParser.parse(text: "$GPRMC,256199.00,A,5175.0,N,18134.0,E,x,,999999,,,A")
        else { Issue.record("not RMC"); return }
        #expect(rmc.time == nil && rmc.latitude == nil && rmc.longitude == nil && rmc.speedKnots == nil)
    }
}

@Suite("Sentence values")
struct SentenceValueTests {
    /// Sentences are returned and copied by value on the hot path; their size was most of
    /// the parser's cost before the compact field storage (145 bytes -> 82).
    @Test func stayCompact() {
        #expect(MemoryLayout<NMEASentence>.size <= 96)
    }

    @Test func compactFieldsRoundTrip() {
        var gga = NMEASentence.GGA(
            talker: .gps, time: NMEATimeOfDay(microseconds: 0), latitude: -0.0, longitude: nil,
            quality: 0, satellitesUsed: nil, hdop: 1e-9, altitudeMSL: -431.5, geoidSeparation: nil,
            dgpsAge: nil)
        #expect(gga.time == NMEATimeOfDay(microseconds: 0))
        #expect(gga.latitude == 0 && gga.longitude == nil && gga.quality == 0 && gga.satellitesUsed == nil)
        #expect(gga.hdop == 1e-9 && gga.altitudeMSL == -431.5)
        gga.satellitesUsed = Int.max
        #expect(gga.satellitesUsed == Int(Int32.max))
        gga.time = nil
        #expect(gga.time == nil)
        var rmc = NMEASentence.RMC(talker: .gps, time: nil, isValid: true, date: NMEADate(year: 99, month: 12, day: 31))
        #expect(rmc.date == NMEADate(year: 99, month: 12, day: 31))
        rmc.date = nil
        #expect(rmc.date == nil)
    }
}
