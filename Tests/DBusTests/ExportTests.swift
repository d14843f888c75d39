@testable import DBus
import Foundation
import Synchronization
import TestSupport
import Testing

private let service = "org.mwgate.TestService"
private let path: DBusObjectPath = "/org/mwgate/test"

@Suite(.enabled(if: TestBus.isAvailable)) struct PropertyTests {
    @Test func getSetGetAllAndPropertiesChanged() async throws {
        try await withBus { bus, server in
            let implementation = try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            let changes = try await client.propertiesChanged(sender: service, pathNamespace: path, interface: "org.mwgate.Test")
            let properties = "org.freedesktop.DBus.Properties"
            let got = try await client.call(destination: service, path: path, interface: properties, member: "Get",
                                            arguments: [.string("org.mwgate.Test"), .string("Level")], timeout: eventually)
            let level: DBusValue = try got.decode(DBusValue.self)
            #expect(level == .int32(5))
            _ = try await client.call(destination: service, path: path, interface: properties, member: "Set",
                                      arguments: [.string("org.mwgate.Test"), .string("Level"), .variant(.int32(42))],
                                      timeout: eventually)
            #expect(await implementation.level == 42)
            let change = try await first(changes)
            #expect(change.changed == ["Level": .int32(42)])
            #expect(change.path == path)
            let all = try await client.call(destination: service, path: path, interface: properties, member: "GetAll",
                                            arguments: [.string("org.mwgate.Test")], timeout: eventually)
            let values: [String: DBusValue] = try all.decode([String: DBusValue].self)
            #expect(values == ["Level": .int32(42), "Name": .string("tester")])
            let readOnly = await #expect(throws: DBusError.self) {
                try await client.call(destination: service, path: path, interface: properties, member: "Set",
                                      arguments: [.string("org.mwgate.Test"), .string("Name"), .variant(.string("x"))],
                                      timeout: eventually)
            }
            #expect(readOnly?.name == DBusError.Name.propertyReadOnly)
            let wrongType = await #expect(throws: DBusError.self) {
                try await client.call(destination: service, path: path, interface: properties, member: "Set",
                                      arguments: [.string("org.mwgate.Test"), .string("Level"), .variant(.string("x"))],
                                      timeout: eventually)
            }
            #expect(wrongType?.name == DBusError.Name.invalidArgs)
            // Changes announced by the application itself.
            try server.emitPropertiesChanged(path: path, interface: "org.mwgate.Test", changed: ["Level": .int32(7)],
                                             invalidated: ["Name"])
            let announced = try await first(changes)
            #expect(announced.changed == ["Level": .int32(7)] && announced.invalidated == ["Name"])
        }
    }
}

