import MetaWear

/// A gyroscope reading with its rebuilt time: °/s per axis, epoch milliseconds.
///
/// Axes are float32, the precision stored: a 16-bit count times the range's scale keeps every
/// count exactly (24-bit significand), and documents print the float32's own shortest digits.
public struct GyroReading: Hashable, Sendable {
    public var x: Float
    public var y: Float
    public var z: Float
    /// Unix epoch milliseconds (fractional: the rebuilt time is finer than 1 ms).
    public var timestamp: Double

    /// A reading.
    public init(x: Float, y: Float, z: Float, timestamp: Double) {
        self.x = x
        self.y = y
        self.z = z
        self.timestamp = timestamp
    }

    /// A decoded sample at the precision recorded.
    public init(_ sample: MotionSample, timestamp: Double) {
        self.init(x: Float(sample.x), y: Float(sample.y), z: Float(sample.z), timestamp: timestamp)
    }
}

/// An accelerometer reading: g per axis (float32, as ``GyroReading``), epoch milliseconds.
public struct AccelerometerReading: Hashable, Sendable {
    public var x: Float
    public var y: Float
    public var z: Float
    /// Unix epoch milliseconds of the accelerometer sample itself.
    public var timestamp: Double

    /// A reading.
    public init(x: Float, y: Float, z: Float, timestamp: Double) {
        self.x = x
        self.y = y
        self.z = z
        self.timestamp = timestamp
    }

    /// A decoded sample at the precision recorded.
    public init(_ sample: MotionSample, timestamp: Double) {
        self.init(x: Float(sample.x), y: Float(sample.y), z: Float(sample.z), timestamp: timestamp)
    }
}

/// Where the walker was at a sample's time.
public struct PointLocation: Hashable, Sendable {
    /// Degrees, WGS84, north positive.
    public var latitude: Double
    /// Degrees, WGS84, east positive.
    public var longitude: Double
    /// Epoch milliseconds the position refers to: the sample's time when interpolated, the
    /// fix's time when the last fix was held.
    public var timestamp: Double
    /// Horizontal accuracy estimate in metres (GST 1-sigma, else HDOP × 5 m), nil if unknown.
    /// Float32: it keeps every decimal of up to 6 significant digits exactly, more than a
    /// receiver sends for an error estimate, and prints them as sent (`17.1`).
    public var accuracy: Float?
    /// Milliseconds between the sample and the nearest fix used (0 for an exact match).
    public var age: Double
    /// True when a fix used came from dead reckoning, not a measurement (only recorded when
    /// the configuration accepts dead reckoning).
    public var deadReckoned: Bool

    /// A location.
    public init(latitude: Double, longitude: Double, timestamp: Double, accuracy: Float?, age: Double,
                deadReckoned: Bool = false) {
        self.latitude = latitude
        self.longitude = longitude
        self.timestamp = timestamp
        self.accuracy = accuracy
        self.age = age
        self.deadReckoned = deadReckoned
    }
}

/// Why a point has no location.
public enum MissingLocationReason: UInt8, Hashable, Sendable, CaseIterable {
    /// No fix with a position has been seen in this session.
    case noFix = 1
    /// The last fix is older than the freshness limit.
    case staleFix = 2

    /// The name stored in documents.
    public var name: String {
        switch self {
        case .noFix: "no_fix"
        case .staleFix: "stale_fix"
        }
    }
}

/// One merged point of a `realtime_data` document.
public struct RecordedPoint: Hashable, Sendable {
    public var gyroscope: GyroReading
    /// Nil when no location could be given; then `missingLocation` says why.
    public var location: PointLocation?
    public var missingLocation: MissingLocationReason?
    /// The nearest accelerometer sample of the same board, when the accelerometer streams.
    public var accelerometer: AccelerometerReading?
    /// Gyro samples lost immediately before this one (a gap), 0 when none.
    public var missedBefore: Int
    /// How long the gap before this point lasted: milliseconds from the previous point of the
    /// same board to this one (`gap_ms`); 0 when `missedBefore` is 0.
    public var gapMilliseconds: Int
    /// True when the sample was not streamed but downloaded afterwards from the board's flash
    /// log to fill a gap of the link (`backfilled`; issue 21). Its time is placed on the
    /// streamed samples' time base.
    public var backfilled: Bool

    /// A point.
    public init(gyroscope: GyroReading, location: PointLocation?, missingLocation: MissingLocationReason? = nil,
                accelerometer: AccelerometerReading? = nil, missedBefore: Int = 0, gapMilliseconds: Int = 0,
                backfilled: Bool = false) {
        self.gapMilliseconds = missedBefore > 0 ? gapMilliseconds : 0
        self.backfilled = backfilled
        self.gyroscope = gyroscope
        self.location = location
        self.missingLocation = location == nil ? (missingLocation ?? .noFix) : nil
        self.accelerometer = accelerometer
        self.missedBefore = missedBefore
    }
}

extension RecordedPoint {
    /// The point `offset` ms later (earlier when negative), its accelerometer reading with it:
    /// a delay of the link its sensors streamed on made both sensors' stamps late by as much.
    public func moved(by offset: Double) -> RecordedPoint {
        var p = self
        p.gyroscope.timestamp += offset
        p.accelerometer?.timestamp += offset
        return p
    }
}
