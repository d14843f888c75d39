import Foundation
#if canImport(Glibc)
import Glibc
#endif
@testable import GNSS

/// How long a source test waits for what its peer sends before it fails: a bound for a
/// hang, never a measure of speed. Alone a test's fixes come within a second, but `make test`
/// runs this suite beside ~550 others on two cores, and there a task waits its turn on the
/// cooperative pool for as long as the pass's opening burst lasts: trivial parser tests of the
/// same pass took 29.5 s on our machine and 42 s in CI, so a 30 s bound failed in CI (the reader
/// task and the polling loop had not had their turns) while the source itself was fine.
let sourceDeadline = 120.0

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
    func serveOnce(_ bytes: [UInt8], holdOpenFor hold: Duration = .zero) -> [UInt8] {
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
        if hold > .zero { usleep(UInt32(hold.components.seconds * 1_000_000 + hold.components.attoseconds / 1_000_000_000_000)) }
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

/// A child process in its own process group, started with posix_spawn (Foundation's
/// Process.waitUntilExit spins when called from a concurrency thread on Linux).
final class SpawnedProcessGroup: @unchecked Sendable {
    let pid: pid_t

    init(_ executable: String, _ arguments: [String]) throws {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
        posix_spawnattr_setpgroup(&attributes, 0)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, &attributes, argv, environ)
        guard status == 0 else { throw FixSourceError("posix_spawn \(executable): \(String(cString: strerror(status)))") }
        pid = child
    }

    /// Kills the whole group (gpsfake and the gpsd it started) and reaps the leader.
    func killGroup() {
        kill(-pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}

/// Collects fixes until none arrived for `quiet` after the first one, or `overall` passed.
func collectUntilQuiet(
    _ stream: AsyncThrowingStream<GNSSFix, any Error>, quiet: Duration, overall: Duration
) async -> [GNSSFix] {
    let box = LockedBox<[GNSSFix]>([])
    let reader = Task {
        for try await fix in stream { box.set(box.get() + [fix]) }
    }
    let clock = ContinuousClock()
    let deadline = clock.now + overall
    var lastCount = 0
    var lastChange = clock.now
    while clock.now < deadline {
        try? await Task.sleep(for: .milliseconds(100))
        let count = box.get().count
        if count != lastCount {
            lastCount = count
            lastChange = clock.now
        } else if count > 0 && clock.now - lastChange >= quiet {
            break
        }
    }
    reader.cancel()
    return box.get()
}
