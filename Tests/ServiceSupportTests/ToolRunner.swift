import Foundation
import TestSupport

/// Runs real system tools for the packaging tests.
enum Tool {
    struct Result {
        var status: Int32
        var stdout: String
        var stderr: String
        var combined: String { stdout + stderr }
    }

    /// The repository root, from this file's path.
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// The absolute path of `name` on PATH (or the path itself when it exists), nil when missing.
    static func find(_ name: String) -> String? {
        if name.hasPrefix("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin:/usr/sbin:/sbin"
        let directories: [String] = path.split(separator: ":").map(String.init) + ["/usr/sbin", "/sbin"]
        for directory in directories {
            let candidate = "\(directory)/\(name)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

    static func available(_ names: String...) -> Bool { names.allSatisfy { find($0) != nil } }

    static var isRoot: Bool { getuid() == 0 }

    /// Runs to completion (killed after `timeout`), capturing both streams.
    static func run(
        _ name: String, _ arguments: [String], stdin: String? = nil, environment: [String: String]? = nil,
        timeout: TimeInterval = 60
    ) throws -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: find(name) ?? name)
        process.arguments = arguments
        if let environment { process.environment = environment }
        // Output goes to files, not pipes: a tool that forks a daemon (dbus-daemon --fork) leaves
        // the daemon holding inherited descriptors, and a pipe would then never reach EOF.
        let scratch = NSTemporaryDirectory() + "mwgate-tool-\(UUID().uuidString)"
        _ = FileManager.default.createFile(atPath: scratch + ".out", contents: nil)
        _ = FileManager.default.createFile(atPath: scratch + ".err", contents: nil)
        defer {
            try? FileManager.default.removeItem(atPath: scratch + ".out")
            try? FileManager.default.removeItem(atPath: scratch + ".err")
        }
        let out = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + ".out"))
        let err = try FileHandle(forWritingTo: URL(fileURLWithPath: scratch + ".err"))
        defer { try? out.close(); try? err.close() }
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try Spawning.run(process)
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try? input.fileHandleForWriting.close()
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning, Date() < deadline { usleep(20_000) }
        if process.isRunning { process.terminate() }
        process.waitForExit()
        let outData = FileManager.default.contents(atPath: scratch + ".out") ?? Data()
        let errData = FileManager.default.contents(atPath: scratch + ".err") ?? Data()
        return Result(
            status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: errData, as: UTF8.self))
    }

    /// A fresh scratch directory (mode 0755 so dropped-privilege clients can reach sockets).
    static func scratchDirectory(_ tag: String) throws -> String {
        let path = NSTemporaryDirectory() + "mwgate-\(tag)-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
        return path
    }

    static func read(_ relativePath: String) throws -> String {
        try String(contentsOfFile: repositoryRoot + "/" + relativePath, encoding: .utf8)
    }
}
