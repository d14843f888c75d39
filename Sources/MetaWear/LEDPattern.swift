/// LED color channel.
public enum LEDColor: UInt8, Hashable, Sendable, CaseIterable {
    case green = 0x00, red = 0x01, blue = 0x02
}

/// One LED "flash" pattern (reference §8): 17 bytes `02 03 <color> 02 <13-byte pattern>`.
public struct LEDPattern: Hashable, Sendable {
    /// High intensity 0–31 (clamped when encoding).
    public var highIntensity: UInt8
    /// Low intensity 0–31 (clamped when encoding).
    public var lowIntensity: UInt8
    /// Rise time in ms.
    public var riseMilliseconds: UInt16
    /// Time at high intensity in ms.
    public var highMilliseconds: UInt16
    /// Fall time in ms.
    public var fallMilliseconds: UInt16
    /// Pulse period in ms.
    public var periodMilliseconds: UInt16
    /// Delay before the first pulse in ms; only honoured by LED revision ≥ 1.
    public var delayMilliseconds: UInt16
    /// Pulses to play; 255 = forever.
    public var repeatCount: UInt8

    /// All fields.
    public init(highIntensity: UInt8, lowIntensity: UInt8, riseMilliseconds: UInt16, highMilliseconds: UInt16,
                fallMilliseconds: UInt16, periodMilliseconds: UInt16, delayMilliseconds: UInt16 = 0, repeatCount: UInt8) {
        self.highIntensity = highIntensity
        self.lowIntensity = lowIntensity
        self.riseMilliseconds = riseMilliseconds
        self.highMilliseconds = highMilliseconds
        self.fallMilliseconds = fallMilliseconds
        self.periodMilliseconds = periodMilliseconds
        self.delayMilliseconds = delayMilliseconds
        self.repeatCount = repeatCount
    }

    /// Repeat value meaning "until stopped".
    public static let forever: UInt8 = 0xFF

    /// SDK "blink" preset: 50 ms flash every 500 ms.
    public static func blink(repeatCount: UInt8) -> LEDPattern {
        LEDPattern(highIntensity: 31, lowIntensity: 0, riseMilliseconds: 0, highMilliseconds: 50,
                   fallMilliseconds: 0, periodMilliseconds: 500, repeatCount: repeatCount)
    }

    /// SDK "solid" preset: on for 500 ms of every 1000 ms at full intensity throughout.
    public static func solid(repeatCount: UInt8) -> LEDPattern {
        LEDPattern(highIntensity: 31, lowIntensity: 31, riseMilliseconds: 0, highMilliseconds: 500,
                   fallMilliseconds: 0, periodMilliseconds: 1000, repeatCount: repeatCount)
    }

    /// SDK "pulse" preset: 725 ms rise and fall, 500 ms high, 2000 ms period.
    public static func pulse(repeatCount: UInt8) -> LEDPattern {
        LEDPattern(highIntensity: 31, lowIntensity: 0, riseMilliseconds: 725, highMilliseconds: 500,
                   fallMilliseconds: 725, periodMilliseconds: 2000, repeatCount: repeatCount)
    }

    /// `02 03 <color> 02 <pattern>`; the delay is zeroed for LED revision 0, as the SDK does.
    public func command(color: LEDColor, ledRevision: UInt8 = 1) -> Packet {
        func le(_ v: UInt16) -> [UInt8] { [UInt8(truncatingIfNeeded: v), UInt8(truncatingIfNeeded: v >> 8)] }
        var payload: [UInt8] = [color.rawValue, 0x02, min(highIntensity, 31), min(lowIntensity, 31)]
        payload += le(riseMilliseconds) + le(highMilliseconds) + le(fallMilliseconds) + le(periodMilliseconds)
        payload += le(ledRevision >= 1 ? delayMilliseconds : 0)
        payload.append(repeatCount)
        return Packet(unchecked: .led, 0x03, payload: payload)
    }
}

/// Complete LED feedback sequences: stop-and-clear first (LED state survives reconnects), then
/// the pattern, then play.
public enum LEDSignal: Hashable, Sendable, CaseIterable {
    /// Three green blinks: "this board".
    case identify
    /// A short green flash every 2 s until stopped: "recording a session".
    case recording
    /// Ten fast red blinks: "something went wrong" (e.g. a sensor failed to start).
    case error
    /// LED off.
    case off

    /// `02 01 01`: play.
    public static let play = Packet(unchecked: .led, 0x01, payload: [0x01])
    /// `02 02 01`: stop and clear all patterns.
    public static let stopAndClear = Packet(unchecked: .led, 0x02, payload: [0x01])

    /// Color and pattern of this signal, nil for `.off`.
    public var pattern: (color: LEDColor, pattern: LEDPattern)? {
        switch self {
        case .identify: (.green, .blink(repeatCount: 3))
        case .recording:
            (.green, LEDPattern(highIntensity: 31, lowIntensity: 0, riseMilliseconds: 0, highMilliseconds: 50,
                                fallMilliseconds: 0, periodMilliseconds: 2000, repeatCount: LEDPattern.forever))
        case .error:
            (.red, LEDPattern(highIntensity: 31, lowIntensity: 0, riseMilliseconds: 0, highMilliseconds: 100,
                              fallMilliseconds: 0, periodMilliseconds: 200, repeatCount: 10))
        case .off: nil
        }
    }

    /// The command sequence to write.
    public func commands(ledRevision: UInt8 = 1) -> [Packet] {
        guard let (color, pattern) = pattern else { return [Self.stopAndClear] }
        return [Self.stopAndClear, pattern.command(color: color, ledRevision: ledRevision), Self.play]
    }
}
