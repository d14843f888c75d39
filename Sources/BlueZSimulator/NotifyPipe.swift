#if canImport(Glibc)
import Glibc
#endif
import DBus

/// The AcquireNotify channel: a `SOCK_SEQPACKET` socketpair like BlueZ's. One end goes to the
/// client in the reply; the simulator writes one datagram per notification into the other and
/// closes it on disconnect, which the client sees as HUP.
final class NotifyPipe {
    /// The end handed to the client (libdbus duplicates it when the reply is built). Taken
    /// once by ``takeClientEnd()``: the simulator must not keep a copy, or a client that dies
    /// (kill -9) would never show as HUP and the notify stayed acquired for good.
    private var clientEnd: DBusFileDescriptor?
    private var localFD: Int32

    init() throws(DBusError) {
        var fds: [Int32] = [-1, -1]
        let kind = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, kind, 0, &fds) == 0 else {
            throw DBusError(name: "org.bluez.Error.Failed", message: "socketpair failed: errno \(errno)")
        }
        localFD = fds[0]
        clientEnd = DBusFileDescriptor(owning: fds[1])
    }

    deinit { close() }

    /// The client's end, for the AcquireNotify reply; released (closed here) once the reply
    /// holds its duplicate.
    func takeClientEnd() throws(DBusError) -> DBusFileDescriptor {
        guard let end = clientEnd else {
            throw DBusError(name: "org.bluez.Error.Failed", message: "notify channel already handed out")
        }
        clientEnd = nil
        return end
    }

    /// Outcome of one datagram.
    enum SendResult { case sent, full, closed }

    /// Writes one notification datagram without blocking.
    func send(_ bytes: [UInt8]) -> SendResult {
        guard localFD >= 0 else { return .closed }
        let written = bytes.withUnsafeBytes { Glibc.send(localFD, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        if written >= 0 { return .sent }
        return errno == EAGAIN || errno == EWOULDBLOCK ? .full : .closed
    }

    /// Whether the client has closed its end.
    var peerClosed: Bool {
        guard localFD >= 0 else { return true }
        var entry = pollfd(fd: localFD, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 0) > 0 else { return false }
        return entry.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0
    }

    /// Closes the simulator's end (the client sees HUP).
    func close() {
        guard localFD >= 0 else { return }
        _ = Glibc.close(localFD)
        localFD = -1
    }
}