@Suite(.enabled(if: TestBus.isAvailable)) struct ObjectManagerTests {
    private func device(_ name: String) -> DBusExportedObject {
        DBusExportedObject(DBusInterface("org.mwgate.Device", properties: [
            DBusProperty("Name", type: .string, get: { .string(name) }),
        ]))
    }

    /// Starts `mirror`, runs `body` while the mirror's `run()` follows changes beside it, then
    /// stops the mirror and waits for its run to end.
    private func following(_ mirror: DBusObjectManagerClient, _ body: () async throws -> Void) async throws {
        try await mirror.start()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await mirror.run() }
            do { try await body() } catch {
                await mirror.stop()
                throw error
            }
            await mirror.stop()
            try await group.waitForAll()
        }
    }

    @Test func clientFollowsOurServer() async throws {
        try await withBus { bus, server in
            server.exportObjectManager(at: "/org/mwgate")
            try await server.export(device("first"), at: "/org/mwgate/dev_1")
            #expect(try await server.requestName("org.mwgate.Manager") == .primaryOwner)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            let mirror = DBusObjectManagerClient(connection: client, service: "org.mwgate.Manager", managerPath: "/org/mwgate")
            try await following(mirror) {
                #expect(try await first(mirror.events) == .interfacesAdded("/org/mwgate/dev_1", ["org.mwgate.Device": ["Name": .string("first")]]))
                try await server.export(device("second"), at: "/org/mwgate/dev_2")
                #expect(try await first(mirror.events) == .interfacesAdded("/org/mwgate/dev_2", ["org.mwgate.Device": ["Name": .string("second")]]))
                try server.emitPropertiesChanged(path: "/org/mwgate/dev_2", interface: "org.mwgate.Device",
                                                 changed: ["Name": .string("renamed")])
                #expect(try await first(mirror.events) == .propertiesChanged("/org/mwgate/dev_2", interface: "org.mwgate.Device",
                                                                  changed: ["Name": .string("renamed")], invalidated: []))
                try server.unexport("/org/mwgate/dev_1")
                #expect(try await first(mirror.events) == .interfacesRemoved("/org/mwgate/dev_1", ["org.mwgate.Device"]))
                #expect(await mirror.paths(implementing: "org.mwgate.Device") == ["/org/mwgate/dev_2"])
                #expect(await mirror.object(at: "/org/mwgate/dev_2")?["org.mwgate.Device"]?["Name"] == .string("renamed"))
                // The service leaving the bus removes everything.
                server.close()
                let gone = try await first(mirror.events)
                #expect(gone == .interfacesRemoved("/org/mwgate/dev_2", ["org.mwgate.Device"]))
                #expect(await mirror.objects.isEmpty)
            }
        }
    }

    /// Changes are applied only while `run()` runs (what comes before waits, in order), and
    /// cancelling the scope that runs it ends the following.
    @Test(.timeLimit(.minutes(1))) func changesAreFollowedWhileRunRunsAndStopWithItsScope() async throws {
        try await withObjectManagerService("org.mwgate.Scoped") { server, client in
            let added = try await client.interfacesAdded(sender: "org.mwgate.Scoped", managerPath: "/")
            let mirror = DBusObjectManagerClient(connection: client, service: "org.mwgate.Scoped")
            try await mirror.start()
            try await server.export(device("early"), at: "/dev_early")
            #expect(try await first(added).path == "/dev_early")
            #expect(await mirror.object(at: "/dev_early") == nil)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await mirror.run() }
                #expect(try await first(mirror.events) == .interfacesAdded("/dev_early", ["org.mwgate.Device": ["Name": .string("early")]]))
                group.cancelAll()
                try await group.waitForAll()
            }
            try await server.export(device("late"), at: "/dev_late")
            #expect(try await first(added).path == "/dev_late")
            #expect(await mirror.object(at: "/dev_late") == nil)
        }
    }

    /// A subscription whose reader does not keep up holds at most its backlog limit, then ends
    /// with an error that says so: no signal goes missing unnoticed, no memory grows unbounded.
    @Test func aReaderThatFallsBehindGetsAnErrorNotAGap() async throws {
        try await withObjectManagerService("org.mwgate.Flood") { server, client in
            let rule = DBusMatchRule(sender: "org.mwgate.Flood", interface: DBusStandardInterface.objectManager,
                                     member: "InterfacesAdded", path: "/")
            let slow = try await client.signals(matching: rule, backlogLimit: 4)
            // Routed after `slow` for every signal: once it has the sixth, so has `slow`.
            let observer = try await client.interfacesAdded(sender: "org.mwgate.Flood", managerPath: "/")
            for index in 0..<6 { try await server.export(device("d\(index)"), at: try DBusObjectPath("/dev_\(index)")) }
            #expect(try await first(observer) { $0.path == "/dev_5" }.path == "/dev_5")
            var paths: [String] = []
            let error = await #expect(throws: DBusSignalBacklogFull.self) {
                for try await signal in slow { paths.append(try DBusInterfacesAdded(signal).path.description) }
            }
            #expect(paths == ["/dev_0", "/dev_1", "/dev_2", "/dev_3"])
            #expect(error?.limit == 4)
            #expect(error?.description.contains("reader fell behind") == true, "\(String(describing: error))")
        }
    }

    /// A mirror whose subscription overflowed while nothing ran it subscribes again and takes
    /// a new snapshot: every object is mirrored and reported.
    @Test func aMirrorThatFellBehindCatchesUpFromASnapshot() async throws {
        try await withObjectManagerService("org.mwgate.Behind") { server, client in
            let observer = try await client.interfacesAdded(sender: "org.mwgate.Behind", managerPath: "/")
            let expected = try (0..<5).map { try DBusObjectPath("/dev_\($0)") }
            let late = DBusObjectManagerClient(connection: client, service: "org.mwgate.Behind", managerPath: .root,
                                               timeout: eventually, followedInterfaces: nil, signalBacklogLimit: 2)
            try await late.start()
            // Its run() is not running yet: the five signals wait and overflow its limit of 2.
            for path in expected { try await server.export(device(path.description), at: path) }
            #expect(try await first(observer) { $0.path == "/dev_4" }.path == "/dev_4")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await late.run() }
                var reported: Set<DBusObjectPath> = []
                while reported.count < expected.count {
                    if case .interfacesAdded(let path, _) = try await first(late.events) { reported.insert(path) }
                }
                #expect(reported == Set(expected))
                #expect(await late.paths(implementing: "org.mwgate.Device") == expected)
                await late.stop()
                try await group.waitForAll()
            }
        }
    }

    /// A mirror whose reader reads nothing holds at most its limit of events: the oldest,
    /// then the mark for the rest; the objects hold every change, and the lapse is told twice.
    @Test func aMirrorsReaderThatFallsBehindGetsTheOldestEventsThenTheMark() async throws {
        try await withObjectManagerService("org.mwgate.Slow") { server, client in
            let lapses = Mutex<[Int?]>([])
            let mirror = DBusObjectManagerClient(connection: client, service: "org.mwgate.Slow", managerPath: .root,
                                                 timeout: eventually, followedInterfaces: nil,
                                                 signalBacklogLimit: DBusConnection.signalBacklogLimit, eventBacklogLimit: 2) {
                leftOut in lapses.withLock { $0.append(leftOut) }
            }
            let expected = try (0..<5).map { try DBusObjectPath("/dev_\($0)") }
            try await following(mirror) {
                for path in expected { try await server.export(device(path.description), at: path) }
                try await waitUntil("the five objects mirrored") { await mirror.paths(implementing: "org.mwgate.Device") == expected }
                #expect(lapses.withLock { $0 } == [nil])
                var reader = mirror.events.makeAsyncIterator()
                var added: [DBusObjectPath] = []
                for _ in 0..<2 { if case .interfacesAdded(let path, _) = await reader.next() { added.append(path) } }
                #expect(added == Array(expected.prefix(2)))
                #expect(await reader.next() == .missedEvents)
                #expect(lapses.withLock { $0 } == [nil, 3])
            }
        }
    }

    @Test func snapshotTakenWhileObjectsChangeLosesNothing() async throws {
        try await withObjectManagerService("org.mwgate.Busy") { server, client in
            let added = try await client.interfacesAdded(sender: "org.mwgate.Busy", managerPath: "/")
            let removed = try await client.interfacesRemoved(sender: "org.mwgate.Busy", managerPath: "/")
            let mirror = DBusObjectManagerClient(connection: client, service: "org.mwgate.Busy")
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await churn(on: server, count: 200) }
                try await following(mirror) {
                    try await group.waitForAll()
                    try await expectMirrored(mirror, count: 200)
                    #expect(try await first(added).path == "/dev_0")
                    let firstRemoval = try await first(removed)
                    #expect(firstRemoval.path == "/dev_0" && firstRemoval.interfaces == ["org.mwgate.Device"])
                }
            }
        }
    }

    /// A snapshot whose values take long to read (a busy daemon's actors) is built while the
    /// tree goes on changing: the mirror still ends with every change. Rebuilding until nothing
    /// changed, as the registry did, gave up under such churn and sent a stale snapshot whose
    /// reply came after the signals of the changes it lacked (CI, session 17: a load flake of
    /// the test above).
    @Test func aSlowSnapshotBuiltUnderChurnLosesNothing() async throws {
        try await withObjectManagerService("org.mwgate.SlowSnapshot") { server, client in
            let slow = DBusExportedObject(DBusInterface("org.mwgate.Device", properties: [
                DBusProperty("Name", type: .string, get: {
                    try await Task.sleep(for: .milliseconds(20))
                    return .string("slow")
                }),
            ]))
            try await server.export(slow, at: "/slow")
            let mirror = DBusObjectManagerClient(connection: client, service: "org.mwgate.SlowSnapshot")
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Paced so that the tree changes during every build of the snapshot.
                group.addTask { try await churn(on: server, count: 150, pause: .milliseconds(2)) }
                try await following(mirror) {
                    try await group.waitForAll()
                    try await expectMirrored(mirror, count: 150, also: ["/slow"])
                }
            }
        }
    }

    /// Exports `/dev_0` ... `/dev_<count - 1>` one after another, unexporting every third again.
    private func churn(on server: DBusConnection, count: Int, pause: Duration? = nil) async throws {
        for index in 0..<count {
            try await server.export(device("d\(index)"), at: try DBusObjectPath("/dev_\(index)"))
            if index % 3 == 0 { try server.unexport(try DBusObjectPath("/dev_\(index)")) }
            if let pause { try await Task.sleep(for: pause) }
        }
    }

    /// Waits until `mirror` shows the last change of ``churn(on:count:pause:)`` and checks it
    /// shows every object that churn left, and no other.
    private func expectMirrored(_ mirror: DBusObjectManagerClient, count: Int, also: Set<DBusObjectPath> = []) async throws {
        let expected = also.union((0..<count).filter { $0 % 3 != 0 }.map { try! DBusObjectPath("/dev_\($0)") })
        // The last change is the last object's InterfacesAdded; once it is mirrored, all are.
        let last = try DBusObjectPath("/dev_\(count - 1)")
        try await waitUntil("the last object mirrored") { await mirror.object(at: last) != nil }
        let mirrored = Set(await mirror.paths(implementing: "org.mwgate.Device"))
        let missing = expected.subtracting(mirrored).sorted(), extra = mirrored.subtracting(expected).sorted()
        #expect(missing.isEmpty && extra.isEmpty, "the mirror lacks \(missing) and has \(extra) too much")
    }

    @Test(.enabled(if: PythonPeer.isAvailable)) func clientFollowsPythonDBusmock() async throws {
        try await withBus { bus, client in
            let mock = try bus.startChild(PythonPeer.python, ["-m", "dbusmock", "--session", "-m", "org.mwgate.Mock", "/", "org.mwgate.Mock"])
            defer { mock.terminate() }
            let owners = try await client.nameOwnerChanged(name: "org.mwgate.Mock")
            if try await client.nameOwner("org.mwgate.Mock") == nil { _ = try await first(owners) }
            let mirror = DBusObjectManagerClient(connection: client, service: "org.mwgate.Mock")
            try await following(mirror) {
                _ = try await client.call(destination: "org.mwgate.Mock", path: "/", interface: "org.freedesktop.DBus.Mock",
                                          member: "AddObject", arguments: [
                                              .string("/org/mwgate/dev_9"), .string("org.mwgate.Device"),
                                              ["Name": DBusValue.string("py"), "RSSI": .int16(-60)].dbusValue,
                                              .array(element: .structure([.string, .string, .string, .string]), []),
                                          ], timeout: eventually)
                // dbusmock leaves emitting InterfacesAdded/Removed to its user (see its AddObject docs).
                let properties: DBusValue = ["org.mwgate.Device": ["Name": DBusValue.string("py"), "RSSI": .int16(-60)]].dbusValue
                _ = try await client.call(destination: "org.mwgate.Mock", path: "/", interface: "org.freedesktop.DBus.Mock",
                                          member: "EmitSignal", arguments: [
                                              .string("org.freedesktop.DBus.ObjectManager"), .string("InterfacesAdded"),
                                              .signature(try DBusSignature("oa{sa{sv}}")),
                                              .array(element: .variant, [.variant(.objectPath("/org/mwgate/dev_9")), .variant(properties)]),
                                          ], timeout: eventually)
                var added = try await first(mirror.events)
                // dbusmock's own root object may be announced first.
                while case .interfacesAdded(let path, _) = added, path != "/org/mwgate/dev_9" { added = try await first(mirror.events) }
                guard case .interfacesAdded(_, let interfaces) = added else {
                    Issue.record("no InterfacesAdded from dbusmock: \(String(describing: added))")
                    return
                }
                #expect(interfaces["org.mwgate.Device"]?["RSSI"] == .int16(-60))
                _ = try await client.call(destination: "org.mwgate.Mock", path: "/", interface: "org.freedesktop.DBus.Mock",
                                          member: "RemoveObject", arguments: [.objectPath("/org/mwgate/dev_9")], timeout: eventually)
                _ = try await client.call(destination: "org.mwgate.Mock", path: "/", interface: "org.freedesktop.DBus.Mock",
                                          member: "EmitSignal", arguments: [
                                              .string("org.freedesktop.DBus.ObjectManager"), .string("InterfacesRemoved"),
                                              .signature(try DBusSignature("oas")),
                                              .array(element: .variant, [.variant(.objectPath("/org/mwgate/dev_9")),
                                                                         .variant(.array(element: .string, [.string("org.mwgate.Device")]))]),
                                          ], timeout: eventually)
                var removed = try await first(mirror.events)
                while case .propertiesChanged = removed { removed = try await first(mirror.events) }
                guard case .interfacesRemoved(let path, let names) = removed else {
                    Issue.record("no InterfacesRemoved from dbusmock: \(String(describing: removed))")
                    return
                }
                #expect(path == "/org/mwgate/dev_9" && names.contains("org.mwgate.Device"))
                #expect(await mirror.object(at: "/org/mwgate/dev_9") == nil)
            }
        }
    }
}
