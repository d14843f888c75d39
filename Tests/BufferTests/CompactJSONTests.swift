import Foundation
import Testing
@testable import Buffer

@Suite("Compact JSON and timestamps (without Foundation's formatters)")
struct CompactJSONTests {
    static let names = ["pothole", "a/b", "quote\"d", "back\\slash", "tab\there", "new\nline", "bell\u{07}", "unicode é ✓ 😀",
                        "Capital", "_under", "9lives", "z", ""]

    @Test("hazard counts written by hand read back the same through JSONSerialization")
    func encodeMatchesFoundationReading() throws {
        var counts: [String: Int] = [:]
        for (index, name) in Self.names.enumerated() { counts[name] = index * 37 - 100 }
        let text = CompactJSON.encode(counts)
        let read = try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Int])
        #expect(read == counts)
        #expect(CompactJSON.decodeCounts(text) == counts)
        #expect(CompactJSON.encode([:]) == "{}")
        #expect(CompactJSON.encode(["b": 2, "a": 1]) == #"{"a":1,"b":2}"#)
    }

    @Test("JSON written by JSONSerialization and by SQLite reads the same as JSONSerialization reads it")
    func decodeMatchesFoundation() throws {
        var counts: [String: Int] = [:]
        for (index, name) in Self.names.enumerated() { counts[name] = index }
        let foundation = String(decoding: try JSONSerialization.data(withJSONObject: counts, options: [.sortedKeys]), as: UTF8.self)
        #expect(CompactJSON.decodeCounts(foundation) == counts)
        let boards = ["E8:C9:8F:52:7B:07", "weird \"board\"", "😀"]
        let list = String(decoding: try JSONSerialization.data(withJSONObject: boards), as: UTF8.self)
        #expect(CompactJSON.decodeStrings(list) == boards)
        #expect(CompactJSON.decodeStrings(#" [ "a" , "b\u00e9\ud83d\ude00" ] "#) == ["a", "bé😀"])
        #expect(CompactJSON.decodeStrings("[]") == [])
        #expect(CompactJSON.decodeCounts(" { } ") == [:])
    }

    @Test("anything but the expected shape is nil, never a crash", arguments: [
        "", "{", "}", "[", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{\"a\":1.5}", "{\"a\":1e3}", "{\"a\":\"x\"}", "{a:1}",
        "[1]", "[\"a\",]", "[\"a\"", "\"a\"", "{\"a\":1} x", "[\"\\ud800\"]", "[\"\\u12\"]", "[\"\\q\"]", "[\"a\u{01}\"]",
        "{\"a\":99999999999999999999999}",
    ])
    func rejectsOtherInput(_ text: String) {
        #expect(CompactJSON.decodeCounts(text) == nil)
        #expect(CompactJSON.decodeStrings(text) == nil)
    }

    @Test("ISO 8601 timestamps are the text Date.formatted(.iso8601) writes")
    func timestampsMatchFoundation() {
        let instants: [Double] = [0, 1, 59.999, 86_399.5, 951_782_400, 1_763_722_346.25, 1_763_722_346.999, 4_102_444_799,
                                  -1, -86_400.5, 253_402_300_799, 1_234_567_890]
        for seconds in instants {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(ISO8601Timestamp.string(from: date) == date.formatted(.iso8601), "\(seconds)")
        }
    }

    @Test("millisecond timestamps are the text ISO8601DateFormatter writes with fractional seconds in UTC")
    func millisecondTimestampsMatchFoundation() {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        var instants: [Double] = [0, 1, 999, 999.9, 1000, 1_763_722_346_123, 1_763_722_346_999.7, 1_763_722_346_000.4,
                                  -1, -999.5, -1000, 253_402_300_799_999, 951_782_400_500]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<500 { instants.append(Double.random(in: 0..<4_102_444_800_000, using: &generator)) }
        for _ in 0..<200 { instants.append(Double(Int64.random(in: 0..<4_102_444_800_000, using: &generator))) }
        for ms in instants {
            #expect(ISO8601Timestamp.string(fromEpochMilliseconds: ms) == formatter.string(from: Date(timeIntervalSince1970: ms / 1000)),
                    "\(ms)")
        }
    }
}
