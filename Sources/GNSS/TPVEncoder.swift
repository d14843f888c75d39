import Basics
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Writes fixes as gpsd TPV JSON objects, one per line, with gpsd's field names and units
/// (`class`, `time`, `mode`, `lat`, `lon`, `altMSL`, `speed`, `track`, `eph`, ...).
///
/// Like gpsd, unknown values are omitted rather than sent as null. Number formatting
/// follows gpsd: 9 decimals for degrees, 4 for altitudes and track, 3 for speed and errors.
public enum TPVEncoder {
    /// One TPV object without a trailing newline. `device` names the source, as gpsd does.
    public static func encode(_ fix: GNSSFix, device: String? = nil) -> String {
        var json = "{\"class\":\"TPV\""
        if let device { json += ",\"device\":\(quoted(device))" }
        json += ",\"mode\":\(fix.mode.rawValue)"
        if let time = fix.time { json += ",\"time\":\"\(iso8601(time))\"" }
        func add(_ key: String, _ value: Double?, _ decimals: Int) {
            guard let value, value.isFinite else { return }
            json += ",\"\(key)\":\(fixed(value, decimals))"
        }
        add("lat", fix.latitude, 9)
        add("lon", fix.longitude, 9)
        if let msl = fix.altitudeMSL {
            add("altHAE", fix.geoidSeparation.map { msl + $0 }, 4)
            add("altMSL", msl, 4)
            add("alt", msl, 4)
        }
        add("eph", fix.horizontalError, 3)
        add("epv", fix.verticalError, 3)
        add("track", fix.track, 4)
        add("magvar", fix.magneticVariation, 1)
        add("speed", fix.speed, 3)
        add("geoidSep", fix.geoidSeparation, 3)
        // gpsd leaves `status` out for a plain GPS fix (and without a fix).
        if fix.mode >= .twoD, fix.status != .gps, fix.status != .unknown {
            json += ",\"status\":\(fix.status.rawValue)"
        }
        json += "}"
        return json
    }

    /// `YYYY-MM-DDThh:mm:ss.sssZ`, UTC, millisecond precision.
    public static func iso8601(_ date: Date) -> String {
        UTCTimestamp.string(epochMilliseconds: date.timeIntervalSince1970 * 1000)
    }

    /// Fixed-point formatting without Foundation's locale-dependent formatters.
    static func fixed(_ value: Double, _ decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        guard scaled < 9e15 else { return String(value) }
        let integer = Int64(scaled)
        let whole = integer / Int64(scale)
        let fraction = String(integer % Int64(scale))
        let sign = value < 0 && integer != 0 ? "-" : ""
        guard decimals > 0 else { return "\(sign)\(whole)" }
        return "\(sign)\(whole)." + String(repeating: "0", count: decimals - fraction.count) + fraction
    }

    private static func quoted(_ text: String) -> String { JSONString.literal(text) }
}
