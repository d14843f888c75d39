import Foundation
import Testing
@testable import GNSS

/// NMEA 0183 from a receiver (serial, TCP, file replay): framer, parser and fix assembler.
@Suite("Fuzz: NMEA", .timeLimit(.minutes(20)))
struct NMEAFuzzTests {
    static let nmeaDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("shared/testdata/nmea")

    /// Every sentence of the real captures, without line breaks.
    static let corpus: [[UInt8]] = {
        var lines: [[UInt8]] = []
        for name in ["ublox-lea-5h.log", "bu353-glonass.log", "beidou-bd.log",
                     "gp-320fw-2019-04-07-coldboot.log", "quectel-l76k-nmea.log"] {
            guard let data = try? Data(contentsOf: nmeaDirectory.appendingPathComponent(name)) else { continue }
            for line in Array(data).split(separator: 0x0A) where line.first == UInt8(ascii: "$") {
                lines.append(Array(line.filter { $0 != 0x0D }))
            }
        }
        return lines
    }()

    /// Corpus sentences that are themselves clean (one `$`, one `*`, printable), so a defect
    /// injected into them is the only defect.
    static let cleanCorpus = corpus.filter { line in
        line.filter { $0 == UInt8(ascii: "$") }.count == 1 && line.filter { $0 == UInt8(ascii: "*") }.count == 1
            && line.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
    }

    static func seal(_ body: [UInt8]) -> [UInt8] {
        var checksum: UInt8 = 0
        for byte in body { checksum ^= byte }
        return [UInt8(ascii: "$")] + body + Array("*".utf8) + Array(String(format: "%02X", checksum).utf8)
    }

    /// A sentence nothing else in a case produces, to prove the framer resynchronised.
    static let marker = seal(Array("GPTXT,01,01,02,fuzz marker".utf8))

    /// Invariants of every fix, whatever the input.
    static func check(_ fixes: [GNSSFix], _ c: inout FuzzCase) {
        for fix in fixes {
            if let lat = fix.latitude { c.expect(lat.isFinite && abs(lat) <= 90, "latitude \(lat) out of range") }
            if let lon = fix.longitude { c.expect(lon.isFinite && abs(lon) <= 180, "longitude \(lon) out of range") }
            if fix.hasPosition { c.expect(fix.mode >= .twoD, "a position without a 2D/3D mode") }
            c.expect(fix.timeOfDay.microseconds >= 0 && fix.timeOfDay.microseconds < 86_401_000_000,
                     "time of day \(fix.timeOfDay.microseconds) µs out of range")
            if let hdop = fix.hdop { c.expect(hdop.isFinite && hdop >= 0, "HDOP \(hdop)") }
        }
    }

    static let nmeaAlphabet = Array("$*,.0123456789ABCDEFGNPRMCSVTLZ\r\n-".utf8)
    static let interesting = Array(",*.$-09AVNSEW\0\u{7F}".utf8)

    /// One corpus sentence, mutated; re-sealed half the time so the parser, not only the
    /// checksum, sees the damage.
    static func mutatedSentence(_ c: inout FuzzCase) -> [UInt8] {
        let line = c.pick(corpus)
        guard let star = line.lastIndex(of: UInt8(ascii: "*")), star > 1 else { return line }
        var body = Array(line[1..<star])
        for _ in 0..<c.int(1...4) where !body.isEmpty {
            let at = c.int(0...body.count - 1)
            switch c.int(0...6) {
            case 0: body[at] = c.pick(interesting)
            case 1: body.remove(at: at)
            case 2: body.insert(c.pick(interesting), at: at)
            case 3: body = Array(body[..<at])
            case 4: body.insert(contentsOf: Array(repeating: UInt8(ascii: "9"), count: c.int(1...30)), at: at)
            case 5: body.insert(contentsOf: Array(",,".utf8), at: at)
            default: body.insert(contentsOf: Array(c.pick(["-", "999999999999999999999", "1e308", "nan", "inf", ".", "-.", "+"]).utf8), at: at)
            }
        }
        return c.bool() ? seal(body) : [UInt8(ascii: "$")] + body + Array(line[star...])
    }

    @Test("random, NMEA-alphabet and mutated-capture streams never crash or yield insane fixes")
    func streams() async throws {
        try #require(!Self.corpus.isEmpty, "no NMEA captures in \(Self.nmeaDirectory.path)")
        let tally = await Fuzz.run("nmea", count: Fuzz.count(12_000)) { c in
            var stream: [UInt8] = []
            switch c.int(0...2) {
            case 0:
                c.kind = "random bytes"
                stream = c.bytes(c.int(0...400))
            case 1:
                c.kind = "NMEA alphabet"
                stream = (0..<c.int(0...400)).map { _ in c.pick(Self.nmeaAlphabet) }
            default:
                c.kind = "mutated capture sentences"
                for _ in 0..<c.int(1...12) {
                    stream += Self.mutatedSentence(&c)
                    if c.int(0...3) > 0 { stream += [0x0D, 0x0A] }
                }
            }
            // Whatever came before, a good sentence after a line break must still get through.
            stream += [0x0D, 0x0A] + Self.marker + [0x0D, 0x0A]
            var framer = NMEAFramer()
            var texts: [String] = []
            framer.feed(stream) { texts.append($0.text) }
            c.expect(texts.last == String(decoding: Self.marker.dropFirst().dropLast(3), as: UTF8.self),
                     "the sentence after the bad input was lost (framer counters \(framer.counters))")
            let (fixes, _) = NMEADecoder.decode(stream)
            Self.check(fixes, &c)
        }
        #expect(tally.failures == 0)
        #expect(Fuzz.replay != nil || tally.byKind.count == 3, "every generator kind ran")
    }

