import Recording

/// The segment journal's form of a segment's points: each byte XORed with the byte one point
/// record earlier, then every run of 8 bytes as a mask byte of the non-zero ones followed by
/// those. Consecutive points share most bytes (the flags, a timestamp's high bytes 10 ms on,
/// a reading's sign and exponent), so a second's points shrink by about a third; lossless
/// whatever the points (records of another size only pack less). Pure: bytes in, bytes out.
enum SegmentPacking {
    /// The distance the bytes are XORed over: the size of the first point's record.
    static func stride(of points: [UInt8]) -> Int {
        points.first.flatMap { PointCodec.recordSize(flags: $0) } ?? 1
    }

    /// `points` packed with `stride` (see the type).
    static func pack(_ points: [UInt8], stride: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(points.count)
        var i = 0
        while i < points.count {
            let n = min(8, points.count - i)
            let maskAt = out.count
            out.append(0)
            var mask: UInt8 = 0
            for k in 0..<n {
                let j = i + k
                let v = j >= stride ? points[j] ^ points[j - stride] : points[j]
                if v != 0 {
                    mask |= 1 << k
                    out.append(v)
                }
            }
            out[maskAt] = mask
            i += n
        }
        return out
    }

    /// The `count` bytes `packed` holds, nil when it does not hold exactly that many.
    static func unpack(_ packed: ArraySlice<UInt8>, stride: Int, count: Int) -> [UInt8]? {
        guard stride > 0, count >= 0 else { return nil }
        var points: [UInt8] = []
        points.reserveCapacity(count)
        var p = packed.startIndex
        while points.count < count {
            guard p < packed.endIndex else { return nil }
            let mask = packed[p]
            p += 1
            let n = min(8, count - points.count)
            guard mask >> n == 0 else { return nil }
            for k in 0..<n {
                var v: UInt8 = 0
                if mask & (1 << k) != 0 {
                    guard p < packed.endIndex else { return nil }
                    v = packed[p]
                    p += 1
                }
                let j = points.count
                points.append(j >= stride ? v ^ points[j - stride] : v)
            }
        }
        return p == packed.endIndex ? points : nil
    }
}
