import Foundation
import GNSS
import TestSupport
import Testing

/// The fixture's looped capture decodes like one long real capture: every repeat's fixes,
/// in order, evenly spaced across the joins.
struct LoopedCaptureTests {
    func fixes(_ path: String) throws -> [GNSSFix] {
        var decoder = NMEADecoder()
        var fixes: [GNSSFix] = []
        decoder.feed(Array(try Data(contentsOf: URL(fileURLWithPath: path))), arrival: Date()) { fixes.append($0) }
        decoder.finish(arrival: Date()) { fixes.append($0) }
        return fixes
    }

    @Test func tenRepeatsDecodeAsTenTimesTheFixesWithTimesStrictlyRising() throws {
        let looped = FileManager.default.temporaryDirectory.appendingPathComponent("mwgd-loop-\(UUID().uuidString.prefix(8)).nmea").path
        defer { unlink(looped) }
        try LoopedNMEACapture.write(from: DaemonFixture.nmeaCapture, to: looped, repeats: 10)
        let original = try fixes(DaemonFixture.nmeaCapture).compactMap(\.time)
        let repeated = try fixes(looped).compactMap(\.time)
        #expect(original.count > 100)
        #expect(repeated.count == 10 * original.count)
        let steps = zip(repeated, repeated.dropFirst()).map { $1.timeIntervalSince($0) }
        let step = try #require(steps.min())
        #expect(step > 0)
        #expect(steps.allSatisfy { abs($0 - step) < 0.01 }, "uneven spacing: \(Set(steps.map { ($0 * 1000).rounded() }))")
    }
}
