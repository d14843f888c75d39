import Basics
import Testing

@Suite struct DurationTextTests {
    @Test func lengthsAsWrittenInTheConfigurationAndOnTheCommandLine() {
        #expect(DurationText.parse("90 s") == 90)
        #expect(DurationText.parse("30 min") == 1800)
        #expect(DurationText.parse("2 h") == 7200)
        #expect(DurationText.parse("1 h 30 min") == 5400)
        #expect(DurationText.parse("45m") == 2700)
        #expect(DurationText.parse("1.5h") == 5400)
        #expect(DurationText.parse(" 10 S ") == 10)
    }

    @Test func anythingElseIsNotALength() {
        for text in ["", "90", "ten min", "5 days", "0 s", "-5 s", "1 h x", "h"] {
            #expect(DurationText.parse(text) == nil, "\(text)")
        }
    }

    @Test func writtenInWholeUnitsRoundedDownAndReadBackAsNoMore() throws {
        #expect(DurationText.string(7.9) == "7 s")
        #expect(DurationText.string(245) == "4 min 5 s")
        #expect(DurationText.string(41_759) == "11 h 35 min")
        for seconds in [7.9, 245, 3599, 41_759] {
            #expect(try #require(DurationText.parse(DurationText.string(seconds))) <= seconds, "\(seconds)")
        }
    }
}
