@testable import DBus
import Foundation
import TestSupport
import Testing

private let service = "org.mwgate.TestService"
private let path: DBusObjectPath = "/org/mwgate/test"

/// Exports the test service on `server` under `service`.
@discardableResult
func exportTestService(on server: DBusConnection) async throws -> TestService {
    let implementation = TestService()
    try await server.export(implementation.object(), at: path)
    #expect(try await server.requestName(service) == .primaryOwner)
    return implementation
}

@Suite(.enabled(if: TestBus.isAvailable)) struct CallTests {
    @Test func connectsAndOwnsNames() async throws {
        try await withBus { bus, connection in
            #expect(connection.uniqueName.hasPrefix(":"))
            #expect(connection.canPassFileDescriptors)
            #expect(try await connection.requestName("org.mwgate.Names") == .primaryOwner)
            let other = try await DBusConnection(address: bus.address)
            defer { other.close() }
            #expect(try await other.requestName("org.mwgate.Names") == .exists)
            #expect(try await other.nameOwner("org.mwgate.Names") == connection.uniqueName)
            #expect(try await connection.releaseName("org.mwgate.Names") == .released)
            #expect(try await other.nameOwner("org.mwgate.Names") == nil)
        }
    }

    @Test func systemBusHonoursEnvironment() async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        setenv("DBUS_SYSTEM_BUS_ADDRESS", bus.address, 1)
        let connection = try await DBusConnection.system()
        defer { connection.close() }
        #expect(try await connection.nameOwner("org.freedesktop.DBus") == "org.freedesktop.DBus")
    }

    @Test func everyTypeRoundTripsThroughTheBus() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            for value in everyType {
                let reply = try await client.call(destination: service, path: path, interface: "org.mwgate.Test",
                                                  member: "EchoVariant", arguments: [.variant(value)], timeout: eventually)
                #expect(reply.body == [.variant(value)], "round trip of \(value.type)")
            }
            let many: [DBusValue] = [
                .byte(1), .array(element: .int16, [.int16(-1)]), .uint16(2), .int32(3), .uint32(4), .int64(5), .uint64(6),
                .double(7.5), .string("s"), .objectPath("/o"), .signature(try DBusSignature("(ii)")),
                .unixFD(try DBusFileDescriptor(duplicating: 1)),
                .dictionary(key: .string, value: .variant, [DBusDictionaryEntry(key: .string("k"), value: .variant(.uint64(1)))]),
                .structure([.int32(-1), .array(element: .byte, [.byte(0), .byte(1)])]),
                .array(element: .dictionary(key: .string, value: .structure([.boolean, .variant])), [
                    .dictionary(key: .string, value: .structure([.boolean, .variant]), [
                        DBusDictionaryEntry(key: .string("x"), value: .structure([.boolean(true), .variant(.string("v"))])),
                    ]),
                ]),
            ]
            let reply = try await client.call(destination: service, path: path, interface: "org.mwgate.Test",
                                              member: "EchoMany", arguments: many, timeout: eventually)
            #expect(reply.signature.description == "yanqiuxtdsogha{sv}(iay)aa{s(bv)}")
            // Descriptors come back as new descriptors; compare everything else.
            var expected = many
            var actual = reply.body
            expected.remove(at: 11)
            actual.remove(at: 11)
            #expect(actual == expected)
        }
    }

    @Test func fileDescriptorsPassBothWays() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            // Our write end goes to the service, which writes through it.
            var ends: [Int32] = [0, 0]
            #expect(pipe(&ends) == 0)
            let writeEnd = try DBusFileDescriptor(duplicating: ends[1])
            close(ends[1])
            _ = try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "WriteToFD",
                                      arguments: [.unixFD(writeEnd), .string("hello fd")], timeout: eventually)
            var buffer = [UInt8](repeating: 0, count: 64)
            let count = read(ends[0], &buffer, 64)
            #expect(String(decoding: buffer.prefix(max(0, count)), as: UTF8.self) == "hello fd")
            close(ends[0])
            // A descriptor returned by the service.
            let reply = try await client.call(destination: service, path: path, interface: "org.mwgate.Test",
                                              member: "OpenPipe", timeout: eventually)
            let received = try reply.decode(DBusFileDescriptor.self)
            let got = read(received.rawValue, &buffer, 64)
            #expect(String(decoding: buffer.prefix(max(0, got)), as: UTF8.self) == "through-the-pipe")
        }
    }

    @Test func timeoutFires() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            let start = ContinuousClock.now
            let error = await #expect(throws: DBusError.self) {
                try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "Sleep",
                                      arguments: [.uint32(60_000)], timeout: .milliseconds(300))
            }
            #expect(error?.name == DBusError.Name.noReply)
            #expect(ContinuousClock.now - start < .seconds(20))
            // The connection still works afterwards.
            let reply = try await client.call(destination: service, path: path, interface: "org.mwgate.Test",
                                              member: "EchoVariant", arguments: [.variant(.int32(1))], timeout: eventually)
            #expect(reply.body == [.variant(.int32(1))])
        }
    }

    @Test func shortTimeoutFiresWhileALongCallIsOutstanding() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            // Quick calls first: their deadlines, `eventually` away, are what the loop sleeps until.
            for value in 0..<5 {
                _ = try await client.call(destination: service, path: path, interface: "org.mwgate.Test",
                                          member: "EchoVariant", arguments: [.variant(.int32(Int32(value)))], timeout: eventually)
            }
            let long = Task {
                try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "Sleep",
                                      arguments: [.uint32(60_000)], timeout: .seconds(120))
            }
            defer { long.cancel() }
            try await Task.sleep(for: .milliseconds(100))
            let start = ContinuousClock.now
            let error = await #expect(throws: DBusError.self) {
                try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "Sleep",
                                      arguments: [.uint32(60_000)], timeout: .milliseconds(300))
            }
            #expect(error?.name == DBusError.Name.noReply)
            // Long before either the quick calls' or the long call's deadline.
            #expect(ContinuousClock.now - start < eventually / 3)
        }
    }

    @Test func timeoutsFireInDeadlineOrder() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            let order = OrderRecorder()
            await withTaskGroup(of: Void.self) { group in
                for milliseconds in [900, 300, 600] {
                    group.addTask {
                        do {
                            _ = try await client.call(destination: service, path: path, interface: "org.mwgate.Test",
                                                      member: "Sleep", arguments: [.uint32(60_000)],
                                                      timeout: .milliseconds(milliseconds))
                        } catch let error as DBusError where error.name == DBusError.Name.noReply {
                            await order.append(milliseconds)
                        } catch {}
                    }
                }
            }
            #expect(await order.values == [300, 600, 900])
        }
    }

    @Test func lateReplyToACancelledCallIsDroppedAndLaterCallsGetTheirOwn() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            let cancelled = Task {
                try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "Sleep",
                                      arguments: [.uint32(300)], timeout: eventually)
            }
            try await Task.sleep(for: .milliseconds(50))
            cancelled.cancel()
            await #expect(throws: CancellationError.self) { try await cancelled.value }
            // The Sleep reply arrives meanwhile and must not answer anything else.
            for value in 0..<10 {
                let reply = try await client.call(destination: service, path: path, interface: "org.mwgate.Test",
                                                  member: "EchoVariant", arguments: [.variant(.int32(Int32(value)))],
                                                  timeout: eventually)
                #expect(reply.body == [.variant(.int32(Int32(value)))])
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }

    @Test func manyCallsWithTimeoutsAndCancellationsEachEndOnceWithTheirOwnAnswer() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            // Every mix of quick and slow answers, short and long timeouts, and cancellation.
            struct Plan: Sendable { let sleep: UInt32, timeout: Duration, cancelAfter: Duration? }
            let plans = (0..<240).map { index in
                Plan(sleep: [0, 5, 20, 500][index % 4],
                     timeout: (index / 4) % 2 == 0 ? .milliseconds(50) : eventually,
                     cancelAfter: index % 3 == 0 ? .milliseconds(10) : nil)
            }
            let calls = plans.enumerated().map { index, plan in
                Task {
                    try await client.call(destination: service, path: path, interface: "org.mwgate.Test",
                                          member: "SleepThenEcho", arguments: [.uint32(plan.sleep), .uint32(UInt32(index))],
                                          timeout: plan.timeout)
                }
            }
            for (index, plan) in plans.enumerated() {
                guard let cancelAfter = plan.cancelAfter else { continue }
                Task {
                    try? await Task.sleep(for: cancelAfter)
                    calls[index].cancel()
                }
            }
            // Every call ends by its timeout at the latest; one that is never resumed (its
            // reply or its removal taken by another call) would hang the test without this.
            let watchdog = Task {
                do { try await Task.sleep(for: eventually + .seconds(15)) } catch { return false }
                for call in calls { call.cancel() }
                return true
            }
            for (index, plan) in plans.enumerated() {
                let outcome: String
                do {
                    let reply = try await calls[index].value
                    outcome = try reply.decode(UInt32.self) == UInt32(index) ? "reply" : "someone else's reply"
                } catch let error as DBusError where error.name == DBusError.Name.noReply {
                    outcome = "no reply"
                } catch is CancellationError {
                    outcome = "cancelled"
                } catch {
                    outcome = "\(error)"
                }
                #expect(["reply", "no reply", "cancelled"].contains(outcome), "call \(index): \(outcome)")
                guard plan.cancelAfter == nil else { continue }
                // Left alone: a quick answer within a long timeout arrives, a slow one past a short timeout never does.
                if plan.timeout == eventually, plan.sleep <= 20 { #expect(outcome == "reply", "call \(index)") }
                if plan.timeout < .milliseconds(100), plan.sleep == 500 { #expect(outcome == "no reply", "call \(index)") }
            }
            watchdog.cancel()
            #expect(await watchdog.value == false, "calls were still outstanding long after their timeouts")
            #expect(client.isConnected)
        }
    }

    @Test func errorsMapBothWays() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            let error = await #expect(throws: DBusError.self) {
                try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "Fail",
                                      timeout: eventually)
            }
            #expect(error == DBusError(name: "org.mwgate.Error.Boom", message: "it broke"))
            let unknown = await #expect(throws: DBusError.self) {
                try await client.call(destination: service, path: "/nowhere", interface: "org.mwgate.Test", member: "Fail",
                                      timeout: eventually)
            }
            #expect(unknown?.name == DBusError.Name.unknownObject)
            let badArgs = await #expect(throws: DBusError.self) {
                try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "Sleep",
                                      arguments: [.string("x")], timeout: eventually)
            }
            #expect(badArgs?.name == DBusError.Name.invalidArgs)
            #expect(badArgs?.message.contains("'u'") == true)
            let badReply = await #expect(throws: DBusError.self) {
                try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "WrongType",
                                      timeout: eventually)
            }
            #expect(badReply?.name == DBusError.Name.failed)
        }
    }

    @Test func cancellationEndsTheCall() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            let task = Task {
                try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "Sleep",
                                      arguments: [.uint32(60_000)], timeout: .seconds(120))
            }
            try await Task.sleep(for: .milliseconds(100))
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }
        }
    }

    @Test func cancellationEndsEveryCallSentInOrder() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            let sleep = DBusMessage.methodCall(destination: service, path: path, interface: "org.mwgate.Test", member: "Sleep",
                                               body: [.uint32(60_000)])
            let task = Task { await client.callInOrder([sleep, sleep, sleep], timeout: .seconds(120)) }
            try await Task.sleep(for: .milliseconds(100))
            task.cancel()
            let results = await task.value
            #expect(results.count == 3)
            for result in results {
                #expect(throws: CancellationError.self) { try result.get() }
            }
        }
    }

    @Test func closingFailsPendingCallsAndLaterCalls() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            let task = Task {
                try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "Sleep",
                                      arguments: [.uint32(60_000)], timeout: .seconds(120))
            }
            try await Task.sleep(for: .milliseconds(200))
            client.close()
            let error = await #expect(throws: DBusError.self) { try await task.value }
            #expect(error != nil)
            await #expect(throws: DBusError.self) {
                try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "Fail",
                                      timeout: eventually)
            }
        }
    }

    @Test func lostBusEndsCallsAndStreams() async throws {
        let bus = try TestBus()
        let client = try await DBusConnection(address: bus.address)
        defer { client.close() }
        let stream = try await client.signals(matching: DBusMatchRule(interface: "org.mwgate.Nothing"))
        bus.stop()
        var ended = false
        do {
            for try await _ in stream {}
        } catch let error as DBusError {
            ended = error.name == DBusError.Name.disconnected
        }
        #expect(ended)
        #expect(!client.isConnected)
    }
}

private actor OrderRecorder {
    private(set) var values: [Int] = []
    func append(_ value: Int) { values.append(value) }
}
