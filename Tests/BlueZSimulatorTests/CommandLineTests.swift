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

    @Test func commandLineFaultDropsTheLinkAndSIGTERMExitsCleanly() async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        let child = try bus.startChild(try Self.mwsimPath(), ["--bus", bus.address, "--fault", "link-drop@3s,board=0",
                                                              "--discovery-delay", "0.05"])
        let client = try await DBusConnection(address: bus.address)
        defer { client.close() }
        let deadline = ContinuousClock.now + .seconds(15)
        while try await client.nameOwner("org.bluez") == nil {
            guard ContinuousClock.now < deadline else { Issue.record("mwsim never took org.bluez"); child.terminate(SIGKILL); return }
            try await Task.sleep(for: .milliseconds(50))
        }
        func call(_ path: DBusObjectPath, _ interface: String, _ member: String) async throws {
            _ = try await client.call(destination: "org.bluez", path: path, interface: interface, member: member, timeout: .seconds(20))
        }
        let device: DBusObjectPath = "/org/bluez/hci0/dev_E8_C9_8F_52_7B_07"
        try await call("/org/bluez/hci0", "org.bluez.Adapter1", "StartDiscovery")
        let changes = try await client.propertiesChanged(sender: "org.bluez", pathNamespace: device, interface: "org.bluez.Device1")
        var connected = false
        while !connected && ContinuousClock.now < deadline {
            connected = (try? await call(device, "org.bluez.Device1", "Connect")) != nil
            if !connected { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(connected)
        var sawDrop = false
        for try await change in changes where change.changed["Connected"] == .boolean(false) { sawDrop = true; break }
        #expect(sawDrop)
        kill(child.pid, SIGTERM)
        #expect(child.wait() == 0)
        let errors = String(decoding: child.errors.readDataToEndOfFile(), as: UTF8.self)
        #expect(errors.contains("fault link-drop board 0"))
        #expect(errors.contains("mwsim: stopped"))
    }
}
