import CDBus
import Foundation
import Synchronization
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
    /// See ``setCoalescing(_:)``; 0 reads as soon as data arrives.
    private let coalescing = Atomic<Int64>(0)
    private var coalescingNanoseconds: Int64 { coalescing.load(ordering: .relaxed) }
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
        self.coalescing.store(max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000), ordering: .relaxed)
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
        payloads.deallocate()
        controls.deallocate()
        vectors.deallocate()
        headers.deallocate()
    }

    /// Changes the rest after each read (any thread): zero while a handshake's replies should
    /// be read at once, the streaming interval after it. Takes effect from the next read.
    func setCoalescing(_ interval: Duration) {
        let (seconds, attoseconds) = interval.components
        coalescing.store(max(0, seconds * 1_000_000_000 + attoseconds / 1_000_000_000), ordering: .relaxed)
    }

    /// Whether ``stop()`` was asked for, whether the descriptor is closed, and who waits for
    /// that: one lock for the reader's whole lifecycle.
    private struct Lifecycle {
        var stopRequested = false
        var closed = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }
    private let lifecycle = Mutex(Lifecycle())

    /// Returns once the reader has closed its descriptor (after ``stop()``, or when the
    /// socket ended). BlueZ frees an acquired notification when it sees that hang-up.
    func closed() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let alreadyClosed = lifecycle.withLock { state -> Bool in
                if state.closed { return true }
                state.waiters.append(continuation)
                return false
            }
            if alreadyClosed { continuation.resume() }
        }
    }

    /// Asks the thread to stop; it closes the descriptor and finishes. Returns at once.
    func stop() {
        lifecycle.withLock { $0.stopRequested = true }
        if wakeWrite >= 0 {
            var byte: UInt8 = 1
            _ = write(wakeWrite, &byte, 1)
        }
    }

    private var shouldStop: Bool { lifecycle.withLock { $0.stopRequested } }

    private func run() {
        defer {
            // Asked to stop (the link is closing): what the socket still holds was delivered
            // by the board before the link went and is handed on, not dropped.
            if shouldStop { _ = drain() }
            close(fd)
            let waiters = lifecycle.withLock { state in
                state.closed = true
                defer { state.waiters = [] }
                return state.waiters
            }
            waiters.forEach { $0.resume() }
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
                guard drain().open else { return }
                // A steady stream: after each rest, read straight away (no poll() first) and
                // rest again, until a read finds the socket empty; then wait in poll().
                while coalescingNanoseconds > 0 {
                    pause()
                    if shouldStop { return }
                    let (open, count) = drain()
                    guard open else { return }
                    if count == 0 { break }
                }
            } else if events & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 {
                return
            }
        }
    }

    /// Datagrams read per system call, and the room for each.
    private static let slots = 32
    private static let slotBytes = 512
    /// Room for one SCM_TIMESTAMP control message (a timeval) per slot, 8-byte aligned.
    private static let controlBytes = 64
    // Receive buffers, reused for every read (reader thread only).
    private let payloads = UnsafeMutableRawPointer.allocate(byteCount: DatagramReader.slots * DatagramReader.slotBytes, alignment: 8)
    private let controls = UnsafeMutableRawPointer.allocate(byteCount: DatagramReader.slots * DatagramReader.controlBytes, alignment: 8)
    private let vectors = UnsafeMutablePointer<iovec>.allocate(capacity: DatagramReader.slots)
    private let headers = UnsafeMutablePointer<cdbus_mmsghdr>.allocate(capacity: DatagramReader.slots)

    /// Reads every waiting datagram (up to ``slots`` per system call, `recvmmsg`) and
    /// delivers them as one batch; `open` is false once the socket is closed or failed (what
    /// was read before is still delivered), `count` is the number of notifications read.
    private func drain() -> (open: Bool, count: Int) {
        var batch: [GattNotification] = []
        var open = true
        // One clock reading per batch: kernel stamps are wall-clock, so monotonic times are
        // derived from their age relative to this reading.
        let now = ContinuousClock.now
        let wallNow = Date()
        reading: while true {
            for slot in 0..<Self.slots {
                vectors[slot] = iovec(iov_base: payloads + slot * Self.slotBytes, iov_len: Self.slotBytes)
                var header = msghdr()
                header.msg_iov = vectors + slot
                header.msg_iovlen = 1
                header.msg_control = stamped ? controls + slot * Self.controlBytes : nil
                header.msg_controllen = stamped ? Self.controlBytes : 0
                headers[slot] = cdbus_mmsghdr(msg_hdr: header, msg_len: 0)
            }
            let received = cdbus_recvmmsg(fd, headers, UInt32(Self.slots), Int32(MSG_DONTWAIT))
            if received < 0 {
                if errno == EINTR { continue }
                if errno != EAGAIN && errno != EWOULDBLOCK { open = false }  // a hard error: the link is gone
                break
            }
            if batch.capacity == 0 { batch.reserveCapacity(Int(received)) }
            for slot in 0..<Int(received) {
                let count = Int(headers[slot].msg_len)
                // A zero-length datagram is the peer's end of file: the link is gone.
                guard count > 0 else {
                    open = false
                    break reading
                }
                let bytes = [UInt8](UnsafeRawBufferPointer(start: payloads + slot * Self.slotBytes, count: count))
                var notification = GattNotification(bytes: bytes, receivedAt: now, wallClock: wallNow)
                if stamped, let stamp = Self.timestamp(in: &headers[slot].msg_hdr) {
                    let arrived = Date(timeIntervalSince1970: Double(stamp.tv_sec) + Double(stamp.tv_usec) / 1e6)
                    let age = max(0, wallNow.timeIntervalSince(arrived))
                    notification.wallClock = arrived
                    notification.receivedAt = now - .microseconds(Int64(age * 1e6))
                }
                batch.append(notification)
            }
            // Fewer than asked for: the socket is empty for now.
            if received < Self.slots { break }
        }
        if !batch.isEmpty { deliver(batch) }
        return (open, batch.count)
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
