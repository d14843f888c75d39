import Foundation
import Glibc
import TestSupport

/// A program on a real pseudo-terminal, typed at with real keys: a tmux server of its own
/// (private socket, no user configuration) runs the command in a detached 120x40 pane;
/// `press` sends keys by tmux's names (Left, Home, C-a, BSpace, Enter, ...), which tmux turns
/// into the byte sequences a terminal sends; `screen` is what the pane shows.
final class TmuxTerminal: @unchecked Sendable {
    let directory: URL
    private let environment: [String: String]
    private var socket: String { directory.appendingPathComponent("tmux.sock").path }

    static let isAvailable = FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux")

    /// Starts the shell command `command` makes (given this terminal's scratch directory, for
    /// files the command writes) in a new pane; the pane stays after it exits.
    init(environment: [String: String], command: (String) throws -> String) async throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("mwctl-tty-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let shellCommand = try command(directory.path)
        let configuration = directory.appendingPathComponent("tmux.conf")
        try "set -g remain-on-exit on\nset -g history-limit 2000\n".write(to: configuration, atomically: true, encoding: .utf8)
        var environment = environment
        environment["TERM"] = environment["TERM"] ?? "xterm"
        self.environment = environment
        try await tmux(["-f", configuration.path, "new-session", "-d", "-s", "t", "-x", "120", "-y", "40", shellCommand])
    }

    /// Sends keys by tmux's names, each one key press (`Left`, `C-c`, `Enter`).
    func press(_ keys: String...) async throws {
        try await tmux(["send-keys", "-t", "t"] + keys)
    }

    /// Types `text` literally.
    func type(_ text: String) async throws {
        try await tmux(["send-keys", "-t", "t", "-l", text])
    }

    /// The pane's contents, wrapped lines joined.
    func screen() async throws -> String {
        try await tmux(["capture-pane", "-p", "-J", "-t", "t", "-S", "-2000"])
    }

    /// Waits until the screen shows `text` `count` times (an answer to what was typed).
    @discardableResult
    func waitFor(_ text: String, count: Int = 1, timeout: Duration = .seconds(60)) async throws -> String {
        let deadline = ContinuousClock.now + timeout
        while true {
            let shown = try await screen()
            if shown.components(separatedBy: text).count - 1 >= count { return shown }
            guard ContinuousClock.now < deadline else {
                throw TestBusError(message: "the terminal never showed '\(text)' (\(count)x); it shows:\n\(shown)")
            }
            try await Task.sleep(for: .milliseconds(100))
        }
    }

    func stop() async {
        _ = try? await tmux(["kill-server"])
        try? FileManager.default.removeItem(at: directory)
    }

    /// Runs tmux with this terminal's socket; its standard output. Started with posix_spawn and
    /// an empty signal mask (test threads block signals, and the tmux server the first client
    /// forks would inherit that), reaped by polling waitpid so no cooperative thread blocks.
    @discardableResult
    private func tmux(_ arguments: [String]) async throws -> String {
        let output = directory.appendingPathComponent("tmux-\(UUID().uuidString.prefix(8)).out").path
        defer { unlink(output) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // The tmux server the first client forks lives as long as the test: it must hold no
        // other child's descriptor (see Spawning).
        Spawning.addCloseFromThree(&actions)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var emptyMask = sigset_t()
        sigemptyset(&emptyMask)
        posix_spawnattr_setsigmask(&attributes, &emptyMask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let argv = (["/usr/bin/tmux", "-S", socket] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var child: pid_t = 0
        let spawned = Spawning.exclusively { posix_spawn(&child, "/usr/bin/tmux", &actions, &attributes, argv, envp) }
        guard spawned == 0 else { throw TestBusError(message: "cannot start tmux: error \(spawned)") }
        var status: Int32 = 0
        while waitpid(child, &status, WNOHANG) == 0 {
            try await Task.sleep(for: .milliseconds(10))
        }
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        guard status == 0 else { throw TestBusError(message: "tmux \(arguments.joined(separator: " ")) exited \(status): \(text)") }
        return text
    }
}
