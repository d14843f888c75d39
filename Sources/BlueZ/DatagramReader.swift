import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Reads datagrams from an `AcquireNotify` socket on a dedicated thread, so a 100 Hz stream
/// never waits on the cooperative pool. Each datagram is one notification. The reader owns
/// the descriptor and closes it when it stops (end of file, hang-up, error or ``stop()``).
final class DatagramReader: @unchecked Sendable {
    private let fd: Int32
    private let lock = NSLock()
    private var stopRequested = false
    private let continuation: AsyncStream<GattNotification>.Continuation

    /// Takes ownership of `fd` and starts reading into `continuation`.
    init(owning fd: Int32, continuation: AsyncStream<GattNotification>.Continuation) {
        self.fd = fd
        self.continuation = continuation
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
        let thread = Thread { [self] in run() }
        thread.name = "mwgate-notify-fd"
        thread.start()
    }

    /// Asks the thread to stop; it closes the descriptor and finishes the stream.
    func stop() {
        lock.lock()
        stopRequested = true
        lock.unlock()
    }

    private var shouldStop: Bool {
        lock.lock()
        defer { lock.unlock() }
        return stopRequested
    }

    private func run() {
        defer {
            close(fd)
            continuation.finish()
        }
        var buffer = [UInt8](repeating: 0, count: 512)
        while !shouldStop {
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            // A short poll timeout bounds how long stop() takes without a wake-up pipe.
            let ready = poll(&descriptor, 1, 100)
            if ready < 0 {
                if errno == EINTR { continue }
                return
            }
            if ready == 0 { continue }
            if descriptor.revents & Int16(POLLIN) != 0 {
                while true {
                    let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if count > 0 {
                        let received = ContinuousClock.now
                        continuation.yield(GattNotification(bytes: Array(buffer[0..<count]), receivedAt: received,
                                                            wallClock: Date()))
                        continue
                    }
                    if count == 0 { return }  // peer closed: the link is gone
                    if errno == EINTR { continue }
                    if errno == EAGAIN || errno == EWOULDBLOCK { break }
                    return
                }
            } else if descriptor.revents & Int16(POLLHUP | POLLERR | POLLNVAL) != 0 {
                return
            }
        }
    }
}
