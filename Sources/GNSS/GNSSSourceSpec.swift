/// Where fixes come from, parsed from a one-line spec string.
///
/// Grammar:
/// - `serial:PATH[@BAUD]`: a receiver on a tty (`serial:/dev/ttyACM0`, `serial:/dev/serial0@115200`).
///   Without `@BAUD` the rate is detected among 4800, 9600, 38400 and 115200.
/// - `gpsd://HOST[:PORT]`: a gpsd, asked to pass the receiver's NMEA through; port 2947 by default.
/// - `tcp://HOST:PORT`: a plain NMEA byte stream (ser2net, a networked receiver, `nc`).
/// - `file:PATH[?speed=realtime|fast]`: replay a capture (gpsd test-log format); `realtime`
///   (default) paces cycles by their NMEA time stamps, `fast` reads as fast as possible.
///
/// IPv6 hosts go in brackets: `gpsd://[::1]:2947`.
public enum GNSSSourceSpec: Sendable, Equatable, CustomStringConvertible {
    case serial(path: String, baud: Int?)
    case gpsd(host: String, port: Int)
    case tcp(host: String, port: Int)
    case file(path: String, pacing: ReplayPacing)

    /// How a file replay is paced.
    public enum ReplayPacing: String, Sendable, Equatable {
        case realtime, fast
    }

    /// Rates a serial receiver is probed at, most common first.
    public static let detectedBaudRates = [9600, 4800, 38400, 115200]
    /// Rates accepted after `@`.
    public static let supportedBaudRates = [4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800]
    /// gpsd's registered port.
    public static let gpsdDefaultPort = 2947

    /// Parses a spec; the error names what is wrong and what was expected.
    public init(parsing spec: String) throws(GNSSSourceSpecError) {
        let spec = spec.trimmingWhitespace()
        guard !spec.isEmpty else { throw .init("empty source spec") }
        if let rest = spec.dropPrefix("serial:") {
            var path = rest
            var baud: Int?
            if let at = rest.lastIndex(of: "@") {
                path = String(rest[..<at])
                let rate = String(rest[rest.index(after: at)...])
                guard let value = Int(rate), Self.supportedBaudRates.contains(value) else {
                    throw .init("bad baud rate '\(rate)' in '\(spec)' (expected one of "
                        + Self.supportedBaudRates.map(String.init).joined(separator: ", ") + ")")
                }
                baud = value
            }
            guard path.hasPrefix("/") else {
                throw .init("serial source needs an absolute device path, as in serial:/dev/ttyACM0 (got '\(spec)')")
            }
            self = .serial(path: path, baud: baud)
        } else if let rest = spec.dropPrefix("gpsd://") {
            let (host, port) = try Self.hostPort(rest, spec: spec, defaultPort: Self.gpsdDefaultPort)
            self = .gpsd(host: host, port: port)
        } else if let rest = spec.dropPrefix("tcp://") {
            let (host, port) = try Self.hostPort(rest, spec: spec, defaultPort: nil)
            self = .tcp(host: host, port: port)
        } else if let rest = spec.dropPrefix("file:") {
            var path = rest
            var pacing = ReplayPacing.realtime
            if let question = rest.lastIndex(of: "?") {
                path = String(rest[..<question])
                let query = rest[rest.index(after: question)...]
                guard query.hasPrefix("speed="),
                    let value = ReplayPacing(rawValue: String(query.dropFirst("speed=".count)))
                else {
                    throw .init("bad option '\(query)' in '\(spec)' (expected ?speed=realtime or ?speed=fast)")
                }
                pacing = value
            }
            guard !path.isEmpty else { throw .init("file source needs a path, as in file:/var/log/gps.nmea") }
            self = .file(path: path, pacing: pacing)
        } else {
            throw .init("unknown source '\(spec)' (expected serial:PATH[@BAUD], gpsd://HOST[:PORT], tcp://HOST:PORT or file:PATH[?speed=realtime|fast])")
        }
    }

    private static func hostPort(
        _ text: String, spec: String, defaultPort: Int?
    ) throws(GNSSSourceSpecError) -> (String, Int) {
        var host = text
        var portText: String?
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else {
                throw .init("unclosed '[' in '\(spec)'")
            }
            host = String(text[text.index(after: text.startIndex)..<close])
            let after = text[text.index(after: close)...]
            if after.hasPrefix(":") { portText = String(after.dropFirst()) }
            else if !after.isEmpty { throw .init("unexpected '\(after)' after host in '\(spec)'") }
        } else if let colon = text.lastIndex(of: ":") {
            host = String(text[..<colon])
            portText = String(text[text.index(after: colon)...])
        }
        if host.hasSuffix("/") { host.removeLast() }
        guard !host.isEmpty, !host.contains("/") else {
            throw .init("missing or bad host in '\(spec)'")
        }
        if let portText {
            guard let port = Int(portText), (1...65535).contains(port) else {
                throw .init("bad port '\(portText)' in '\(spec)' (expected 1-65535)")
            }
            return (host, port)
        }
        guard let defaultPort else { throw .init("missing port in '\(spec)' (expected HOST:PORT)") }
        return (host, defaultPort)
    }

    /// The canonical spec string.
    public var description: String {
        switch self {
        case .serial(let path, let baud): "serial:\(path)" + (baud.map { "@\($0)" } ?? "")
        case .gpsd(let host, let port): "gpsd://\(host.contains(":") ? "[\(host)]" : host):\(port)"
        case .tcp(let host, let port): "tcp://\(host.contains(":") ? "[\(host)]" : host):\(port)"
        case .file(let path, let pacing): "file:\(path)?speed=\(pacing.rawValue)"
        }
    }
}

/// A malformed source spec; the message says what was wrong.
public struct GNSSSourceSpecError: Error, Equatable, CustomStringConvertible {
    public let message: String
    init(_ message: String) { self.message = message }
    public var description: String { message }
}

extension String {
    fileprivate func dropPrefix(_ prefix: String) -> String? {
        hasPrefix(prefix) ? String(dropFirst(prefix.count)) : nil
    }

    fileprivate func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first.isWhitespace { scalars.removeFirst() }
        while let last = scalars.last, last.isWhitespace { scalars.removeLast() }
        return String(scalars)
    }
}
