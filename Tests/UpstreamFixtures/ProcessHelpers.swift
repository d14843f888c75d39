import Foundation
import TestSupport

/// A fresh directory under the temp dir, named `mwgate-TAG-UUID`.
public func temporaryDirectory(_ tag: String = "uplink") -> String {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mwgate-\(tag)-\(UUID().uuidString)").path
    try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    return dir
}

/// Runs a command and returns its status and output. Output goes through a file, not a
/// pipe: daemons started by the command (pg_ctl) may inherit the descriptor and would keep
/// a pipe open forever.
@discardableResult
public func run(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) throws -> (status: Int32, output: String) {
    let p = Process()
    p.executableURL = URL(fileURLWithPath: executable)
    p.arguments = arguments
    if let environment { p.environment = environment }
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("mwgate-run-\(UUID().uuidString)").path
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    defer { try? FileManager.default.removeItem(atPath: path) }
    let out = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    p.standardOutput = out
    p.standardError = out
    p.standardInput = FileHandle.nullDevice
    try Spawning.run(p)
    p.waitForExit()
    try? out.close()
    let data = FileManager.default.contents(atPath: path) ?? Data()
    return (p.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// A free TCP port on loopback (bound then released).
public func freePort() -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    addr.sin_port = 0
    _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) } }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
    return Int(UInt16(bigEndian: addr.sin_port))
}

/// Polls `condition` every 100 ms until it holds or `timeout` seconds pass; returns whether it held.
public func eventually(timeout: Double = 60, _ condition: () async throws -> Bool) async rethrows -> Bool {
    let deadline = Date().addingTimeInterval(timeout)
    while Date() < deadline {
        if try await condition() { return true }
        try? await Task.sleep(for: .milliseconds(100))
    }
    return try await condition()
}
