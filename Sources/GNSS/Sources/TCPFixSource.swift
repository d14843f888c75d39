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

/// A plain NMEA 0183 byte stream over TCP (ser2net, a networked receiver, `nc -l`).
/// Reconnects with backoff when the peer goes away.
public struct TCPFixSource: FixSource {
    public let host: String
    public let port: Int
    public let configuration: FixSourceConfiguration

    public init(host: String, port: Int, configuration: FixSourceConfiguration = .init()) {
        self.host = host
        self.port = port
        self.configuration = configuration
    }

    public var description: String { GNSSSourceSpec.tcp(host: host, port: port).description }

    public func fixes() -> AsyncThrowingStream<GNSSFix, any Error> {
        let host = host
        let port = port
        return ByteStreamPump.start(name: description, configuration: configuration) {
            OpenedStream(descriptor: try TCPConnector.connect(host: host, port: port))
        }
    }
}

/// gpsd, asked to relay the receiver's NMEA (`?WATCH={"enable":true,"nmea":true}`), so
/// gpsd can share the receiver with chrony while we keep all NMEA fields. gpsd's JSON
/// replies (VERSION, DEVICES, WATCH) contain no `$` sentence and the framer skips them.
public struct GpsdFixSource: FixSource {
    public let host: String
    public let port: Int
    public let configuration: FixSourceConfiguration

    /// The command that turns on NMEA pass-through.
    public static let watchCommand = #"?WATCH={"enable":true,"nmea":true}"# + "\n"

    public init(host: String, port: Int = GNSSSourceSpec.gpsdDefaultPort,
                configuration: FixSourceConfiguration = .init()) {
        self.host = host
        self.port = port
        self.configuration = configuration
    }

    public var description: String { GNSSSourceSpec.gpsd(host: host, port: port).description }

    public func fixes() -> AsyncThrowingStream<GNSSFix, any Error> {
        let host = host
        let port = port
        return ByteStreamPump.start(name: description, configuration: configuration) {
            let descriptor = try TCPConnector.connect(host: host, port: port)
            do {
                try TCPConnector.writeAll(descriptor, Array(Self.watchCommand.utf8))
            } catch {
                close(descriptor)
                throw error
            }
            return OpenedStream(descriptor: descriptor)
        }
    }
}

/// Blocking TCP connect with a timeout, over every address the host resolves to.
enum TCPConnector {
    static func connect(host: String, port: Int, timeoutMilliseconds: Int32 = 5000) throws -> Int32 {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            throw FixSourceError("cannot resolve \(host): \(String(cString: gai_strerror(status)))")
        }
        defer { freeaddrinfo(list) }
        var lastError = "no address"
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            entry = current.pointee.ai_next
            let descriptor = socket(current.pointee.ai_family, current.pointee.ai_socktype, current.pointee.ai_protocol)
            if descriptor < 0 {
                lastError = String(cString: strerror(errno))
                continue
            }
            let flags = fcntl(descriptor, F_GETFL)
            _ = fcntl(descriptor, F_SETFL, flags | O_NONBLOCK)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
            if Glibc.connect(descriptor, current.pointee.ai_addr, current.pointee.ai_addrlen) == 0 {
                return descriptor
            }
            if errno == EINPROGRESS {
                var waiter = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                if poll(&waiter, 1, timeoutMilliseconds) == 1 {
                    var error: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    getsockopt(descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
                    if error == 0 { return descriptor }
                    lastError = String(cString: strerror(error))
                } else {
                    lastError = "timed out"
                }
            } else {
                lastError = String(cString: strerror(errno))
            }
            close(descriptor)
        }
        throw FixSourceError("cannot connect to \(host):\(port): \(lastError)")
    }

    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        var attempts = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                write(descriptor, $0.baseAddress! + offset, bytes.count - offset)
            }
            if written > 0 {
                offset += written
            } else if errno == EAGAIN || errno == EINTR, attempts < 100 {
                attempts += 1
                usleep(10_000)
            } else {
                throw FixSourceError.posix("write failed")
            }
        }
    }
}
