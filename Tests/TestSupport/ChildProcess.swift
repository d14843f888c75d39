import Foundation

/// A child process started with `posix_spawn` and reaped with `waitpid`.
///
/// Foundation's `Process.waitUntilExit()` spins a CPU and its `isRunning` lags when used
/// off the main thread, so test fixtures manage their children directly.
public final class ChildProcess: @unchecked Sendable {
    public let pid: pid_t
    /// Read end of the child's standard output.
    public let output: FileHandle
    /// Read end of the child's standard error.
    public let errors: FileHandle
    private let lock = NSLock()
    private var exitStatus: Int32?
    private var waitStatus: Int32?

    public init(_ executable: String, _ arguments: [String], environment: [String: String]) throws {
        let (child, outRead, errRead) = try Spawning.exclusively {
            try Self.spawn(executable, arguments, environment: environment)
        }
        pid = child
        output = FileHandle(fileDescriptor: outRead, closeOnDealloc: true)
        errors = FileHandle(fileDescriptor: errRead, closeOnDealloc: true)
    }

    /// Starts the child with its standard output and error on new pipes and nothing else open
    /// but them; the read ends of the pipes.
    private static func spawn(_ executable: String, _ arguments: [String],
                              environment: [String: String]) throws -> (pid_t, Int32, Int32) {
        var outPipe: [Int32] = [0, 0]
        var errPipe: [Int32] = [0, 0]
        // Close-on-exec as well, for children Foundation starts: dup2 onto 1 and 2 in the
        // spawned child clears the flag where it is wanted. (Glibc's Swift module does not
        // import pipe2; the spawn lock covers the moment between pipe and fcntl.)
        guard pipe(&outPipe) == 0, pipe(&errPipe) == 0 else { throw TestBusError(message: "pipe failed") }
        for fd in outPipe + errPipe { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], 1)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], 2)
        Spawning.addCloseFromThree(&actions)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        // Test threads (libdispatch workers) block signals; the child must not inherit that,
        // or SIGTERM would never stop it.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let status = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        close(outPipe[1])
        close(errPipe[1])
        guard status == 0 else {
            close(outPipe[0])
            close(errPipe[0])
            throw TestBusError(message: "cannot start \(executable): error \(status)")
        }
        return (child, outPipe[0], errPipe[0])
    }

    /// Reads standard output up to the first newline (or end of file).
    public func readLine() -> String {
        var bytes: [UInt8] = []
        var byte: UInt8 = 0
        while read(output.fileDescriptor, &byte, 1) == 1 {
            if byte == UInt8(ascii: "\n") { break }
            bytes.append(byte)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Waits for exit and returns the exit status (128+signal when killed).
    @discardableResult
    public func wait() -> Int32 {
        lock.lock()
        defer { lock.unlock() }
        if let exitStatus { return exitStatus }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        exitStatus = code
        waitStatus = status
        return code
    }

    /// How the child ended, for a failure message: "exit status N", or the signal that killed
    /// it (and whether it dumped core), which `wait()`'s 128+signal does not tell apart from an
    /// exit status; "still running" before it was reaped.
    public var exitDescription: String {
        lock.lock()
        defer { lock.unlock() }
        guard let status = waitStatus else { return "still running" }
        let signal = status & 0x7f
        guard signal != 0 else { return "exit status \((status >> 8) & 0xff)" }
        let name = strsignal(signal).map { String(cString: $0) } ?? "unknown"
        return "killed by signal \(signal) (\(name))" + ((status & 0x80) != 0 ? ", core dumped" : "")
    }

    /// Sends `signal` (if still running) and reaps the child.
    public func terminate(_ signal: Int32 = SIGTERM) {
        lock.lock()
        let running = exitStatus == nil
        lock.unlock()
        if running { kill(pid, signal) }
        wait()
    }
}
