#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failed socket call, with the call's name and errno.
public struct SocketError: Error, Equatable, CustomStringConvertible {
    /// The libc call that failed.
    public let call: String
    /// errno at the time of failure.
    public let errno: Int32

    init(_ call: String, _ code: Int32 = Glibc.errno) {
        self.call = call
        self.errno = code
    }

    public var description: String { "\(call): \(String(cString: strerror(errno)))" }
}

/// An `AF_UNIX` address, either a filesystem path or an abstract name (`@name`, as systemd
/// writes it). Abstract names put a NUL where the `@` was and are passed with an exact length
/// and no trailing NUL, because a trailing NUL would be part of the name.
struct UnixAddress {
    private(set) var storage = sockaddr_un()
    private(set) var length: socklen_t = 0

    init?(_ text: String) {
        var bytes = Array(text.utf8)
        guard !bytes.isEmpty, !bytes.contains(0) || bytes.first == UInt8(ascii: "@") else { return nil }
        let abstract = bytes[0] == UInt8(ascii: "@")
        if abstract { bytes[0] = 0 }
        let capacity = MemoryLayout.size(ofValue: storage.sun_path)
        // A path needs room for its terminating NUL; an abstract name does not have one.
        guard bytes.count <= (abstract ? capacity : capacity - 1) else { return nil }
        storage.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &storage.sun_path) { raw in
            raw.copyBytes(from: bytes)
        }
        let pathOffset = MemoryLayout<sockaddr_un>.offset(of: \.sun_path) ?? 2
        length = socklen_t(pathOffset + bytes.count + (abstract ? 0 : 1))
    }

    func withSockaddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> R) -> R {
        withUnsafeBytes(of: storage) { raw in
            body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), length)
        }
    }
}

/// An unbound `AF_UNIX`/`SOCK_DGRAM` sending socket, close-on-exec.
final class UnixDatagramSender: @unchecked Sendable {
    // The descriptor is written once at init and closed once in deinit; sendto on one fd from
    // several threads is safe in the kernel, so no lock is needed.
    let fd: Int32
    /// `MSG_DONTWAIT` on every send, or none.
    private let sendFlags: Int32

    /// A sender whose sends wait while the receiver's queue is full, or, with `waits` false,
    /// fail at once with `EAGAIN` instead.
    init(waits: Bool = true) throws(SocketError) {
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw SocketError("socket") }
        self.fd = fd
        sendFlags = Int32(MSG_NOSIGNAL) | (waits ? 0 : Int32(MSG_DONTWAIT))
    }

    deinit { close(fd) }

    /// Asks the kernel for a larger send buffer (journald entries can be big); best effort.
    func raiseSendBuffer(to bytes: Int32) {
        var value = bytes
        _ = setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Sends one datagram; returns errno on failure (EMSGSIZE is the caller's business).
    func send(_ payload: [UInt8], to address: UnixAddress) -> Int32? {
        let sent = payload.withUnsafeBytes { bytes in
            address.withSockaddr { addr, len in
                sendto(fd, bytes.baseAddress, bytes.count, sendFlags, addr, len)
            }
        }
        return sent < 0 ? errno : nil
    }

    /// Sends an empty datagram carrying one file descriptor (SCM_RIGHTS).
    func send(descriptor: Int32, to address: UnixAddress) -> Int32? {
        let controlLength = Int(cmsgSpace(MemoryLayout<Int32>.size))
        var control = [UInt8](repeating: 0, count: controlLength)
        let result: Int = control.withUnsafeMutableBytes { controlBytes in
            let header = controlBytes.baseAddress!.assumingMemoryBound(to: cmsghdr.self)
            header.pointee.cmsg_level = SOL_SOCKET
            header.pointee.cmsg_type = Int32(SCM_RIGHTS)
            header.pointee.cmsg_len = Int(cmsgLen(MemoryLayout<Int32>.size))
            let dataOffset = Int(cmsgLen(0))
            controlBytes.storeBytes(of: descriptor, toByteOffset: dataOffset, as: Int32.self)
            return address.withSockaddr { addr, len in
                var message = msghdr()
                message.msg_name = UnsafeMutableRawPointer(mutating: addr)
                message.msg_namelen = len
                message.msg_iov = nil
                message.msg_iovlen = 0
                message.msg_control = controlBytes.baseAddress
                message.msg_controllen = controlBytes.count
                return sendmsg(fd, &message, sendFlags)
            }
        }
        return result < 0 ? errno : nil
    }
}

private func cmsgAlign(_ length: Int) -> Int {
    let alignment = MemoryLayout<Int>.size
    return (length + alignment - 1) & ~(alignment - 1)
}

func cmsgLen(_ dataLength: Int) -> Int { cmsgAlign(MemoryLayout<cmsghdr>.size) + dataLength }
func cmsgSpace(_ dataLength: Int) -> Int { cmsgAlign(MemoryLayout<cmsghdr>.size) + cmsgAlign(dataLength) }
