import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Names for sealed chunks: uppercase random UUIDs (version 4), the form `UUID().uuidString`
/// gives. Foundation's UUID opens, reads and closes /dev/urandom for every name, three system
/// calls and a path lookup per seal; this draws the random bits from a pool the kernel's
/// generator refills once per 64 names, and formats them without Foundation.
final class ChunkNameGenerator: @unchecked Sendable {
    /// 64 names' worth of random bytes per refill.
    static let poolSize = 16 * 64

    private let lock = NSLock()
    private var pool = [UInt8](repeating: 0, count: ChunkNameGenerator.poolSize)
    private var used = ChunkNameGenerator.poolSize

    /// A new name, e.g. `0F8E4C1A-7B2D-4E59-9A3C-5D6E7F809A1B`.
    func next() -> String {
        var bytes: (UInt64, UInt64) = (0, 0)
        lock.lock()
        if used == pool.count {
            Self.fillRandom(&pool)
            used = 0
        }
        pool.withUnsafeBytes { raw in
            withUnsafeMutableBytes(of: &bytes) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: raw[used..<used + 16])) }
        }
        used += 16
        lock.unlock()
        return withUnsafeMutableBytes(of: &bytes) { Self.format(uuid: $0) }
    }

    /// Sets the version (4) and variant (RFC 4122) bits and writes the 36-character form.
    static func format(uuid raw: UnsafeMutableRawBufferPointer) -> String {
        raw[6] = (raw[6] & 0x0F) | 0x40
        raw[8] = (raw[8] & 0x3F) | 0x80
        let hex: StaticString = "0123456789ABCDEF"
        return String(unsafeUninitializedCapacity: 36) { out in
            hex.withUTF8Buffer { digits in
                var o = 0
                for i in 0..<16 {
                    if i == 4 || i == 6 || i == 8 || i == 10 {
                        out[o] = UInt8(ascii: "-")
                        o += 1
                    }
                    out[o] = digits[Int(raw[i] >> 4)]
                    out[o + 1] = digits[Int(raw[i] & 0x0F)]
                    o += 2
                }
            }
            return 36
        }
    }

    /// Fills `buffer` from the kernel's random generator (glibc's arc4random_buf is one
    /// getrandom call), or from the standard library's system generator elsewhere.
    static func fillRandom(_ buffer: inout [UInt8]) {
        #if canImport(Glibc)
        buffer.withUnsafeMutableBytes { raw in
            if let base = raw.baseAddress { arc4random_buf(base, raw.count) }
        }
        #else
        var generator = SystemRandomNumberGenerator()
        for i in buffer.indices { buffer[i] = generator.next() }
        #endif
    }
}
