import Foundation
import Testing
import Basics

/// The JSON string writer behind gpsd's TPV reports and the recorded documents' JSON: whatever
/// a device path, a hazard name or a board name holds, a JSON parser reads back the same text.
@Suite("JSON string literals")
struct JSONStringTests {
    private func literal(_ text: String) -> String { JSONString.literal(text) }

    @Test(arguments: [
        ("plain", #""plain""#),
        ("say \"hi\"", #""say \"hi\"""#),
        (#"C:\path"#, #""C:\\path""#),
        ("a\nb\r\tc", #""a\nb\r\tc""#),
        ("\u{0}\u{1F}", #""\u0000\u001f""#),
        ("é 😀", "\"é 😀\""),
    ])
    func escapes(_ text: String, _ expected: String) {
        #expect(literal(text) == expected)
    }

    @Test func everyControlAndASCIICharacterReadsBack() throws {
        let text = String(String.UnicodeScalarView((0..<0x80).compactMap(Unicode.Scalar.init))) + "\u{7F}\u{A0}\u{2028}ä"
        let json = "[" + literal(text) + "]"
        let decoded = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String]
        #expect(decoded == [text])
    }

    @Test func appendsAfterWhatIsAlreadyThere() {
        var out = "{\"device\":"
        JSONString.append("/dev/gps0", to: &out)
        #expect(out == #"{"device":"/dev/gps0""#)
    }

    @Test("the byte writer (the sinks' path) writes the same UTF-8 as the text writer, after what is there")
    func bytesEqualText() {
        let texts = ["", "plain", "say \"hi\"", #"C:\path"#, "a\nb\r\tc\u{0}\u{1F}\u{7F}", "é 😀 \u{2028}", "a/b"]
        for text in texts {
            var bytes: [UInt8] = Array("[".utf8)
            JSONString.append(text, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == "[" + literal(text), "\(text)")
        }
    }
}
