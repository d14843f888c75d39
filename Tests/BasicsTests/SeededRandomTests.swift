import Testing
import Basics

@Suite("Seeded random generator")
struct SeededRandomTests {
    @Test("SplitMix64's published sequence for seed 1234567")
    func knownSequence() {
        var random = SeededRandom(seed: 1_234_567)
        let values = (0..<3).map { _ in random.next() }
        #expect(values == [6_457_827_717_110_365_317, 3_203_168_211_198_807_973, 9_817_491_932_198_370_423], "\(random)")
    }

    @Test("skipping n values starts where n calls of next() leave off")
    func skipping() {
        var stepped = SeededRandom(seed: 42)
        for _ in 0..<5 { _ = stepped.next() }
        var skipped = SeededRandom(seed: 42, skipping: 5)
        #expect((0..<4).map { _ in stepped.next() } == (0..<4).map { _ in skipped.next() })
    }

    @Test("unit values lie in [0, 1) and the description names the seed for replay")
    func unitAndDescription() {
        var random = SeededRandom(seed: 0xBEEF)
        for _ in 0..<1000 {
            let value = random.unit()
            #expect(value >= 0 && value < 1)
        }
        #expect(random.description == "seed 0xbeef")
    }
}
