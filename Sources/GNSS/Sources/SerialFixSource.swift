#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A receiver on a serial device (Pi UART `/dev/serial0`, USB `/dev/ttyACM0`, a udev
/// symlink such as `/dev/gps0`), set to raw 8N1 with termios.
///
/// With no configured baud rate, each of ``GNSSSourceSpec/detectedBaudRates`` is tried in
/// turn until the line yields three checksummed sentences within ``probeWindow``. When a
/// USB receiver is unplugged the read fails; the source then reopens the path with
/// backoff until the device (or its symlink) comes back.
public struct SerialFixSource: FixSource {
    public let path: String
    public let baud: Int?
    public let configuration: FixSourceConfiguration
    /// How long each candidate rate is listened to during detection.
    public var probeWindow: Duration = .seconds(2)

    public init(path: String, baud: Int?, configuration: FixSourceConfiguration = .init()) {
        self.path = path
        self.baud = baud
        self.configuration = configuration
    }

    public var description: String { GNSSSourceSpec.serial(path: path, baud: baud).description }

    public func fixes() -> AsyncThrowingStream<GNSSFix, any Error> {
        let path = path
        let baud = baud
        let window = probeWindow
        let events = configuration.events
        let name = description
        return ByteStreamPump.start(name: name, configuration: configuration) {
            let descriptor = try SerialPort.open(path)
            do {
                if let baud {
                    try SerialPort.configure(descriptor, baud: baud)
                    return OpenedStream(descriptor: descriptor)
                }
                for candidate in GNSSSourceSpec.detectedBaudRates {
                    try SerialPort.configure(descriptor, baud: candidate)
                    if let bytes = try SerialPort.probe(descriptor, window: window) {
                        events?(FixSourceEvent(source: name, message: "detected \(candidate) baud"))
                        return OpenedStream(descriptor: descriptor, initialBytes: bytes)
                    }
                }
                throw FixSourceError("no NMEA sentences at \(GNSSSourceSpec.detectedBaudRates.map(String.init).joined(separator: ", ")) baud on \(path)")
            } catch {
                close(descriptor)
                throw error
            }
        }
    }
}

/// termios set-up for a GNSS receiver.
enum SerialPort {
    static func open(_ path: String) throws -> Int32 {
        let descriptor = Glibc.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { throw FixSourceError.posix("cannot open \(path)") }
        return descriptor
    }

    static func speed(for baud: Int) -> speed_t? {
        switch baud {
        case 4800: speed_t(B4800)
        case 9600: speed_t(B9600)
        case 19200: speed_t(B19200)
        case 38400: speed_t(B38400)
        case 57600: speed_t(B57600)
        case 115200: speed_t(B115200)
        case 230400: speed_t(B230400)
        case 460800: speed_t(B460800)
        default: nil
        }
    }

    /// Raw 8N1, no flow control, receiver on, reads return what is there.
    static func configure(_ descriptor: Int32, baud: Int) throws {
        guard let speed = speed(for: baud) else { throw FixSourceError("unsupported baud rate \(baud)") }
        var settings = termios()
        guard tcgetattr(descriptor, &settings) == 0 else { throw FixSourceError.posix("tcgetattr") }
        cfmakeraw(&settings)
        cfsetispeed(&settings, speed)
        cfsetospeed(&settings, speed)
        settings.c_cflag |= tcflag_t(CLOCAL | CREAD)
        settings.c_cflag &= ~(tcflag_t(CRTSCTS) | tcflag_t(PARENB) | tcflag_t(CSTOPB))
        withUnsafeMutableBytes(of: &settings.c_cc) { cc in
            cc[Int(VMIN)] = 1
            cc[Int(VTIME)] = 0
        }
        guard tcsetattr(descriptor, TCSANOW, &settings) == 0 else { throw FixSourceError.posix("tcsetattr") }
        tcflush(descriptor, TCIFLUSH)
    }

    /// Listens for up to `window`; returns the bytes read once they hold three valid
    /// sentences, or nil when they do not.
    static func probe(_ descriptor: Int32, window: Duration) throws -> [UInt8]? {
        var framer = NMEAFramer()
        var collected: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1024)
        let deadline = ContinuousClock.now + window
        while ContinuousClock.now < deadline {
            var waiter = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&waiter, 1, 100)
            if ready < 0 && errno != EINTR { throw FixSourceError.posix("poll") }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && (errno == EAGAIN || errno == EINTR) { continue }
            guard count > 0 else { throw FixSourceError("device closed while detecting baud rate") }
            collected.append(contentsOf: buffer[0..<count])
            buffer.withUnsafeBytes { framer.feed(UnsafeRawBufferPointer(rebasing: $0[0..<count])) { _ in } }
            if framer.counters.sentences >= 3 { return collected }
        }
        return nil
    }
}
