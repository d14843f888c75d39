import ControlAPI
import Foundation
import TestSupport
import Testing

/// dbus/io.mwgate.Gateway1.conf on a private bus with the system bus's default-deny policy,
/// exercised by real Unix users: only mwgate owns the name; root and the mwgate group may
/// call; everyone else gets AccessDenied (mwctl exit 5). Needs root to create the users and
/// switch to them.
@Suite(.serialized, .enabled(if: getuid() == 0, "SKIPPED: the D-Bus policy test needs root (useradd, runuser)"),
       .enabled(if: TestBus.isAvailable, "needs /usr/bin/dbus-daemon"))
struct PolicyTests {
    static let member = "mwgatetest-member"
    static let outsider = "mwgatetest-outsider"
    static let policyFile = ControlHarness.repositoryRoot.appendingPathComponent("dbus/io.mwgate.Gateway1.conf").path

    /// Creates the mwgate system user/group and the two test users when missing.
    static func ensureUsers() async throws {
        func exists(_ user: String) async -> Bool { (try? await CLI.run([user], environment: [:], executable: "/usr/bin/id"))?.status == 0 }
        func must(_ arguments: [String]) async throws {
            let result = try await CLI.run(Array(arguments.dropFirst()), environment: ProcessInfo.processInfo.environment, executable: arguments[0])
            guard result.status == 0 else { throw TestBusError(message: "\(arguments.joined(separator: " ")): \(result.stderr)") }
        }
        if await !exists("mwgate") { try await must(["/usr/sbin/useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", "mwgate"]) }
        if await !exists(member) { try await must(["/usr/sbin/useradd", "--no-create-home", "--groups", "mwgate", member]) }
        if await !exists(outsider) { try await must(["/usr/sbin/useradd", "--no-create-home", outsider]) }
    }

    /// A private bus configured like Debian's system.conf (TestSupport's `SystemLikeBus`)
    /// that includes our policy file, in a directory other users can reach.
    static func systemLikeBus() throws -> (SystemLikeBus, URL) {
        let directory = URL(fileURLWithPath: "/tmp").appendingPathComponent("mwgate-policy-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o755])
        return (try SystemLikeBus(including: PolicyTests.policyFile, in: directory), directory)
    }

    /// A stand-in service (python3-dbus) owning io.mwgate.Gateway1 with RetryDead -> 0.
    static let standIn = """
        import sys, dbus, dbus.service, dbus.mainloop.glib
        from gi.repository import GLib
        dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
        bus = dbus.bus.BusConnection(sys.argv[1])
        class Gateway(dbus.service.Object):
            @dbus.service.method("io.mwgate.Gateway1", in_signature="s", out_signature="u")
            def RetryDead(self, session):
                return dbus.UInt32(0)
        name = dbus.service.BusName("io.mwgate.Gateway1", bus, do_not_queue=True)
        Gateway(bus, "/io/mwgate/Gateway1")
        print("ready", flush=True)
        GLib.MainLoop().run()
        """

    func asUser(_ user: String, _ arguments: [String], bus: SystemLikeBus) async throws -> CLIResult {
        try await CLI.run(["-u", user, "--", "/usr/bin/env", "DBUS_SYSTEM_BUS_ADDRESS=\(bus.address)"] + arguments,
                    environment: ProcessInfo.processInfo.environment, executable: "/usr/sbin/runuser")
    }

    @Test func onlyMwgateOwnsAndOnlyRootAndTheGroupMayCall() async throws {
        try await Self.ensureUsers()
        let (bus, directory) = try Self.systemLikeBus()
        defer {
            bus.stop()
            try? FileManager.default.removeItem(at: directory)
        }
        let mwctl = try CLI.path()

        // Nobody but mwgate may own the name.
        for user in [Self.outsider, Self.member] {
            let result = try await asUser(user, ["/usr/bin/busctl", "--address=\(bus.address)", "call", "org.freedesktop.DBus",
                                           "/org/freedesktop/DBus", "org.freedesktop.DBus", "RequestName", "su",
                                           GatewayControl.busName, "4"], bus: bus)
            #expect(result.status != 0, "\(user) must not own the name")
            #expect(result.stderr.contains("not allowed to own") || result.stderr.contains("Access denied"), "\(user): \(result.stderr)")
        }

        let script = directory.appendingPathComponent("stand_in.py").path
        try Self.standIn.write(toFile: script, atomically: true, encoding: .utf8)
        chmod(script, 0o644)
        let service = try ChildProcess("/usr/sbin/runuser", ["-u", "mwgate", "--", "/usr/bin/python3", script, bus.address],
                                       environment: ProcessInfo.processInfo.environment)
        defer { service.terminate() }
        let line = service.readLine().trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line == "ready", "mwgate owns the name (stand-in said '\(line)')")

        // root, a member of the mwgate group and mwgate itself may call.
        var rootEnvironment = ProcessInfo.processInfo.environment
        rootEnvironment["DBUS_SYSTEM_BUS_ADDRESS"] = bus.address
        let root = try await CLI.run(["sync", "retry-dead", "--json"], environment: rootEnvironment)
        #expect(root.status == 0 && root.stdout.contains("\"requeued\":0"), "root: \(root.status) \(root.stderr)")
        for user in [Self.member, "mwgate"] {
            let result = try await asUser(user, [mwctl, "sync", "retry-dead", "--json"], bus: bus)
            #expect(result.status == 0 && result.stdout.contains("\"requeued\":0"), "\(user): \(result.status) \(result.stderr)")
        }
        // Everyone else: AccessDenied, reported as exit 5 with the fix.
        let denied = try await asUser(Self.outsider, [mwctl, "sync", "retry-dead", "--json"], bus: bus)
        #expect(denied.status == 5, "outsider: \(denied.status) \(denied.stderr)")
        #expect(denied.stderr.contains("permission denied") && denied.stderr.contains("mwgate group"))
        #expect(denied.stderr.split(separator: "\n").count == 1)
    }
}
