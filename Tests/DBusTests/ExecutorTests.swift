@testable import DBus
import Foundation
import TestSupport
import Testing

private let service = "org.mwgate.TestService"
private let path: DBusObjectPath = "/org/mwgate/test"

/// Tasks that prefer a connection's executor run on its I/O thread: calls and signals must
/// work from there exactly as from the pool, and closing the connection must not strand them.
@Suite(.enabled(if: TestBus.isAvailable)) struct ExecutorTests {
    @Test func callsFromTasksOnTheConnectionExecutorGetTheirOwnReplies() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            let answered = try await withThrowingTaskGroup(of: Int.self) { group in
                for worker in 0..<16 {
                    group.addTask(executorPreference: client.executor) {
                        for index in 0..<40 {
                            let value = Int32(worker * 1000 + index)
                            let reply = try await client.call(destination: service, path: path, interface: "org.mwgate.Test",
                                                              member: "EchoVariant", arguments: [.variant(.int32(value))],
                                                              timeout: eventually)
                            #expect(reply.body == [.variant(.int32(value))])
                        }
                        return 40
                    }
                }
                return try await group.reduce(0, +)
            }
            #expect(answered == 16 * 40)
        }
    }

    @Test func signalsReachATaskOnTheConnectionExecutorInOrder() async throws {
        try await withBus { bus, server in
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            let stream = try await client.signals(matching: DBusMatchRule(interface: "org.mwgate.Test", member: "Tick"))
            let reader = Task(executorPreference: client.executor) { () -> [UInt32] in
                var seen: [UInt32] = []
                for try await signal in stream {
                    seen.append(try signal.message.decode(UInt32.self))
                    if seen.count == 500 { break }
                }
                return seen
            }
            for index in 0..<500 {
                try server.emit(path: path, interface: "org.mwgate.Test", member: "Tick", arguments: [.uint32(UInt32(index))])
            }
            #expect(try await reader.value == Array(0..<500))
        }
    }

    @Test func closingTheConnectionEndsPendingCallsOfTasksOnItsExecutor() async throws {
        try await withBus { bus, server in
            try await exportTestService(on: server)
            let client = try await DBusConnection(address: bus.address)
            let caller = Task(executorPreference: client.executor) { () -> (any Error)? in
                do {
                    _ = try await client.call(destination: service, path: path, interface: "org.mwgate.Test", member: "Sleep",
                                              arguments: [.uint32(60_000)], timeout: .seconds(60))
                    return nil
                } catch {
                    // After the close the task goes on elsewhere; it can still await.
                    try? await Task.sleep(for: .milliseconds(10))
                    return error
                }
            }
            try await Task.sleep(for: .milliseconds(200))
            client.close()
            let error = await caller.value
            #expect((error as? DBusError)?.name == DBusError.Name.disconnected)
        }
    }
}
