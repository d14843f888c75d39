import Foundation
import Testing
import Basics

/// Every number an output prints reads back to exactly the value stored, in as few digits as
/// that takes, at the precision it was stored with.
@Suite("Shortest round-trip decimals")
struct ShortestDecimalTests {
    @Test(arguments: [
        (Float(17.1), "17.1"),
        (Float(1) / 16.4, "0.06097561"),
        (Float(-0.5), "-0.5"),
        (Float(2), "2.0"),
        (Float(0.00001), "1e-05"),
    ])
    func floatsPrintAsFloats(_ value: Float, _ expected: String) {
        #expect(ShortestDecimal.json(value) == expected)
    }

    @Test func doublesPrintAsDoubles() {
        #expect(ShortestDecimal.json(17.1) == "17.1")
        #expect(ShortestDecimal.json(Double(Float(17.1))) == "17.100000381469727")
        #expect(ShortestDecimal.json(33.67958833333333) == "33.67958833333333")
        #expect(ShortestDecimal.json(1e16) == "1e+16")
        #expect(ShortestDecimal.json(Double.nan) == nil)
        #expect(ShortestDecimal.json(Float.infinity) == nil)
    }

    @Test(arguments: [
        (0.00001, "0.00001"),
        (-0.000012345, "-0.000012345"),
        (1e16, "10000000000000000"),
        (1.5e17, "150000000000000000"),
        (17.0, "17"),
        (-0.0, "0"),
        (0.0, "0"),
        (123.456, "123.456"),
        (-33.67958833333333, "-33.67958833333333"),
    ])
    func plainDecimalsHaveNoExponent(_ value: Double, _ expected: String) {
        #expect(ShortestDecimal.plain(value) == expected)
    }

    /// Every 4,099th float32 bit pattern (all exponents, both signs, subnormals): the JSON and
    /// the positional text both parse back to the same bits.
    ///
    /// Mismatches are collected and expected once, so a regression reports a count and the
    /// first few values instead of a million lines.
    @Test func everyFloatExponentReadsBackBitForBit() {
        var checked = 0
        var mismatches: [String] = []
        for bits in stride(from: UInt32(0), to: UInt32.max - 4099, by: 4099) {
            let value = Float(bitPattern: bits)
            guard value.isFinite else { continue }
            checked += 1
            guard let json = ShortestDecimal.json(value), let plain = ShortestDecimal.plain(value) else {
                mismatches.append("\(value) has no text")
                continue
            }
            let jsonExact = Float(json)?.bitPattern == value.bitPattern || (value == 0 && Float(json) == 0)
            if !jsonExact || Float(plain) != value || plain.contains("e") {
                mismatches.append("\(value) as \(json) and \(plain)")
            }
        }
        #expect(checked > 1_000_000)
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(checked) differ, first: \(mismatches.prefix(5))")
    }

    /// Doubles across the exponent range, by bit pattern steps: shortest text reads back exactly.
    @Test func doublesAcrossTheRangeReadBack() {
        var bits: UInt64 = 1
        var checked = 0
        var mismatches: [String] = []
        for _ in 0..<200_000 {
            bits = bits &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            let value = Double(bitPattern: bits)
            guard value.isFinite else { continue }
            checked += 1
            guard let json = ShortestDecimal.json(value), let plain = ShortestDecimal.plain(value) else {
                mismatches.append("\(value) has no text")
                continue
            }
            if Double(json) != value || Double(plain) != value {
                mismatches.append("\(value) as \(json) and \(plain)")
            }
        }
        #expect(checked > 150_000)
        #expect(mismatches.isEmpty, "\(mismatches.count) of \(checked) differ, first: \(mismatches.prefix(5))")
    }

    @Test func writesIntoAStream() {
        var out = "["
        ShortestDecimal.write(Float(17.1), to: &out)
        out += ","
        ShortestDecimal.write(0.1, to: &out)
        #expect(out == "[17.1,0.1")
    }
}
