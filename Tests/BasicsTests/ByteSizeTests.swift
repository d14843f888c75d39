import Testing
import Basics

@Suite("Byte sizes")
struct ByteSizeTests {
    @Test("bytes, SI and IEC units, with or without spaces (tabs and no-break spaces too)", arguments: [
        ("1073741824", Int64(1_073_741_824)), ("1 GiB", 1 << 30), ("512MiB", 512 << 20), ("2 GB", 2_000_000_000),
        ("64 kB", 64_000), ("1.5 KiB", 1536), ("  256 MiB\t", 256 << 20), ("\u{A0}3 g\u{2009}", 3 << 30), ("0", 0), ("7 B", 7),
    ])
    func parses(_ text: String, _ bytes: Int64) {
        #expect(ByteSize.parse(text) == bytes, "\(text)")
    }

    @Test("anything else is nil", arguments: ["", "GiB", "-1 MiB", "1 parsec", "1e3", "10000000 TiB", "1\nGiB", "1 G iB"])
    func rejects(_ text: String) {
        #expect(ByteSize.parse(text) == nil, "\(text)")
    }

    @Test("whole units are named, other sizes in bytes")
    func formats() {
        #expect(ByteSize.format(1 << 30) == "1 GiB")
        #expect(ByteSize.format(16 << 20) == "16 MiB")
        #expect(ByteSize.format(3 << 40) == "3 TiB")
        #expect(ByteSize.format(1000) == "1000 bytes")
        #expect(ByteSize.format(1536) == "1536 bytes")
    }
}
