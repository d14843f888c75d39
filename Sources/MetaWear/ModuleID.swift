/// A MetaWear firmware module id: byte 0 of every command and notification.
///
/// An open set (a struct, not an enum) because boards may report ids this gateway does not
/// know; those must still round-trip through the decoder instead of failing.
public struct ModuleID: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The id byte on the wire.
    public let rawValue: UInt8

    /// Wraps an id byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Mechanical push button.
    public static let switchModule = ModuleID(rawValue: 0x01)
    /// RGB LED.
    public static let led = ModuleID(rawValue: 0x02)
    /// Accelerometer (BMI160 / BMI270 on MetaMotion boards).
    public static let accelerometer = ModuleID(rawValue: 0x03)
    /// Temperature.
    public static let temperature = ModuleID(rawValue: 0x04)
    /// GPIO.
    public static let gpio = ModuleID(rawValue: 0x05)
    /// NeoPixel (deprecated, never probed).
    public static let neoPixel = ModuleID(rawValue: 0x06)
    /// iBeacon.
    public static let iBeacon = ModuleID(rawValue: 0x07)
    /// Haptic driver.
    public static let haptic = ModuleID(rawValue: 0x08)
    /// On-board data processor.
    public static let dataProcessor = ModuleID(rawValue: 0x09)
    /// Event (command-on-trigger) module.
    public static let event = ModuleID(rawValue: 0x0A)
    /// Logging; also owns the board clock (`0B 84`).
    public static let logging = ModuleID(rawValue: 0x0B)
    /// Timer.
    public static let timer = ModuleID(rawValue: 0x0C)
    /// Serial passthrough (I2C/SPI).
    public static let serialPassthrough = ModuleID(rawValue: 0x0D)
    /// Macro (the only module written with write-with-response).
    public static let macro = ModuleID(rawValue: 0x0F)
    /// Conductance (deprecated, never probed).
    public static let conductance = ModuleID(rawValue: 0x10)
    /// Settings: battery, connection parameters, MAC, advertising.
    public static let settings = ModuleID(rawValue: 0x11)
    /// Barometer.
    public static let barometer = ModuleID(rawValue: 0x12)
    /// Gyroscope (BMI160 / BMI270).
    public static let gyro = ModuleID(rawValue: 0x13)
    /// Ambient light.
    public static let ambientLight = ModuleID(rawValue: 0x14)
    /// Magnetometer.
    public static let magnetometer = ModuleID(rawValue: 0x15)
    /// Humidity.
    public static let humidity = ModuleID(rawValue: 0x16)
    /// Color detector (deprecated, never probed).
    public static let colorDetector = ModuleID(rawValue: 0x17)
    /// Proximity (deprecated, never probed).
    public static let proximity = ModuleID(rawValue: 0x18)
    /// Sensor fusion.
    public static let sensorFusion = ModuleID(rawValue: 0x19)
    /// Debug: reset, disconnect, bootloader.
    public static let debug = ModuleID(rawValue: 0xFE)

    /// The 21 modules MbientLab's SDKs probe at connect, in their order (reference §3.1).
    /// 06, 0E, 10, 17 and 18 are deliberately not probed.
    public static let discoveryOrder: [ModuleID] = [
        .switchModule, .led, .accelerometer, .temperature, .gpio, .iBeacon, .haptic,
        .dataProcessor, .event, .logging, .timer, .serialPassthrough, .macro, .settings,
        .barometer, .gyro, .ambientLight, .magnetometer, .humidity, .sensorFusion, .debug,
    ]

    private static let names: [UInt8: String] = [
        0x01: "switch", 0x02: "led", 0x03: "accelerometer", 0x04: "temperature", 0x05: "gpio",
        0x06: "neopixel", 0x07: "ibeacon", 0x08: "haptic", 0x09: "data-processor", 0x0A: "event",
        0x0B: "logging", 0x0C: "timer", 0x0D: "serial-passthrough", 0x0F: "macro",
        0x10: "conductance", 0x11: "settings", 0x12: "barometer", 0x13: "gyro",
        0x14: "ambient-light", 0x15: "magnetometer", 0x16: "humidity", 0x17: "color-detector",
        0x18: "proximity", 0x19: "sensor-fusion", 0xFE: "debug",
    ]

    /// Human-readable name with the hex id, e.g. `gyro (0x13)`.
    public var description: String {
        let hex = "0x" + Hex.byte(rawValue)
        if let name = Self.names[rawValue] { return "\(name) (\(hex))" }
        return "module \(hex)"
    }

    public static func < (lhs: ModuleID, rhs: ModuleID) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Hex formatting for error messages and descriptions.
public enum Hex {
    /// Two uppercase hex digits.
    public static func byte(_ value: UInt8) -> String {
        let digits = Array("0123456789ABCDEF")
        return String([digits[Int(value >> 4)], digits[Int(value & 0x0F)]])
    }

    /// Space-separated uppercase hex, e.g. `13 05 01`.
    public static func string(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map(byte).joined(separator: " ")
    }
}
