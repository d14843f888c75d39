/// The two motion sensors a simulated board streams.
public enum SimulatedSensorKind: String, Hashable, Sendable, CaseIterable {
    case gyro, accelerometer

    /// Module id byte.
    public var module: UInt8 { self == .gyro ? 0x13 : 0x03 }
}

/// Board-side state of one motion sensor (reference §11.6): config bytes plus the three flags
/// that must all be on for data to flow.
public struct SimulatedSensorState: Hashable, Sendable {
    /// Stored config bytes (`[mod, 03, b0, b1]`), returned by `[mod, 83]`.
    public internal(set) var config: [UInt8]
    /// Power mode byte last written to register 01 (0 = off).
    public internal(set) var powerMode: UInt8 = 0
    /// Data interrupt enabled (`[mod, 02, 01, 00]`).
    public internal(set) var interruptEnabled = false
    /// Single-sample register notifications enabled.
    public internal(set) var singleNotify = false
    /// Packed register notifications enabled.
    public internal(set) var packedNotify = false
    /// Samples generated since the board was created (index of the next sample).
    public internal(set) var nextSampleIndex: UInt64 = 0

    var originNanoseconds: UInt64 = 0
    var samplesSinceOrigin: UInt64 = 0
    var pendingPacked: [UInt64] = []

    /// Powered on.
    public var isPowered: Bool { powerMode != 0 }
    /// The sensor is producing samples (powered and interrupt on).
    public var isSampling: Bool { isPowered && interruptEnabled }
    /// Notifications reach the host (all three flags on, reference §11.6).
    public var isStreaming: Bool { isSampling && (singleNotify || packedNotify) }
    /// Everything off: what a clean stop leaves.
    public var isIdle: Bool { !isPowered && !interruptEnabled && !singleNotify && !packedNotify }
}
