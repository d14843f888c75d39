@testable import DBus
import Foundation
import TestSupport
import Testing

/// Runs `body` with a fresh private bus and a connection to it that serves the calls to its
/// exported objects; stops both afterwards.
func withBus<T>(_ body: (TestBus, DBusConnection) async throws -> T) async throws -> T {
    let bus = try TestBus()
    defer { bus.stop() }
    let connection = try await DBusConnection(address: bus.address)
    defer { connection.close() }
    return try await withThrowingTaskGroup(of: Void.self) { group in
        group.addTask { try await connection.serveCalls() }
        defer { group.cancelAll() }
        return try await body(bus, connection)
    }
}

/// Runs `body` with `server` owning `name` on a fresh private bus and exporting an
/// ObjectManager at `/`, and a `client` connection to the same bus.
func withObjectManagerService(_ name: String, _ body: (_ server: DBusConnection, _ client: DBusConnection) async throws -> Void) async throws {
    try await withBus { bus, server in
        server.exportObjectManager(at: "/")
        #expect(try await server.requestName(name) == .primaryOwner)
        let client = try await DBusConnection(address: bus.address)
        defer { client.close() }
        try await body(server, client)
    }
}

/// An exported test service: echo, slow, failing and fd methods, plus a property.
actor TestService {
    var level: Int32 = 5
    func setLevel(_ value: Int32) { level = value }

    nonisolated func object() -> DBusExportedObject {
        DBusExportedObject(DBusInterface("org.mwgate.Test", methods: [
            DBusMethod("EchoVariant", in: [.variant], out: [.variant]) { call in call.arguments },
            DBusMethod("EchoMany", in: try! DBusSignature("yanqiuxtdsogha{sv}(iay)aa{s(bv)}"),
                       out: try! DBusSignature("yanqiuxtdsogha{sv}(iay)aa{s(bv)}")) { call in call.arguments },
            // The slow ones answer later, beside the calls after them.
            DBusMethod("Sleep", in: [.uint32]) { call in
                let milliseconds = try call.decode(UInt32.self)
                return .later {
                    try await Task.sleep(for: .milliseconds(Int(milliseconds)))
                    return []
                }
            },
            DBusMethod("SleepThenEcho", in: [.uint32, .uint32], out: [.uint32]) { call in
                let (milliseconds, value) = try call.decode(UInt32.self, UInt32.self)
                return .later {
                    try await Task.sleep(for: .milliseconds(Int(milliseconds)))
                    return [.uint32(value)]
                }
            },
            DBusMethod("Fail") { _ -> [DBusValue] in throw DBusError(name: "org.mwgate.Error.Boom", message: "it broke") },
            DBusMethod("WrongType", out: [.uint32]) { _ in [.string("not a number")] },
            DBusMethod("WriteToFD", in: [.unixFD, .string]) { call in
                let (fd, text) = try call.decode(DBusFileDescriptor.self, String.self)
                let bytes = Array(text.utf8)
                guard write(fd.rawValue, bytes, bytes.count) == bytes.count else {
                    throw DBusError(name: "org.mwgate.Error.Write", message: "write failed")
                }
                return []
            },
            DBusMethod("OpenPipe", out: [.unixFD]) { _ in
                var ends: [Int32] = [0, 0]
                guard pipe(&ends) == 0 else { throw DBusError(name: "org.mwgate.Error.Pipe") }
                let message = Array("through-the-pipe".utf8)
                _ = write(ends[1], message, message.count)
                close(ends[1])
                return [.unixFD(DBusFileDescriptor(owning: ends[0]))]
            },
        ], properties: [
            DBusProperty("Level", type: .int32, get: { .int32(await self.level) },
                         set: { value in await self.setLevel(try value.as(Int32.self)) }),
            DBusProperty("Name", type: .string, get: { .string("tester") }),
        ], signals: [DBusSignalDescription("Tick", signature: [.uint32], argumentNames: ["count"])]))
    }
}

