/// One x/y/z reading as the board sent it: signed 16-bit counts.
public struct RawVector: Hashable, Sendable {
    public var x: Int16
    public var y: Int16
    public var z: Int16

    /// Counts per axis.
    public init(x: Int16, y: Int16, z: Int16) {
        self.x = x
        self.y = y
        self.z = z
    }
}

/// One x/y/z reading in physical units (°/s for the gyro, g for the accelerometer).
public struct MotionSample: Hashable, Sendable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public var z: Double

    /// Values per axis.
    public init(x: Double, y: Double, z: Double) {
        self.x = x
        self.y = y
        self.z = z
    }

    public var description: String { "(\(x), \(y), \(z))" }
}

/// The samples of one notification: 1 (single) or 3 (packed, oldest first).
///
/// Stored inline (no heap allocation) because the decoder runs for every notification.
public struct MotionSamples: RandomAccessCollection, Hashable, Sendable {
    /// Raw counts of sample 0...count-1; unused slots are zero.
    public let raw0: RawVector
    public let raw1: RawVector
    public let raw2: RawVector
    /// LSB per unit used to convert (range scale at decode time).
    public let scale: Double
    /// 1 or 3.
    public let count: Int

    /// Single sample.
    public init(single raw: RawVector, scale: Double) {
        raw0 = raw
        raw1 = RawVector(x: 0, y: 0, z: 0)
        raw2 = raw1
        self.scale = scale
        count = 1
    }

    /// Packed samples, oldest first.
    public init(packed a: RawVector, _ b: RawVector, _ c: RawVector, scale: Double) {
        raw0 = a
        raw1 = b
        raw2 = c
        self.scale = scale
        count = 3
    }

    /// Whether this came from a packed notification.
    public var isPacked: Bool { count == 3 }

    public var startIndex: Int { 0 }
    public var endIndex: Int { count }

    /// Raw counts of sample `i`.
    public func raw(_ i: Int) -> RawVector {
        switch i {
        case 0: raw0
        case 1: raw1
        default: raw2
        }
    }

    /// Sample `i` in physical units (raw / scale).
    public subscript(position: Int) -> MotionSample {
        let r = raw(position)
        return MotionSample(x: Double(r.x) / scale, y: Double(r.y) / scale, z: Double(r.z) / scale)
    }
}