    /// Each defect is counted under its own name (the framer's rejection report) and the
    /// next good sentence is still delivered.
    @Test("each injected defect is counted under its name and the framer resynchronises")
    func namedDefects() async throws {
        try #require(!Self.cleanCorpus.isEmpty)
        let tally = await Fuzz.run("nmea defects", count: Fuzz.count(8_000)) { c in
            let line = c.pick(Self.cleanCorpus)
            guard let star = line.lastIndex(of: UInt8(ascii: "*")), star > 6 else { c.kind = "skipped"; return }
            let body = Array(line[1..<star])
            let good = Self.seal(body)
            var bad: [UInt8]
            var expected = NMEAFramer.Counters()
            switch c.int(0...4) {
            case 0:
                c.kind = "bad checksum"
                bad = good
                let wrong = String(format: "%02X", (Int(good.suffix(2).reduce(0) { $0 &* 16 &+ Int(hexDigit($1)) }) + c.int(1...255)) % 256)
                bad.replaceSubrange(bad.count - 2..<bad.count, with: Array(wrong.utf8))
                expected.badChecksums = 1
            case 1:
                c.kind = "no checksum trailer"
                bad = [UInt8(ascii: "$")] + Array(body.prefix(c.int(0...body.count)))
                expected.malformed = 1
            case 2:
                c.kind = "control or 8-bit byte inside"
                var inner = body
                let forbidden = c.bool() ? UInt8(c.int(0...0x1F)) : UInt8(c.int(0x7F...0xFF))
                inner.insert(forbidden, at: c.int(1...inner.count))
                bad = [UInt8(ascii: "$")] + inner + Array(good.suffix(3))
                expected.malformed = 1
                // What follows the forbidden byte up to the line break is stray text.
                let tail = bad[(bad.firstIndex(of: forbidden)! + 1)...]
                expected.garbageBytes = tail.filter { $0 != 0x0A && $0 != 0x0D }.count
                if tail.contains(UInt8(ascii: "$")) { c.kind = "skipped"; return }
            case 3:
                c.kind = "overlong"
                let padding = Array(repeating: UInt8(ascii: "0"), count: NMEAFramer.maximumSentenceLength + c.int(0...200))
                bad = Self.seal(body + Array(",".utf8) + padding)
                expected.overlong = 1
            default:
                c.kind = "garbage between sentences"
                let garbage = (0..<c.int(1...64)).map { _ in c.byte() }.filter { $0 != UInt8(ascii: "$") }
                bad = good + [0x0D, 0x0A] + garbage
                expected.sentences = 1
                expected.garbageBytes = garbage.filter { $0 != 0x0A && $0 != 0x0D }.count
            }
            expected.sentences += 1  // the marker
            var framer = NMEAFramer()
            var texts: [String] = []
            framer.feed(bad + [0x0D, 0x0A] + Self.marker + [0x0D, 0x0A]) { texts.append($0.text) }
            c.expect(framer.counters == expected, "counters \(framer.counters), expected \(expected)")
            c.expect(texts.last == String(decoding: Self.marker.dropFirst().dropLast(3), as: UTF8.self), "the marker after the defect was lost")
        }
        #expect(tally.failures == 0)
    }

    @Test("however a stream is cut into reads, the fixes are the same")
    func chunkingNeverChangesTheResult() async throws {
        let bytes = Array(try Data(contentsOf: Self.nmeaDirectory.appendingPathComponent("gp-320fw-2019-04-07-coldboot.log")))
        let whole = NMEADecoder.decode(bytes, arrival: Date(timeIntervalSince1970: 0)).fixes
        let tally = await Fuzz.run("nmea chunking", count: Fuzz.count(150)) { c in
            c.kind = "random read sizes"
            var decoder = NMEADecoder()
            var fixes: [GNSSFix] = []
            var offset = 0
            while offset < bytes.count {
                let length = min(c.int(1...300), bytes.count - offset)
                decoder.feed(Array(bytes[offset..<offset + length]), arrival: Date(timeIntervalSince1970: 0)) { fixes.append($0) }
                offset += length
            }
            decoder.finish(arrival: Date(timeIntervalSince1970: 0)) { fixes.append($0) }
            c.expect(fixes == whole, "\(fixes.count) fixes in chunks, \(whole.count) in one read")
        }
        #expect(tally.failures == 0)
    }
}

private func hexDigit(_ byte: UInt8) -> UInt8 {
    switch byte {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
    case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
    default: byte - UInt8(ascii: "a") + 10
    }
}
