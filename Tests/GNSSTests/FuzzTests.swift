import Foundation
import Testing
@testable import GNSS

/// SplitMix64: small, seeded, reproducible.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Property: whatever bytes arrive, the decoder neither crashes nor hangs, and every fix
/// it emits is physically sane. Inputs are generated from a fixed seed, so a failure is
/// reproducible; the seed and counts are printed.
@Suite("Fuzzing")
struct FuzzTests {
    static let seed: UInt64 = 0x6D77_6761_7465  // "mwgate"

    static func corpus() throws -> [[UInt8]] {
        var lines: [[UInt8]] = []
        for name in ["ublox-lea-5h.log", "bu353-glonass.log", "beidou-bd.log",
                     "gp-320fw-2019-04-07-coldboot.log", "quectel-l76k-nmea.log"] {
            for line in try TestSupport.log(name).split(separator: 0x0A) where line.first == UInt8(ascii: "$") {
                lines.append(Array(line.filter { $0 != 0x0D }))
            }
        }
        return lines
    }

    /// Checks the invariants of one decoded input.
    static func check(_ fixes: [GNSSFix]) {
        for fix in fixes {
            if let lat = fix.latitude { #expect(abs(lat) <= 90) }
            if let lon = fix.longitude { #expect(abs(lon) <= 180) }
            if fix.hasPosition { #expect(fix.mode >= .twoD) }
            #expect(fix.timeOfDay.microseconds >= 0 && fix.timeOfDay.microseconds < 86_401_000_000)
        }
    }

    @Test func randomBytes() {
        var rng = SeededGenerator(seed: Self.seed)
        let alphabet = Array("$*,.0123456789ABCDEFGNPRMCSVTLZ\r\n-".utf8)
        var inputs = 0
        var bytesFed = 0
        var sentences = 0
        for _ in 0..<20_000 {
            let length = Int.random(in: 0...400, using: &rng)
            var bytes = [UInt8]()
            bytes.reserveCapacity(length)
            let nmeaLike = Bool.random(using: &rng)
            for _ in 0..<length {
                bytes.append(nmeaLike ? alphabet.randomElement(using: &rng)! : UInt8.random(in: 0...255, using: &rng))
            }
            let (fixes, decoder) = NMEADecoder.decode(bytes)
            Self.check(fixes)
            inputs += 1
            bytesFed += length
            sentences += decoder.framer.counters.sentences
        }
        print("fuzz random bytes: seed \(Self.seed), \(inputs) inputs, \(bytesFed) bytes, \(sentences) sentences passed the checksum")
        #expect(inputs == 20_000)
    }

    @Test func mutatedSentences() throws {
        let corpus = try Self.corpus()
        var rng = SeededGenerator(seed: Self.seed ^ 0xFF)
        let interesting = Array(",*.$-09AVNSEW\0\u{7F}".utf8)
        var inputs = 0
        var accepted = 0
        var fixesSeen = 0
        for _ in 0..<30_000 {
            var stream: [UInt8] = []
            for _ in 0..<Int.random(in: 1...12, using: &rng) {
                var line = corpus.randomElement(using: &rng)!
                // Mutate the body, then re-seal the checksum half the time so the parser,
                // not only the framer, sees the damage.
                guard let star = line.lastIndex(of: UInt8(ascii: "*")), star > 1 else { continue }
                var body = Array(line[1..<star])
                for _ in 0..<Int.random(in: 1...4, using: &rng) where !body.isEmpty {
                    let at = Int.random(in: 0..<body.count, using: &rng)
                    switch Int.random(in: 0..<6, using: &rng) {
                    case 0: body[at] = interesting.randomElement(using: &rng)!
                    case 1: body.remove(at: at)
                    case 2: body.insert(interesting.randomElement(using: &rng)!, at: at)
                    case 3: body = Array(body[..<at])
                    case 4: body.insert(contentsOf: Array(repeating: UInt8(ascii: "9"), count: Int.random(in: 1...30, using: &rng)), at: at)
                    default: body.insert(contentsOf: [UInt8(ascii: ","), UInt8(ascii: ",")], at: at)
                    }
                }
                if Bool.random(using: &rng) {
                    var checksum: UInt8 = 0
                    for byte in body { checksum ^= byte }
                    let hex = Array(String(format: "%02X", checksum).utf8)
                    line = [UInt8(ascii: "$")] + body + [UInt8(ascii: "*")] + hex
                } else {
                    line = [UInt8(ascii: "$")] + body + Array(line[star...])
                }
                stream += line
                if Int.random(in: 0..<4, using: &rng) > 0 { stream += [0x0D, 0x0A] }
            }
            let (fixes, decoder) = NMEADecoder.decode(stream)
            Self.check(fixes)
            inputs += 1
            accepted += decoder.framer.counters.sentences
            fixesSeen += fixes.count
        }
        print("fuzz mutated sentences: seed \(Self.seed ^ 0xFF), \(inputs) streams, \(accepted) mutated sentences reached the parser, \(fixesSeen) fixes")
        #expect(accepted > 10_000)
    }

    @Test func chunkingNeverChangesTheResult() throws {
        // Property: however a stream is cut into reads, the fixes are the same.
        let bytes = try TestSupport.log("gp-320fw-2019-04-07-coldboot.log")
        let whole = NMEADecoder.decode(bytes, arrival: Date(timeIntervalSince1970: 0)).fixes
        var rng = SeededGenerator(seed: Self.seed)
        for _ in 0..<200 {
            var decoder = NMEADecoder()
            var fixes: [GNSSFix] = []
            var offset = 0
            while offset < bytes.count {
                let length = min(Int.random(in: 1...300, using: &rng), bytes.count - offset)
                decoder.feed(Array(bytes[offset..<offset + length]), arrival: Date(timeIntervalSince1970: 0)) { fixes.append($0) }
                offset += length
            }
            decoder.finish(arrival: Date(timeIntervalSince1970: 0)) { fixes.append($0) }
            #expect(fixes == whole)
        }
    }
}
