#if canImport(Glibc)
import Glibc
#endif
import DBus
import Foundation
import Testing
import TestSupport

/// The mwsim executable: help, scheduled faults from the command line, clean exit on SIGTERM.
@Suite(.serialized, .enabled(if: TestBus.isAvailable))
struct CommandLineTests {
    static func mwsimPath() throws -> String { try BuiltExecutable.path("mwsim") }

    @Test func helpDocumentsEveryOptionAndTheFaultGrammar() throws {
        let bus = try TestBus()
        defer { bus.stop() }
        let help = try bus.runBlocking(try Self.mwsimPath(), ["--help"])
        for text in ["--bus", "--boards", "--model", "metamotion-r", "metamotion-s", "mixed", "--rate-cap", "--fault",
                     "KIND@TIME", "link-drop", "restart-bluetoothd", "drop-notifications", "io.mwgate.Simulator1",
                     "GetStats", "--connection-interval", "--temporary-timeout", "--duration", "--flash-capacity", "--readout-rate", "board-reset", "ResetBoard"] {
            #expect(help.contains(text), "help lacks \(text)")
        }
        #expect(throws: TestBusError.self) { try bus.runBlocking(try Self.mwsimPath(), ["--bus", bus.address, "--fault", "melt@1s"]) }
    }

    /// The fault fires 3 s after mwsim started, whether or not the test has connected by then (a
    /// loaded host took longer, and the test then waited for ever for a drop that had come before
    /// its link): mwsim's log, read as it is written, says which came first, and the drop is
    /// checked whenever the link was up at the fault.
    @Test func commandLineFaultDropsTheLinkAndSIGTERMExitsCleanly() async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        let child = try bus.startChild(try Self.mwsimPath(), ["--bus", bus.address, "--fault", "link-drop@3s,board=0",
                                                              "--discovery-delay", "0.05"])
        defer { child.terminate(SIGKILL) }
        let log = ChildLog(child.errors)
        let client = try await DBusConnection(address: bus.address)
        defer { client.close() }
        let deadline = ContinuousClock.now + .seconds(15)
        while try await client.nameOwner("org.bluez") == nil {
            guard ContinuousClock.now < deadline else { Issue.record("mwsim never took org.bluez"); return }
            try await Task.sleep(for: .milliseconds(50))
        }
        func call(_ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue] = []) async throws -> DBusMessage {
            try await client.call(destination: "org.bluez", path: path, interface: interface, member: member, arguments: arguments,
                                  timeout: .seconds(20))
        }
        let device: DBusObjectPath = "/org/bluez/hci0/dev_E8_C9_8F_52_7B_07"
        _ = try await call("/org/bluez/hci0", "org.bluez.Adapter1", "StartDiscovery")
        var connected = false
        while !connected && ContinuousClock.now < deadline {
            connected = (try? await call(device, "org.bluez.Device1", "Connect")) != nil
            if !connected { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(connected)
        let faultLine = "fault link-drop board 0"
        try await waitUntil("mwsim's scheduled link drop") { log.lines.contains { $0.contains(faultLine) } }
        let lines = log.lines
        let fault = try #require(lines.firstIndex { $0.contains(faultLine) })
        if lines[..<fault].contains(where: { $0.contains("mwsim: board 0 ") && $0.hasSuffix(" connected") }) {
            // mwsim logs the drop as it tears the link down, and answers calls in order.
            try await waitUntil("the link down") {
                let reply = try await call(device, DBusStandardInterface.properties, "Get",
                                           [.string("org.bluez.Device1"), .string("Connected")])
                return try reply.decode(DBusValue.self).unwrappingVariants == DBusValue.boolean(false)
            }
            #expect(log.lines.contains { $0.contains("link lost (supervision timeout)") }, "\(log.lines)")
        } else {
            print("mwsim's link drop came before the test's link was up (a slow start): the drop itself is not checked")
        }
        kill(child.pid, SIGTERM)
        #expect(child.wait() == 0)
        try await waitUntil("mwsim's log to end") { log.ended }
        #expect(log.lines.contains { $0.contains("mwsim: stopped") }, "\(log.lines)")
    }
}

/// A child's standard error read line by line as it is written, on a thread of its own (a
/// blocking read must not hold one of the cooperative pool's threads), until end of file.
final class ChildLog: @unchecked Sendable {
    private let lock = NSLock()
    private var read: [String] = []
    private var atEnd = false

    init(_ handle: FileHandle) {
        Thread { [self] in
            var pending: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = Glibc.read(handle.fileDescriptor, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                pending += buffer[..<count]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    let line = String(decoding: pending[..<newline], as: UTF8.self)
                    pending.removeSubrange(...newline)
                    lock.withLock { read.append(line) }
                }
            }
            lock.withLock {
                if !pending.isEmpty { read.append(String(decoding: pending, as: UTF8.self)) }
                atEnd = true
            }
        }.start()
    }

    var lines: [String] { lock.withLock { read } }
    var ended: Bool { lock.withLock { atEnd } }
}
