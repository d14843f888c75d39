#if canImport(Glibc)
import Glibc
#endif

/// A program run to its end with its stdout and stderr collected (Foundation's `Process` is
/// full Foundation, which would link ICU's data into mwctl).
struct ChildRun {
    /// The exit status (128 + the signal's number when a signal ended it).
    var status: Int32
    var output: [UInt8]
    var errors: [UInt8]

    /// The program could not be started: `errno`, e.g. ENOENT for a missing file.
    struct StartError: Error {
        var code: Int32
    }

    /// Runs `path` with `arguments` (argv[0] is `path`), the environment inherited, stdin
    /// closed to it; returns once it has exited.
    static func run(_ path: String, _ arguments: [String]) throws(StartError) -> ChildRun {
        var outPipe: [Int32] = [-1, -1], errPipe: [Int32] = [-1, -1]
        guard pipe(&outPipe) == 0 else { throw StartError(code: errno) }
        guard pipe(&errPipe) == 0 else {
            let code = errno
            close(outPipe[0]); close(outPipe[1])
            throw StartError(code: code)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, outPipe[1], STDOUT_FILENO)
        posix_spawn_file_actions_adddup2(&actions, errPipe[1], STDERR_FILENO)
        for descriptor in outPipe + errPipe { posix_spawn_file_actions_addclose(&actions, descriptor) }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
        close(outPipe[1])
        close(errPipe[1])
        guard spawned == 0 else {
            close(outPipe[0]); close(errPipe[0])
            throw StartError(code: spawned)
        }
        let (output, errors) = readBoth(outPipe[0], errPipe[0])
        close(outPipe[0])
        close(errPipe[0])
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
        // WIFEXITED/WEXITSTATUS are macros Swift does not import: the low 7 bits are the
        // signal that ended the child (0: it exited), the next 8 its exit status.
        let signal = status & 0x7F
        return ChildRun(status: signal == 0 ? (status >> 8) & 0xFF : 128 + signal, output: output, errors: errors)
    }

    /// Reads two pipes to their ends together, so a child that fills one while the other is
    /// read cannot block.
    private static func readBoth(_ first: Int32, _ second: Int32) -> ([UInt8], [UInt8]) {
        var collected: [[UInt8]] = [[], []]
        var open = [first, second]
        var chunk = [UInt8](repeating: 0, count: 65_536)
        while open.contains(where: { $0 >= 0 }) {
            var fds = open.map { pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }
            if poll(&fds, nfds_t(fds.count), -1) < 0 {
                if errno == EINTR { continue }
                break
            }
            for index in fds.indices where fds[index].fd >= 0 && fds[index].revents != 0 {
                let count = chunk.withUnsafeMutableBytes { read(fds[index].fd, $0.baseAddress, $0.count) }
                if count > 0 {
                    collected[index].append(contentsOf: chunk[0..<count])
                } else if count == 0 || errno != EINTR {
                    open[index] = -1
                }
            }
        }
        return (collected[0], collected[1])
    }
}
