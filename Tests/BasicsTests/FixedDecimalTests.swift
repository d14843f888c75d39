import Foundation
import Basics
import Testing

@Suite("Fixed decimals without Foundation")
struct FixedDecimalTests {
    @Test("the same text as String(format:) for coordinates, halves, extremes and non-finite values")
    func matchesStringFormat() {
        var values: [Double] = [0, -0.0, 1, -1, 0.5, 1.5, 2.5, -2.5, 0.000005, 0.000015, 47.123456789, -122.999995, 180, -90,
                                1e-300, 1e300, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, .infinity, -.infinity, .nan]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<300 { values.append(Double.random(in: -180...180, using: &generator)) }
        for value in values {
            for places in [0, 1, 3, 5, 7] {
                #expect(FixedDecimal.string(value, places: places) == String(format: "%.\(places)f", value), "\(value) \(places)")
            }
        }
    }
}
