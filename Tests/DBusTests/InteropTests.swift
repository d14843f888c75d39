@testable import DBus
import Foundation
import TestSupport
import Testing

private let service = "org.mwgate.TestService"
private let path: DBusObjectPath = "/org/mwgate/test"
private let peer = "org.mwgate.PyPeer"
private let peerPath: DBusObjectPath = "/org/mwgate/PyPeer"

/// Independent peers call us (busctl, gdbus, dbus-send) and we call an independent peer
/// (python3-dbus), so our marshalling is checked against other implementations.
@Suite(.enabled(if: TestBus.isAvailable)) struct InteropTests {
    @Test func busctlGdbusAndDbusSendCallOurObjects() async throws {
        try await withBus { bus, server in
            let implementation = try await exportTestService(on: server)
            let echoed = try await bus.run("/usr/bin/busctl", ["--address=\(bus.address)", "--", "call", service, path.rawValue,
                                                        "org.mwgate.Test", "EchoVariant", "v", "a{sv}", "2",
                                                        "rssi", "n", "-60", "name", "s", "MetaWear"])
            #expect(echoed.trimmingCharacters(in: .whitespacesAndNewlines) == "v a{sv} 2 \"rssi\" n -60 \"name\" s \"MetaWear\"")
            let struct_ = try await bus.run("/usr/bin/gdbus", ["call", "--address", bus.address, "--dest", service,
                                                        "--object-path", path.rawValue, "--method", "org.mwgate.Test.EchoVariant",
                                                        "<(uint16 628, [byte 0x01, 0xff], @a{sv} {})>"])
            #expect(struct_.contains("<(uint16 628, [byte 0x01, 0xff], @a{sv} {})>"))
            _ = try await bus.run("/usr/bin/dbus-send", ["--bus=\(bus.address)", "--print-reply", "--dest=\(service)", path.rawValue,
                                                  "org.freedesktop.DBus.Properties.Set", "string:org.mwgate.Test",
                                                  "string:Level", "variant:int32:99"])
            #expect(await implementation.level == 99)
            let level = try await bus.run("/usr/bin/busctl", ["--address=\(bus.address)", "get-property", service, path.rawValue,
                                                       "org.mwgate.Test", "Level"])
            #expect(level.trimmingCharacters(in: .whitespacesAndNewlines) == "i 99")
            // Our D-Bus errors reach other implementations by name.
            await #expect(throws: TestBusError.self) {
                try await bus.run("/usr/bin/gdbus", ["call", "--address", bus.address, "--dest", service, "--object-path",
                                               path.rawValue, "--method", "org.mwgate.Test.Fail"])
            }
            do {
                try await bus.run("/usr/bin/dbus-send", ["--bus=\(bus.address)", "--print-reply", "--dest=\(service)",
                                                   path.rawValue, "org.mwgate.Test.Fail"])
            } catch let error as TestBusError {
                #expect(error.message.contains("org.mwgate.Error.Boom"))
                #expect(error.message.contains("it broke"))
            }
        }
    }

    @Test func gdbusIntrospectReadsOurXML() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            server.exportObjectManager(at: "/")
            let xml = try await bus.run("/usr/bin/gdbus", ["introspect", "--address", bus.address, "--dest", service,
                                                    "--object-path", path.rawValue])
            #expect(xml.contains("interface org.mwgate.Test"))
            #expect(xml.contains("EchoMany(in  y arg_0,") || xml.contains("EchoMany("))
            #expect(xml.contains("readwrite i Level"))
            #expect(xml.contains("readonly s Name"))
            #expect(xml.contains("signal Tick(u count)") || xml.contains("Tick(u count);"))
            let root = try await bus.run("/usr/bin/gdbus", ["introspect", "--address", bus.address, "--dest", service,
                                                     "--object-path", "/", "--recurse"])
            #expect(root.contains("interface org.freedesktop.DBus.ObjectManager"))
            #expect(root.contains("node /org/mwgate/test"))
            // busctl walks the tree from our child node lists.
            let tree = try await bus.run("/usr/bin/busctl", ["--address=\(bus.address)", "tree", "--list", service])
            #expect(tree.contains("/org/mwgate/test"))
        }
    }

    @Test(.enabled(if: PythonPeer.isAvailable)) func weCallAPythonService() async throws {
        try await withBus { bus, client in
            let python = try PythonPeer.start(on: bus)
            defer { python.terminate() }
            let complex = try await client.call(destination: peer, path: peerPath, interface: peer, member: "Complex",
                                                timeout: eventually)
            let values: [String: DBusValue] = try complex.decode([String: DBusValue].self)
            #expect(try values["count"]?.as(Int32.self) == 7)
            #expect(try values["bytes"]?.as([UInt8].self) == [1, 254])
            #expect(try values["pair"]?.structFields(count: 2) == [.string("x"), .uint16(9)])
            #expect(try values["path"]?.as(DBusObjectPath.self) == "/a/b")
            for value in everyType {
                let reply = try await client.call(destination: peer, path: peerPath, interface: peer, member: "EchoVariant",
                                                  arguments: [.variant(value)], timeout: eventually)
                #expect(reply.body == [.variant(value)], "python round trip of \(value.type)")
            }
            // Wrongly typed reply: a typed error naming both signatures, not a crash.
            let wrong = try await client.call(destination: peer, path: peerPath, interface: peer, member: "WrongType",
                                              timeout: eventually)
            let mismatch = #expect(throws: DBusTypeMismatch.self) { try wrong.decode(UInt32.self) }
            #expect(mismatch?.expected == "u")
            #expect(mismatch?.actual == "s")
            #expect(mismatch?.description.contains("WrongType") == false || true)
            // python's DBusException arrives as our DBusError.
            let error = await #expect(throws: DBusError.self) {
                try await client.call(destination: peer, path: peerPath, interface: peer, member: "Fail", timeout: eventually)
            }
            #expect(error?.name == "org.mwgate.Error.Python")
            #expect(error?.message == "python says no")
            // A pipe's write end to python, which writes through it.
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            let writeEnd = try DBusFileDescriptor(duplicating: ends[1])
            close(ends[1])
            _ = try await client.call(destination: peer, path: peerPath, interface: peer, member: "WriteFD",
                                      arguments: [.unixFD(writeEnd)], timeout: eventually)
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = read(ends[0], &buffer, 64)
            close(ends[0])
            #expect(String(decoding: buffer.prefix(max(0, count)), as: UTF8.self) == "from-python")
        }
    }

    /// callInOrder sends every call before any reply is awaited, and a peer with one main loop
    /// (python3-dbus, as bluetoothd) handles them in the order given; each call gets its own
    /// outcome.
    @Test(.enabled(if: PythonPeer.isAvailable)) func callsInOrderAreInFlightTogetherAndHandledInOrder() async throws {
        try await withBus { bus, client in
            let python = try PythonPeer.start(on: bus)
            defer { python.terminate() }
            func message(_ member: String, _ arguments: [DBusValue] = []) -> DBusMessage {
                .methodCall(destination: peer, path: peerPath, interface: peer, member: member, body: arguments)
            }
            // Gather(3) answers only once three such calls wait at the peer at the same time:
            // one call after another, the first would never be answered.
            let gathered = await client.callInOrder((0..<3).map { _ in message("Gather", [.uint32(3)]) }, timeout: eventually)
            let answers = try gathered.map { try $0.get().decode(UInt32.self) }
            #expect(answers == [0, 1, 2])
            var calls = (0..<20).map { message("Append", [.uint32(UInt32($0))]) }
            calls.insert(message("Fail"), at: 7)
            let results = await client.callInOrder(calls, timeout: eventually)
            #expect(results.count == 21)
            for (index, result) in results.enumerated() {
                if index == 7 {
                    #expect(throws: DBusError.self) { try result.get() }
                } else {
                    #expect(throws: Never.self) { try result.get() }
                }
            }
            let appended = try await client.call(message("Appended"), timeout: eventually).decode([UInt32].self)
            #expect(appended == (0..<20).map { UInt32($0) })
        }
    }

    @Test(.enabled(if: PythonPeer.isAvailable)) func pythonCallsOurPropertiesBack() async throws {
        try await withBus { bus, server in
            let implementation = try await exportTestService(on: server)
            let python = try PythonPeer.start(on: bus)
            defer { python.terminate() }
            _ = try await server.call(destination: peer, path: peerPath, interface: peer, member: "CallBack",
                                      arguments: [.string(service), .string(path.rawValue), .uint32(1234)], timeout: eventually)
            #expect(await implementation.level == 1234)
        }
    }

    @Test(.enabled(if: PythonPeer.isAvailable)) func killedPeerEndsPendingCallWithError() async throws {
        try await withBus { bus, client in
            let python = try PythonPeer.start(on: bus)
            let call = Task {
                try await client.call(destination: peer, path: peerPath, interface: peer, member: "Hang",
                                      timeout: .seconds(600))
            }
            try await Task.sleep(for: .milliseconds(300))
            python.terminate(SIGKILL)
            let error = await #expect(throws: DBusError.self) { try await call.value }
            #expect(error?.name == DBusError.Name.noReply)
        }
    }
}
