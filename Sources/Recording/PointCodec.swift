/// The compact binary form of a chunk's points, stored as one BLOB per chunk.
///
/// Little-endian, one record per point, appended as points arrive (so a checkpoint is the
/// sealed bytes so far plus a tail):
///
/// | bytes | field |
/// |---|---|
/// | 1 | flags: bit0 location, bit1 accelerometer, bit2 missed-before, bit3 accuracy, bits 4–5 missing-location reason (no location) or 1 = dead-reckoned (location), bit6 gap duration, bit7 backfilled |
/// | 8 | gyro timestamp, epoch ms, Float64 |
/// | 12 | gyro x, y, z, °/s, Float32 |
/// | 32 | location (bit0): latitude, longitude, timestamp (Float64 each), accuracy m, age ms (Float32 each) |
/// | 20 | accelerometer (bit1): x, y, z g (Float32), timestamp epoch ms (Float64) |
/// | 4 | missed samples before this one (bit2), UInt32 |
/// | 4 | gap duration before this one, ms (bit6), UInt32 |
///
/// Float32 keeps every 16-bit sensor count exactly (24-bit mantissa), at half the size; the
/// point model holds those fields as `Float`, so what is decoded is what was recorded, bit for
/// bit. Positions and times stay Float64 (a receiver's `ddmm.mmmmm` needs more than float32's
/// 7 digits). Bits 4–5 of a point with a location were always 0 before they marked dead
/// reckoning, and bit 7 before it marked a backfilled point, so blobs written before read unchanged.
public enum PointCodec {
    /// Largest encoded point, bytes.
    public static let maxPointSize = 1 + 8 + 12 + 32 + 20 + 4 + 4

    /// Appends one point's record to `bytes`.
    public static func append(_ p: RecordedPoint, to bytes: inout [UInt8]) {
        var flags: UInt8 = 0
        if p.location != nil { flags |= 1 }
        if p.accelerometer != nil { flags |= 2 }
        if p.missedBefore > 0 { flags |= 4 }
        if p.location?.accuracy != nil { flags |= 8 }
        if p.location == nil, let reason = p.missingLocation { flags |= (reason.rawValue & 3) << 4 }
        if p.location?.deadReckoned == true { flags |= 1 << 4 }
        if p.missedBefore > 0, p.gapMilliseconds > 0 { flags |= 0x40 }
        if p.backfilled { flags |= 0x80 }
        bytes.append(flags)
        put64(p.gyroscope.timestamp, &bytes)
        put32(p.gyroscope.x, &bytes)
        put32(p.gyroscope.y, &bytes)
        put32(p.gyroscope.z, &bytes)
        if let l = p.location {
            put64(l.latitude, &bytes)
            put64(l.longitude, &bytes)
            put64(l.timestamp, &bytes)
            put32(l.accuracy ?? 0, &bytes)
            put32(Float(l.age), &bytes)
        }
        if let a = p.accelerometer {
            put32(a.x, &bytes)
            put32(a.y, &bytes)
            put32(a.z, &bytes)
            put64(a.timestamp, &bytes)
        }
        if p.missedBefore > 0 {
            let m = UInt32(clamping: p.missedBefore)
            for s in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: m >> UInt32(s))) }
            if p.gapMilliseconds > 0 {
                let g = UInt32(clamping: p.gapMilliseconds)
                for s in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: g >> UInt32(s))) }
            }
        }
    }

    /// The encoded form of `points`.
    public static func encode<S: Sequence>(_ points: S) -> [UInt8] where S.Element == RecordedPoint {
        var bytes: [UInt8] = []
        for p in points { append(p, to: &bytes) }
        return bytes
    }

    /// Why a blob could not be decoded.
    public struct DecodingError: Error, Hashable, CustomStringConvertible {
        /// Byte offset of the bad record.
        public var offset: Int
        public var reason: String
        public var description: String { "point blob: \(reason) at byte \(offset)" }
    }

    /// Bytes of a point record whose flags byte is `flags` (the byte included), nil for flags
    /// no version wrote.
    public static func recordSize(flags: UInt8) -> Int? {
        guard flags & 0x44 != 0x40, flags & 0x21 != 0x21 else { return nil }
        var size = 21
        if flags & 1 != 0 { size += 32 }
        if flags & 2 != 0 { size += 20 }
        if flags & 4 != 0 { size += 4 }
        if flags & 0x40 != 0 { size += 4 }
        return size
    }

    /// Decodes a blob; a truncated or malformed record is an error naming its offset.
    public static func decode(_ bytes: [UInt8]) throws(DecodingError) -> [RecordedPoint] {
        var points: [RecordedPoint] = []
        points.reserveCapacity(bytes.count / 40)
        var r = Reader(bytes: bytes)
        while r.offset < bytes.count {
            let start = r.offset
            let flags = bytes[r.offset]
            r.offset += 1
            guard let size = recordSize(flags: flags) else {
                throw DecodingError(offset: start, reason: "unknown flags \(flags)")
            }
            let need = size - 1
            guard r.offset + need <= bytes.count else { throw DecodingError(offset: start, reason: "truncated point") }
            let t = r.f64(), x = r.f32(), y = r.f32(), z = r.f32()
            var location: PointLocation?
            if flags & 1 != 0 {
                let lat = r.f64(), lon = r.f64(), lt = r.f64(), acc = r.f32(), age = r.f32()
                location = PointLocation(latitude: lat, longitude: lon, timestamp: lt,
                                         accuracy: flags & 8 != 0 ? acc : nil, age: Double(age),
                                         deadReckoned: flags & 0x30 == 0x10)
            }
            var accel: AccelerometerReading?
            if flags & 2 != 0 {
                let ax = r.f32(), ay = r.f32(), az = r.f32(), at = r.f64()
                accel = AccelerometerReading(x: ax, y: ay, z: az, timestamp: at)
            }
            var missed = 0
            if flags & 4 != 0 { missed = Int(r.u32()) }
            var gap = 0
            if flags & 0x40 != 0 { gap = Int(r.u32()) }
            let reason = MissingLocationReason(rawValue: (flags >> 4) & 3)
            points.append(RecordedPoint(gyroscope: GyroReading(x: x, y: y, z: z, timestamp: t), location: location,
                                        missingLocation: reason, accelerometer: accel, missedBefore: missed,
                                        gapMilliseconds: gap, backfilled: flags & 0x80 != 0))
        }
        return points
    }

    private static func put64(_ v: Double, _ bytes: inout [UInt8]) {
        let b = v.bitPattern
        for s in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: b >> UInt64(s))) }
    }

    private static func put32(_ v: Float, _ bytes: inout [UInt8]) {
        let b = v.bitPattern
        for s in stride(from: 0, to: 32, by: 8) { bytes.append(UInt8(truncatingIfNeeded: b >> UInt32(s))) }
    }

    private struct Reader {
        let bytes: [UInt8]
        var offset = 0
        mutating func u32() -> UInt32 {
            var v: UInt32 = 0
            for i in 0..<4 { v |= UInt32(bytes[offset + i]) << UInt32(8 * i) }
            offset += 4
            return v
        }
        mutating func f32() -> Float { Float(bitPattern: u32()) }
        mutating func f64() -> Double {
            var v: UInt64 = 0
            for i in 0..<8 { v |= UInt64(bytes[offset + i]) << UInt64(8 * i) }
            offset += 8
            return Double(bitPattern: v)
        }
    }
}

