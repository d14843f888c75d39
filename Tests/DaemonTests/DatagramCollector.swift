import Foundation
import Glibc

/// A Unix datagram socket bound by the test, standing in for systemd's notify socket or
/// journald's native socket: collects every datagram on a thread.
final class DatagramCollector: @unchecked Sendable {
    let path: String
    private let descriptor: Int32
    private let lock = NSLock()
    private var received: [[UInt8]] = []
    private var closed = false

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard descriptor >= 0 else { throw CollectorError("socket failed") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { throw CollectorError("path too long: \(path)") }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0 else { throw CollectorError("bind \(path) failed: errno \(errno)") }
        var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let thread = Thread { [self] in receiveLoop() }
        thread.start()
    }

    deinit { close() }

    private func receiveLoop() {
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            lock.lock()
            let stop = closed
            lock.unlock()
            if stop { return }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count > 0 {
                lock.lock()
                received.append(Array(buffer[0..<count]))
                lock.unlock()
            }
        }
    }

    func close() {
        lock.lock()
        defer { lock.unlock() }
        guard !closed else { return }
        closed = true
        unlink(path)
    }

    /// Every datagram so far, as text.
    var messages: [String] {
        lock.lock()
        defer { lock.unlock() }
        return received.map { String(decoding: $0, as: UTF8.self) }
    }

    /// Datagrams parsed as journald native entries (`KEY=VALUE` lines; the binary-safe
    /// `KEY\n<64-bit length>VALUE` form for multi-line values).
    var journalEntries: [[String: String]] {
        lock.lock()
        let datagrams = received
        lock.unlock()
        return datagrams.map(Self.parseJournal)
    }

    static func parseJournal(_ bytes: [UInt8]) -> [String: String] {
        var fields: [String: String] = [:]
        var index = 0
        while index < bytes.count {
            guard let end = bytes[index...].firstIndex(where: { $0 == UInt8(ascii: "\n") || $0 == UInt8(ascii: "=") }) else { break }
            let key = String(decoding: bytes[index..<end], as: UTF8.self)
            if bytes[end] == UInt8(ascii: "=") {
                let valueEnd = bytes[(end + 1)...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
                fields[key] = String(decoding: bytes[(end + 1)..<valueEnd], as: UTF8.self)
                index = valueEnd + 1
            } else {
                guard end + 9 <= bytes.count else { break }
                var length = 0
                for offset in 0..<8 { length |= Int(bytes[end + 1 + offset]) << (8 * offset) }
                let start = end + 9
                guard start + length <= bytes.count else { break }
                fields[key] = String(decoding: bytes[start..<(start + length)], as: UTF8.self)
                index = start + length + 1
            }
        }
        return fields
    }
}

struct CollectorError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
