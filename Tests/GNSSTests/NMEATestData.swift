import Foundation
@testable import GNSS

/// Paths and helpers shared by the GNSS tests.
enum NMEATestData {
    /// The repository root, computed from this file's path.
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `../shared/testdata/nmea` beside the repository.
    static let nmeaDirectory = repositoryRoot.deletingLastPathComponent()
        .appendingPathComponent("shared/testdata/nmea")

    static func log(_ name: String) throws -> [UInt8] {
        Array(try Data(contentsOf: nmeaDirectory.appendingPathComponent(name)))
    }

    /// Feeds text through framer, parser and assembler.
    static func fixes(_ text: String, options: FixAssembler.Options = .init()) -> [GNSSFix] {
        NMEADecoder.decode(Array(text.utf8), options: options,
                           arrival: Date(timeIntervalSince1970: 0)).fixes
    }

    /// Wraps a sentence body with `$` and its checksum.
    static func sentence(_ body: String) -> String {
        var checksum: UInt8 = 0
        for byte in body.utf8 { checksum ^= byte }
        let hex = String(checksum, radix: 16, uppercase: true)
        return "$" + body + "*" + (hex.count == 1 ? "0" + hex : hex)
    }

    /// Every sentence the framer accepts, as text.
    static func frame(_ bytes: [UInt8]) -> (sentences: [String], counters: NMEAFramer.Counters) {
        var framer = NMEAFramer()
        var out: [String] = []
        framer.feed(bytes) { out.append($0.text) }
        framer.finish { out.append($0.text) }
        return (out, framer.counters)
    }
}
