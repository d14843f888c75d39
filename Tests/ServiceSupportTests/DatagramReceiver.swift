import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A test-bound AF_UNIX datagram socket standing in for systemd's notify socket or journald.
final class DatagramReceiver {
    let fd: Int32
    /// The address as a client would name it (path, or `@name` for abstract).
    let name: String
    private let path: String?

    /// Binds a socket at a fresh temporary path, or at a fresh abstract name.
    init(abstract: Bool = false) throws {
        let unique = "mwgate-test-\(getpid())-\(UUID().uuidString.prefix(8))"
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var bytes: [UInt8]
        if abstract {
            name = "@" + unique
            path = nil
            bytes = [0] + Array(unique.utf8)
        } else {
            let file = NSTemporaryDirectory() + unique + ".sock"
            name = file
            path = file
            bytes = Array(file.utf8) + [0]
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + bytes.count)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard result == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var big: Int32 = 8 << 20
        setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &big, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit {
        close(fd)
        if let path { unlink(path) }
    }

    /// One received datagram: its bytes and any file descriptor passed with SCM_RIGHTS.
    struct Datagram {
        var bytes: [UInt8]
        var descriptor: Int32?
    }

    /// Waits (up to 10 s) for one datagram; nil on timeout.
    func receive() -> Datagram? {
        var buffer = [UInt8](repeating: 0, count: 16 << 20)
        var control = [UInt8](repeating: 0, count: 64)
        let count: Int = buffer.withUnsafeMutableBytes { data in
            control.withUnsafeMutableBytes { controlBytes in
                var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                    var message = msghdr()
                    message.msg_iov = vectorPointer
                    message.msg_iovlen = 1
                    message.msg_control = controlBytes.baseAddress
                    message.msg_controllen = controlBytes.count
                    let received = recvmsg(fd, &message, 0)
                    controlLength = Int(message.msg_controllen)
                    return received
                }
            }
        }
        guard count >= 0 else { return nil }
        var descriptor: Int32?
        if controlLength >= MemoryLayout<cmsghdr>.size {
            control.withUnsafeBytes { raw in
                let header = raw.load(as: cmsghdr.self)
                if header.cmsg_level == SOL_SOCKET, header.cmsg_type == Int32(SCM_RIGHTS) {
                    descriptor = raw.load(fromByteOffset: MemoryLayout<cmsghdr>.size, as: Int32.self)
                }
            }
        }
        return Datagram(bytes: Array(buffer.prefix(count)), descriptor: descriptor)
    }

    private var controlLength = 0

    /// Whether a datagram is waiting (non-blocking check).
    func hasPending() -> Bool {
        var pollDescriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&pollDescriptor, 1, 200) > 0
    }
}

/// Reads everything from a descriptor positioned at 0 (a received memfd).
func readAll(descriptor: Int32) -> [UInt8] {
    lseek(descriptor, 0, SEEK_SET)
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count <= 0 { break }
        out.append(contentsOf: chunk.prefix(count))
    }
    return out
}
