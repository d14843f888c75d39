import Foundation

/// The one way tests start child processes, so that no child inherits a descriptor it was not
/// given.
///
/// Swift Testing runs suites in parallel, so children start in the same moment on different
/// threads. Foundation's `Process` learns of its child's exit through a socket pair whose child
/// end it leaves open for the child (not close-on-exec); a second child spawned in the same
/// instant inherits that end too, and the first child's exit then goes unnoticed until the second
/// exits. A long-lived second child (a postmaster, a dbus-daemon, mwgated) made whole test passes
/// sit idle in CI. Two rules end that:
/// - every `posix_spawn` here closes every descriptor from 3 up in the child
///   (`addCloseFromThree`), so our own children never hold another child's socket or pipe;
/// - `Process.run()` (which makes its socket pair and closes the rest itself) and our spawns
///   take one lock, so no descriptor is created between Foundation's list of what to close and
///   its spawn.
public enum Spawning {
    private static let lock = NSLock()

    /// Runs `body` (one spawn, with the descriptors it creates for the child) while no other
    /// test starts a child.
    public static func exclusively<Result>(_ body: () throws -> Result) rethrows -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// Starts `process` through Foundation while no other test starts a child.
    public static func run(_ process: Process) throws {
        try exclusively { try process.run() }
    }

    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc 2.34's `posix_spawn_file_actions_addclosefrom_np`, which the Glibc module does not
    /// import (it needs _GNU_SOURCE); looked up once.
    private static let closeFrom: CloseFrom? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            return nil
        }
        return unsafeBitCast(symbol, to: CloseFrom.self)
    }()

    /// Adds "close every descriptor from 3 up" to `actions`, after the dup2s that set up 0-2.
    /// Without glibc's call (older than 2.34) it closes each descriptor open now, which the lock
    /// makes complete for descriptors other spawns create.
    public static func addCloseFromThree(_ actions: inout posix_spawn_file_actions_t) {
        if let closeFrom {
            _ = closeFrom(&actions, 3)
            return
        }
        let open = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        for fd in open.compactMap({ Int32($0) }) where fd > 2 {
            posix_spawn_file_actions_addclose(&actions, fd)
        }
    }
}
