import Testing
@testable import GNSS

@Suite("NMEA framer")
struct NMEAFramerTests {
    let rmc = "$GPRMC,083723.00,A,5155.55442,N,00434.65873,E,0.211,,210810,,,A*7F"
    let gga = "$GPGGA,083723.00,5155.55442,N,00434.65873,E,1,06,2.51,-4.0,M,46.0,M,,*70"

    @Test func acceptsCRLFAndLF() {
        let (sentences, counters) = NMEATestData.frame(Array((rmc + "\r\n" + gga + "\n").utf8))
        #expect(sentences == [String(rmc.dropFirst().dropLast(3)), String(gga.dropFirst().dropLast(3))])
        #expect(counters.sentences == 2)
        #expect(counters.garbageBytes == 0)
    }

    @Test func splitsSentencesJoinedWithoutLineBreak() {
        let (sentences, _) = NMEATestData.frame(Array((rmc + gga + "\r\n").utf8))
        #expect(sentences.count == 2)
    }

    @Test func dropsAndCountsBadChecksums() {
        let broken = rmc.replacingOccurrences(of: "*7F", with: "*7E")
        let (sentences, counters) = NMEATestData.frame(Array((broken + "\r\n" + gga + "\r\n").utf8))
        #expect(sentences.count == 1)
        #expect(counters.badChecksums == 1)
    }

    @Test func acceptsLowercaseChecksum() {
        let lower = NMEATestData.sentence("GPGLL,5155.55442,N,00434.65873,E,083723.00,A,A")
        let hexLower = String(lower.dropLast(2)) + lower.suffix(2).lowercased()
        #expect(NMEATestData.frame(Array((hexLower + "\n").utf8)).sentences.count == 1)
    }

    @Test func survivesNULsTruncationAndGarbage() {
        var bytes: [UInt8] = [0, 0, 0xFF, 0x81]
        bytes += Array(rmc.prefix(30).utf8)  // truncated
        bytes += [0, 0]
        bytes += Array((gga + "\r\n").utf8)
        bytes += Array("$GPGSA,A,3,27,15".utf8) + [0x0A]  // truncated, no checksum
        bytes += Array((rmc + "\r\n").utf8)
        let (sentences, counters) = NMEATestData.frame(bytes)
        #expect(sentences.count == 2)
        #expect(counters.malformed == 2)
        #expect(counters.garbageBytes >= 4)
    }

    @Test func sentenceSplitAcrossChunks() {
        let bytes = Array((rmc + "\r\n" + gga + "\r\n").utf8)
        for cut in 1..<bytes.count {
            var framer = NMEAFramer()
            var count = 0
            framer.feed(Array(bytes[..<cut])) { _ in count += 1 }
            framer.feed(Array(bytes[cut...])) { _ in count += 1 }
            #expect(count == 2, "cut at \(cut)")
        }
    }

    @Test func byteAtATime() {
        let bytes = Array((rmc + gga + "\n" + rmc + "\r\n").utf8)
        var framer = NMEAFramer()
        var count = 0
        for byte in bytes { framer.feed([byte]) { _ in count += 1 } }
        #expect(count == 3)
    }

    @Test func finalSentenceWithoutNewlineIsKeptAtEnd() {
        let (sentences, _) = NMEATestData.frame(Array(rmc.utf8))
        #expect(sentences.count == 1)
    }

    @Test func dropsOverlongLines() {
        let long = NMEATestData.sentence("GPTXT," + String(repeating: "X", count: 200))
        let (sentences, counters) = NMEATestData.frame(Array((long + "\r\n" + rmc + "\r\n").utf8))
        #expect(sentences.count == 1)
        #expect(counters.overlong == 1)
    }

    @Test func tortureLogCountsItsDamage() throws {
        let (_, counters) = NMEATestData.frame(try NMEATestData.log("gp-320fw-2019-04-07-coldboot.log"))
        print("framer gp-320fw: \(counters)")
        #expect(counters.sentences >= 90)
        #expect(counters.badChecksums + counters.malformed >= 5)
    }
}