/// A python3-dbus peer (Debian's /usr/bin/python3) written to a temp file and started on
/// the bus; it owns `org.mwgate.PyPeer` and prints "ready" once exported.
enum PythonPeer {
    static let python = "/usr/bin/python3"

    static var isAvailable: Bool {
        FileManager.default.isExecutableFile(atPath: python)
    }

    static let script = #"""
    import os, sys, dbus, dbus.service, dbus.mainloop.glib
    from gi.repository import GLib
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    IFACE = "org.mwgate.PyPeer"

    class Peer(dbus.service.Object):
        @dbus.service.method(IFACE, in_signature="v", out_signature="v")
        def EchoVariant(self, value):
            return value

        @dbus.service.method(IFACE, in_signature="", out_signature="a{sv}")
        def Complex(self):
            return {"count": dbus.Int32(7, variant_level=1),
                    "bytes": dbus.Array([dbus.Byte(1), dbus.Byte(254)], signature="y", variant_level=1),
                    "pair": dbus.Struct((dbus.String("x"), dbus.UInt16(9)), signature="sq", variant_level=1),
                    "path": dbus.ObjectPath("/a/b", variant_level=1)}

        @dbus.service.method(IFACE, in_signature="", out_signature="s")
        def WrongType(self):
            return "text"

        @dbus.service.method(IFACE, in_signature="", out_signature="", async_callbacks=("ok", "err"))
        def Hang(self, ok, err):
            pass

        # Append/Appended: the order in which one main loop handled a client's calls.
        appended = []

        @dbus.service.method(IFACE, in_signature="u", out_signature="")
        def Append(self, value):
            Peer.appended.append(int(value))

        @dbus.service.method(IFACE, in_signature="", out_signature="au")
        def Appended(self):
            return dbus.Array(Peer.appended, signature="u")

        # Gather(n): answered once n Gather calls are waiting, so only calls that are in
        # flight together are ever answered.
        gathering = []

        @dbus.service.method(IFACE, in_signature="u", out_signature="u", async_callbacks=("ok", "err"))
        def Gather(self, count, ok, err):
            Peer.gathering.append(ok)
            if len(Peer.gathering) >= count:
                waiting, Peer.gathering = Peer.gathering, []
                for index, answer in enumerate(waiting):
                    answer(dbus.UInt32(index))

        @dbus.service.method(IFACE, in_signature="", out_signature="")
        def Fail(self):
            raise dbus.exceptions.DBusException("python says no", name="org.mwgate.Error.Python")

        @dbus.service.method(IFACE, in_signature="h", out_signature="")
        def WriteFD(self, fd):
            raw = fd.take()
            os.write(raw, b"from-python")
            os.close(raw)

        @dbus.service.method(IFACE, in_signature="ssu", out_signature="")
        def CallBack(self, name, path, value):
            proxy = bus.get_object(name, path)
            proxy.Set("org.mwgate.Test", "Level", dbus.Int32(value, variant_level=1),
                      dbus_interface="org.freedesktop.DBus.Properties")

    name = dbus.service.BusName("org.mwgate.PyPeer", bus)
    peer = Peer(bus, "/org/mwgate/PyPeer")
    print("ready", flush=True)
    GLib.MainLoop().run()
    """#

    /// Starts the peer and waits until it is on the bus.
    static func start(on bus: TestBus) throws -> ChildProcess {
        let url = bus.directory.appendingPathComponent("peer.py")
        try script.write(to: url, atomically: true, encoding: .utf8)
        let child = try bus.startChild(python, ["-u", url.path])
        let line = child.readLine()
        guard line == "ready" else {
            child.terminate(SIGKILL)
            let errors = String(decoding: child.errors.readDataToEndOfFile(), as: UTF8.self)
            throw TestBusError(message: "python peer did not start: \(line) \(errors)")
        }
        return child
    }
}
