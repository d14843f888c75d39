#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Anything that produces a live stream of fixes: a serial receiver, gpsd, a TCP NMEA
/// stream or a replayed file. All of them run the same ``NMEADecoder``.
public protocol FixSource: Sendable {
    /// What the source reads from, for logs (`serial:/dev/ttyACM0@9600`).
    var description: String { get }

    /// Starts reading. The stream ends when the input ends for good (end of file, or the
    /// connection closed with reconnection off) and throws when the source cannot be used
    /// at all (unreadable file). Cancelling the consuming task stops the reader.
    func fixes() -> AsyncThrowingStream<GNSSFix, any Error>
}

/// Something a source wants a human to know about (connection lost, retrying, baud rate
/// found). Sources keep going after reporting.
public struct FixSourceEvent: Sendable, CustomStringConvertible {
    public let source: String
    public let message: String
    public var description: String { "\(source): \(message)" }
}

/// Settings shared by every source.
public struct FixSourceConfiguration: Sendable {
    /// Assembler behaviour (week-rollover pivot, cycle-ender learning).
    public var assembler: FixAssembler.Options
    /// Reconnect (serial, TCP, gpsd) after the device or peer goes away.
    public var reconnects: Bool
    /// First wait before reconnecting; doubles up to ``maximumBackoff``.
    public var initialBackoff: Duration
    public var maximumBackoff: Duration
    /// Emit the open cycle when no byte arrived for this long, so the last fix before
    /// a pause is not held back.
    public var quietFlush: Duration
    /// Close and reopen a serial device or connection that has sent nothing for this long
    /// (nil: never). Receivers talk every second; a silent one is usually a wedged USB
    /// adapter, or a device that vanished while something else still holds its other end.
    public var silenceReconnect: Duration?
    /// Receives status events; nil drops them.
    public var events: (@Sendable (FixSourceEvent) -> Void)?

    public init(
        assembler: FixAssembler.Options = .live, reconnects: Bool = true,
        initialBackoff: Duration = .milliseconds(250), maximumBackoff: Duration = .seconds(5),
        quietFlush: Duration = .milliseconds(1500), silenceReconnect: Duration? = .seconds(10),
        events: (@Sendable (FixSourceEvent) -> Void)? = nil
    ) {
        self.assembler = assembler
        self.reconnects = reconnects
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.quietFlush = quietFlush
        self.silenceReconnect = silenceReconnect
        self.events = events
    }
}

extension GNSSSourceSpec {
    /// The source this spec describes.
    public func makeSource(configuration: FixSourceConfiguration = .init()) -> any FixSource {
        switch self {
        case .serial(let path, let baud):
            SerialFixSource(path: path, baud: baud, configuration: configuration)
        case .gpsd(let host, let port):
            GpsdFixSource(host: host, port: port, configuration: configuration)
        case .tcp(let host, let port):
            TCPFixSource(host: host, port: port, configuration: configuration)
        case .file(let path, let pacing):
            FileReplayFixSource(path: path, pacing: pacing, configuration: configuration)
        }
    }
}
