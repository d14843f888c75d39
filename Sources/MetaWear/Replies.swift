/// Battery reply `11 8C <percent> <mV u16>`, or the percentage bluetoothd reports
/// (`org.bluez.Battery1`, the GATT battery level) for a board whose settings module cannot say.
public struct BatteryState: Hashable, Sendable, CustomStringConvertible {
    /// Charge, 0–100 (values above 100 are passed through as the board sent them).
    public var percent: UInt8
    /// Voltage in millivolts; nil when only the percentage is known (from bluetoothd).
    public var millivolts: UInt16?

    /// Both fields.
    public init(percent: UInt8, millivolts: UInt16?) {
        self.percent = percent
        self.millivolts = millivolts
    }

    public var description: String { millivolts.map { "\(percent) %, \($0) mV" } ?? "\(percent) %" }
}

/// Board clock reply `0B 84 <tick u32> <reset uid>` (reference §6).
public struct BoardClock: Hashable, Sendable, CustomStringConvertible {
    /// One firmware tick = 48/32768 s = 1.46484375 ms.
    public static let tickMilliseconds = 48.0 / 32768.0 * 1000.0

    /// Ticks since the last board reset.
    public var tick: UInt32
    /// 3-bit reset counter; changes on every board reset.
    public var resetUID: UInt8

    /// Both fields.
    public init(tick: UInt32, resetUID: UInt8) {
        self.tick = tick
        self.resetUID = resetUID
    }

    /// Milliseconds since the last board reset.
    public var milliseconds: Double { Double(tick) * Self.tickMilliseconds }

    public var description: String { "tick \(tick) (\(milliseconds) ms), reset uid \(resetUID)" }
}

/// Button (switch module) state change: `01 01 01` pressed, `01 01 00` released.
public enum ButtonEvent: Hashable, Sendable {
    case pressed
    case released
}

/// Turns raw button events into session toggles: one toggle per press, ignoring repeated
/// "pressed" without a release in between (a replayed or duplicated notification).
public struct ButtonToggleDetector: Hashable, Sendable {
    private var isDown = false

    /// Starts with the button up.
    public init() {}

    /// True when this event should toggle the session (the press edge).
    public mutating func shouldToggle(on event: ButtonEvent) -> Bool {
        switch event {
        case .pressed:
            defer { isDown = true }
            return !isDown
        case .released:
            isDown = false
            return false
        }
    }
}

/// MAC address reply `11 8B [type] b0…b5` (LSB first).
public struct MACAddress: Hashable, Sendable, CustomStringConvertible {
    /// Most significant byte first.
    public var bytes: [UInt8]
    /// Address-type byte when the board sent one (1 = random static).
    public var addressType: UInt8?

    /// MSB-first bytes.
    public init(bytes: [UInt8], addressType: UInt8?) {
        self.bytes = bytes
        self.addressType = addressType
    }

    /// `E8:C9:8F:52:7B:07`.
    public var description: String { bytes.map(Hex.byte).joined(separator: ":") }
}