/// CRC-32 (IEEE 802.3), stored beside each sealed chunk so a damaged blob is detected.
///
/// Slice-by-16 (sixteen table lookups per two 64-bit loads) instead of one lookup per
/// byte, because the checksum of a 106 kB chunk was the largest CPU cost of a seal
/// (~230 µs bytewise, ~35 µs now).
public enum CRC32 {
    /// `tables[k * 256 + i]`: the CRC of byte `i` followed by `k` zero bytes.
    private static let tables: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 16 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            t[i] = c
        }
        for k in 1..<16 {
            for i in 0..<256 {
                let previous = t[(k - 1) * 256 + i]
                t[k * 256 + i] = t[Int(previous & 0xFF)] ^ (previous >> 8)
            }
        }
        return t
    }()

    /// Checksum of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        checksum(bytes, continuing: 0, from: 0)
    }

    /// The checksum of `previous`'s bytes followed by `bytes[start...]`, where `previous` is
    /// the checksum of what came before (0 for nothing): lets a chunk's checksum grow with
    /// the chunk, so the seal does not read 100 kB again.
    public static func checksum(_ bytes: [UInt8], continuing previous: UInt32, from start: Int) -> UInt32 {
        bytes.withUnsafeBytes { all in
            let raw = UnsafeRawBufferPointer(rebasing: all[min(max(start, 0), all.count)...])
            return tables.withUnsafeBufferPointer { t in
                var c: UInt32 = previous ^ 0xFFFF_FFFF
                var i = 0
                let n = raw.count
                while i + 16 <= n {
                    let a = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i, as: UInt64.self))
                    let b = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: i + 8, as: UInt64.self))
                    let w0 = c ^ UInt32(truncatingIfNeeded: a), w1 = UInt32(truncatingIfNeeded: a >> 32)
                    let w2 = UInt32(truncatingIfNeeded: b), w3 = UInt32(truncatingIfNeeded: b >> 32)
                    c = t[15 * 256 + Int(w0 & 0xFF)] ^ t[14 * 256 + Int((w0 >> 8) & 0xFF)]
                        ^ t[13 * 256 + Int((w0 >> 16) & 0xFF)] ^ t[12 * 256 + Int(w0 >> 24)]
                        ^ t[11 * 256 + Int(w1 & 0xFF)] ^ t[10 * 256 + Int((w1 >> 8) & 0xFF)]
                        ^ t[9 * 256 + Int((w1 >> 16) & 0xFF)] ^ t[8 * 256 + Int(w1 >> 24)]
                        ^ t[7 * 256 + Int(w2 & 0xFF)] ^ t[6 * 256 + Int((w2 >> 8) & 0xFF)]
                        ^ t[5 * 256 + Int((w2 >> 16) & 0xFF)] ^ t[4 * 256 + Int(w2 >> 24)]
                        ^ t[3 * 256 + Int(w3 & 0xFF)] ^ t[2 * 256 + Int((w3 >> 8) & 0xFF)]
                        ^ t[256 + Int((w3 >> 16) & 0xFF)] ^ t[Int(w3 >> 24)]
                    i += 16
                }
                while i < n {
                    c = t[Int((c ^ UInt32(raw[i])) & 0xFF)] ^ (c >> 8)
                    i += 1
                }
                return c ^ 0xFFFF_FFFF
            }
        }
    }
}
