import Foundation
import Synchronization

/// The least CPU our process can spend on one request and its answer when the answer is
/// read by an I/O thread and handed to a task on Swift's cooperative pool: the shape of
/// every `DBusConnection.call` from an ordinary task, with no D-Bus in it. A task writes one
/// byte to a Unix socket whose other end is `/bin/cat` (a separate process, as dbus-daemon
/// is), an I/O thread blocked in `poll` reads the echo and resumes the task. For contrast,
/// the same exchange on one thread that writes and then blocks in `poll` itself (the shape
/// of python3-dbus's blocking call, and of a task on the connection's own executor). CPU is
/// this process's (getrusage), so the pool threads and the I/O thread are all counted.
enum HandoffFloorBenchmark {
    static func run(_ arguments: [String]) async {
        var count = 20_000
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--count": count = iterator.next().flatMap(Int.init) ?? 0
            default: fail("usage: mwbench handofffloor [--count N]")
            }
        }
        guard count > 0 else { fail("mwbench handofffloor: --count must be positive") }
        let peer = EchoPeer()
        defer { peer.stop() }

        let reader = PoolHandoff(fd: peer.fd)
        for _ in 0..<200 { await reader.roundTrip() }
        var start = ProcessCPU.ownSeconds()
        for _ in 0..<count { await reader.roundTrip() }
        let pool = (ProcessCPU.ownSeconds() - start) / Double(count) * 1e6
        reader.stop()

        start = ProcessCPU.ownSeconds()
        for _ in 0..<count { peer.blockingRoundTrip() }
        let thread = (ProcessCPU.ownSeconds() - start) / Double(count) * 1e6
        print("handoff_pool_us=\(String(format: "%.2f", pool))")
        print("handoff_thread_us=\(String(format: "%.2f", thread))")
    }

    /// `/bin/cat` on the far end of a socket pair: it writes back every byte it reads.
    final class EchoPeer: Sendable {
        let fd: Int32
        private let pid: pid_t

        init() {
            var pair: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else { fail("socketpair: errno \(errno)") }
            var actions = posix_spawn_file_actions_t()
            posix_spawn_file_actions_init(&actions)
            posix_spawn_file_actions_adddup2(&actions, pair[1], 0)
            posix_spawn_file_actions_adddup2(&actions, pair[1], 1)
            posix_spawn_file_actions_addclose(&actions, pair[0])
            var child: pid_t = 0
            let argv: [UnsafeMutablePointer<CChar>?] = [strdup("cat"), nil]
            let spawned = posix_spawn(&child, "/bin/cat", &actions, nil, argv, environ)
            posix_spawn_file_actions_destroy(&actions)
            argv.forEach { free($0) }
            guard spawned == 0 else { fail("posix_spawn /bin/cat: error \(spawned)") }
            close(pair[1])
            fd = pair[0]
            pid = child
        }

        func blockingRoundTrip() {
            var byte: UInt8 = 1
            guard write(fd, &byte, 1) == 1 else { fail("write: errno \(errno)") }
            var interest = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            while poll(&interest, 1, 5_000) < 0 && errno == EINTR {}
            guard read(fd, &byte, 1) == 1 else { fail("read: errno \(errno)") }
        }

        func stop() {
            close(fd)
            var status: Int32 = 0
            waitpid(pid, &status, 0)
        }
    }

    /// An I/O thread that reads echoes and resumes the one task waiting for each.
    final class PoolHandoff: @unchecked Sendable {
        private let fd: Int32
        private let waiting = Mutex<UnsafeContinuation<Void, Never>?>(nil)
        private let stopPipe: [Int32]

        init(fd: Int32) {
            self.fd = fd
            var pipeFDs: [Int32] = [0, 0]
            guard pipe(&pipeFDs) == 0 else { fail("pipe: errno \(errno)") }
            stopPipe = pipeFDs
            let thread = Thread { [self] in loop() }
            thread.start()
        }

        func roundTrip() async {
            await withUnsafeContinuation { (continuation: UnsafeContinuation<Void, Never>) in
                waiting.withLock { $0 = continuation }
                var byte: UInt8 = 1
                guard write(fd, &byte, 1) == 1 else { fail("write: errno \(errno)") }
            }
        }

        func stop() {
            var byte: UInt8 = 0
            _ = write(stopPipe[1], &byte, 1)
        }

        private func loop() {
            var interest = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0),
                            pollfd(fd: stopPipe[0], events: Int16(POLLIN), revents: 0)]
            var buffer = [UInt8](repeating: 0, count: 64)
            while true {
                guard poll(&interest, 2, -1) >= 0 || errno == EINTR else { fail("poll: errno \(errno)") }
                if interest[1].revents != 0 { return }
                guard interest[0].revents != 0 else { continue }
                let got = read(fd, &buffer, buffer.count)
                guard got > 0 else { fail("read: errno \(errno)") }
                for _ in 0..<got { waiting.withLock { $0.take() }?.resume() }
            }
        }
    }
}
