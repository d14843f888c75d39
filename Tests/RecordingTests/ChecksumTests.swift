import Testing

@testable import Recording

@Suite("Chunk checksum")
struct ChecksumTests {
    /// The plain bytewise CRC-32 (IEEE), the definition the fast one must match.
    static func reference(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        }
        return c ^ 0xFFFF_FFFF
    }

    @Test("CRC-32 check values: empty, \"123456789\", a zero block")
    func checkValues() {
        #expect(CRC32.checksum([]) == 0)
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8](repeating: 0, count: 32)) == 0x190A_55AD)
    }

    @Test("a checksum continued piece by piece equals the checksum of the whole")
    func continued() {
        var state: UInt64 = 0x2545_F491_4F6C_DD1D
        let data = (0..<300).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
        for step in [1, 7, 16, 53, 77, 300] {
            var crc: UInt32 = 0
            for start in stride(from: 0, to: data.count, by: step) {
                crc = CRC32.checksum(Array(data[..<min(start + step, data.count)]), continuing: crc, from: start)
            }
            #expect(crc == Self.reference(data), "pieces of \(step)")
        }
        #expect(CRC32.checksum(data, continuing: CRC32.checksum(data), from: data.count) == CRC32.checksum(data))
    }

    @Test("CRC-32 equals the bytewise definition for every length and alignment up to 70 bytes (all tail paths)")
    func matchesBytewise() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let data = (0..<80).map { _ -> UInt8 in
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return UInt8(truncatingIfNeeded: state >> 33)
        }
        for start in 0..<8 {
            for length in 0...70 where start + length <= data.count {
                let slice = Array(data[start..<(start + length)])
                #expect(CRC32.checksum(slice) == Self.reference(slice), "start \(start) length \(length)")
            }
        }
    }
}
