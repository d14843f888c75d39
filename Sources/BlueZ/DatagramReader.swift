import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads datagrams from an `AcquireNotify` socket on a dedicated thread, so a fast stream
/// never waits on the cooperative pool. Each datagram is one notification. The reader owns
/// the descriptor and closes it when it stops (end of file, hang-up, error or ``stop()``).
///
/// CPU per notification is dominated by wake-ups and the async hops after them, not by
/// reading, so the reader drains every datagram waiting per wake-up and hands them on as one
/// batch. With a `coalescing` interval it then sleeps that long before looking again, so at
/// 267 notifications/s and 100 ms about 27 arrive per wake-up. Receive times stay exact:
/// the kernel stamps each datagram on arrival (`SO_TIMESTAMP`).
final class DatagramReader: @unchecked Sendable {
    typealias Deliver = @Sendable ([GattNotification]) -> Void
    typealias Finish = @Sendable () -> Void

    private let fd: Int32
    /// Read end / write end of the pipe that wakes the thread for ``stop()``.
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let coalescingNanoseconds: Int64
    private let deliver: Deliver
    private let finish: Finish
    private let stamped: Bool
    /// `SO_TIMESTAMP` (= `SCM_TIMESTAMP`, microsecond `timeval`); glibc's macro does not
    /// import into Swift. 29 on every Linux architecture a gateway runs on.
    private static let soTimestamp: Int32 = 29

    /// Takes ownership of `fd` and starts reading; `deliver` gets each batch in arrival
    /// order on the reader's thread, `finish` is called once when reading ends.
    init(owning fd: Int32, coalescing: Duration, deliver: @escaping Deliver, finish: @escaping Finish) {
        self.fd = fd
        self.deliver = deliver
        self.finish = finish
        let (seconds, attoseconds) = coalescing.components
        coalescingNanoseconds = max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        var on: Int32 = 1
        stamped = setsockopt(fd, SOL_SOCKET, Self.soTimestamp, &on, socklen_t(MemoryLayout<Int32>.size)) == 0
        var ends: [Int32] = [-1, -1]
        if pipe(&ends) == 0 {
            for end in ends {
                _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
            }
            wakeRead = ends[0]
            wakeWrite = ends[1]
        } else {
            // Without a pipe stop() still works: the thread then looks every 100 ms.
            wakeRead = -1
            wakeWrite = -1
        }
        let thread = Thread { [self] in run() }
        thread.name = "mwgate-notify-fd"
        thread.start()
    }

    deinit {
        if wakeRead >= 0 { close(wakeRead) }
        if wakeWrite >= 0 { close(wakeWrite) }
    }

    private let stopLock = NSLock()
    private var stopRequested = false

    /// Asks the thread to stop; it closes the descriptor and finishes. Returns at once.
    func stop() {
        stopLock.lock()
        stopRequested = true
        stopLock.unlock()
        if wakeWrite >= 0 {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    private var shouldStop: Bool {
        stopLock.lock()
        defer { stopLock.unlock() }
        return stopRequested
    }

    private func run() {
        defer {
            close(fd)
            finish()
        }
        let idleTimeout: Int32 = wakeRead >= 0 ? -1 : 100
        while !shouldStop {
            var descriptors = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            let ready = poll(&descriptors, nfds_t(wakeRead >= 0 ? 2 : 1), idleTimeout)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if ready == 0 || shouldStop { continue }
            let events = descriptors[0].revents
            if events & Int16(POLLIN) != 0 {
                guard drain() else { return }
                if coalescingNanoseconds > 0 { pause() }
            } else if events & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 {
                return
            }
        }
    }

    /// Reads every waiting datagram and delivers them as one batch; false once the socket is
    /// closed or failed (what was read before is still delivered).
    private func drain() -> Bool {
        var batch: [GattNotification] = []
        var open = true
        var buffer = [UInt8](repeating: 0, count: 512)
        // Room for one SCM_TIMESTAMP control message (a timeval), aligned for cmsghdr.
        var control = [UInt64](repeating: 0, count: 8)
        var stamps: [timeval?] = []
        while true {
            var stamp: timeval?
            let count = buffer.withUnsafeMutableBytes { data in
                control.withUnsafeMutableBytes { controlBytes in
                    var vector = iovec(iov_base: data.baseAddress, iov_len: data.count)
                    return withUnsafeMutablePointer(to: &vector) { vectorPointer in
                        var header = msghdr()
                        header.msg_iov = vectorPointer
                        header.msg_iovlen = 1
                        header.msg_control = stamped ? controlBytes.baseAddress : nil
                        header.msg_controllen = stamped ? controlBytes.count : 0
                        let count = recvmsg(fd, &header, 0)
                        if count > 0, stamped { stamp = Self.timestamp(in: &header) }
                        return count
                    }
                }
            }
            if count > 0 {
                batch.append(GattNotification(bytes: Array(buffer[0..<count]), receivedAt: .now, wallClock: Date()))
                stamps.append(stamp)
                continue
            }
            if count < 0, errno == EINTR { continue }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK { break }
            open = false  // 0: the peer closed, the link is gone; or a hard error
            break
        }
        guard !batch.isEmpty else { return open }
        // Kernel stamps are wall-clock; move the monotonic times back by the same age.
        let now = ContinuousClock.now
        let wallNow = Date()
        for index in batch.indices {
            guard let stamp = stamps[index] else { continue }
            let arrived = Date(timeIntervalSince1970: Double(stamp.tv_sec) + Double(stamp.tv_usec) / 1e6)
            let age = max(0, wallNow.timeIntervalSince(arrived))
            batch[index].wallClock = arrived
            batch[index].receivedAt = now - .microseconds(Int64(age * 1e6))
        }
        deliver(batch)
        return open
    }

    private static func timestamp(in header: inout msghdr) -> timeval? {
        guard header.msg_controllen >= MemoryLayout<cmsghdr>.size, let base = header.msg_control else { return nil }
        let message = base.assumingMemoryBound(to: cmsghdr.self).pointee
        guard message.cmsg_level == SOL_SOCKET, message.cmsg_type == Self.soTimestamp,
              message.cmsg_len >= MemoryLayout<cmsghdr>.size + MemoryLayout<timeval>.size
        else { return nil }
        return base.advanced(by: MemoryLayout<cmsghdr>.size).loadUnaligned(as: timeval.self)
    }

    /// Sleeps the coalescing interval unless ``stop()`` wakes it.
    private func pause() {
        let milliseconds = Int32(clamping: (coalescingNanoseconds + 999_999) / 1_000_000)
        if wakeRead >= 0 {
            var wake = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
            _ = poll(&wake, 1, milliseconds)
        } else {
            usleep(UInt32(clamping: Int64(milliseconds) * 1000))
        }
    }
}
