import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import GNSS

/// Collects up to `limit` fixes from a stream, giving up after `timeout`.
func collect(
    _ stream: AsyncThrowingStream<GNSSFix, any Error>, limit: Int, timeout: Duration
) async throws -> [GNSSFix] {
    try await withThrowingTaskGroup(of: [GNSSFix]?.self) { group in
        group.addTask {
            var fixes: [GNSSFix] = []
            for try await fix in stream {
                fixes.append(fix)
                if fixes.count >= limit { break }
            }
            return fixes
        }
        group.addTask {
            try? await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        while let result = try await group.next() {
            if let result { return result }
            throw FixSourceError("timed out after \(timeout)")
        }
        return []
    }
}

/// A loopback TCP listener for source tests.
final class LoopbackListener: @unchecked Sendable {
    let descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        self.descriptor = descriptor
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 4) == 0 else {
            close(descriptor)
            throw FixSourceError.posix("bind/listen")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    /// Accepts one client, returns what it sent first (if anything arrives within 0.5 s),
    /// writes `bytes` and closes.
    func serveOnce(_ bytes: [UInt8]) -> [UInt8] {
        let client = accept(descriptor, nil, nil)
        guard client >= 0 else { return [] }
        var received = [UInt8](repeating: 0, count: 256)
        var waiter = pollfd(fd: client, events: Int16(POLLIN), revents: 0)
        var count = 0
        if poll(&waiter, 1, 500) == 1 {
            count = max(0, received.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) })
        }
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { write(client, $0.baseAddress! + offset, bytes.count - offset) }
            if written <= 0 { break }
            offset += written
        }
        close(client)
        return Array(received[0..<count])
    }

    deinit { close(descriptor) }
}

/// A free TCP port on loopback (bound, read, released).
func freeLoopbackPort() throws -> Int {
    let listener = try LoopbackListener()
    return listener.port
}
