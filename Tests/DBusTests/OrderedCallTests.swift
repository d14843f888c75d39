@testable import DBus
import Foundation
import Synchronization
import TestSupport
import Testing

/// One connection's incoming calls are handled one after another in arrival order, as
/// bluetoothd's main loop handles them; an answer that comes later does not hold the calls
/// after it; calls wait for the handler loop in a bounded buffer.
@Suite(.enabled(if: TestBus.isAvailable)) struct OrderedCallTests {
    private static let service = "org.mwgate.Ordered"
    private static let path: DBusObjectPath = "/org/mwgate/ordered"
    private static let interface = "org.mwgate.Ordered"

    /// `Record(u)` appends its argument to a log after a number of suspensions that differs
    /// from call to call (from `seed`), so calls handled side by side would finish out of
    /// order; `Log` answers the log; `Slow` answers after a minute.
    private static func recorder(seed: UInt64) -> (DBusExportedObject, RecordedValues) {
        let log = RecordedValues()
        let object = DBusExportedObject(DBusInterface(interface, methods: [
            DBusMethod("Record", in: [.uint32]) { call in
                let value = try call.decode(UInt32.self)
                let suspensions = (UInt64(value) &* 0x9E37_79B9_7F4A_7C15 ^ seed) >> 59
                for _ in 0..<suspensions { await Task.yield() }
                log.values.withLock { $0.append(value) }
                return []
            },
            DBusMethod("Log", out: [.array(.uint32)]) { _ in
                [.array(element: .uint32, log.values.withLock { $0 }.map { .uint32($0) })]
            },
            DBusMethod("Slow") { _ in
                .later {
                    try await Task.sleep(for: .seconds(60))
                    return []
                }
            },
        ]))
        return (object, log)
    }

    private static func record(_ value: UInt32) -> DBusMessage {
        .methodCall(destination: service, path: path, interface: interface, member: "Record", body: [.uint32(value)])
    }

    private static func loggedValues(_ client: DBusConnection) async throws -> [UInt32] {
        try await client.call(destination: service, path: path, interface: interface, member: "Log",
                              timeout: .seconds(30)).decode([UInt32].self)
    }

    /// The D-Bus error `body` throws (nil when it throws none).
    private static func refusal(of body: () async throws -> Void) async throws -> DBusError? {
        do {
            try await body()
            return nil
        } catch let error as DBusError {
            return error
        }
    }

    @Test func callsInFlightTogetherAreHandledInArrivalOrder() async throws {
        let seed = UInt64.random(in: 0...UInt64.max)
        print("OrderedCallTests seed \(seed)")
        try await withBus { bus, server in
            let (object, _) = Self.recorder(seed: seed)
            try await server.export(object, at: Self.path)
            #expect(try await server.requestName(Self.service) == .primaryOwner)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            // Sent one after another without waiting: all in flight together.
            for value in 0..<200 { try client.send(Self.record(UInt32(value))) }
            let logged = try await Self.loggedValues(client)
            let misplaced = zip(logged, 0...).first { $0 != $1 }.map { "\($0)" } ?? "none"
            #expect(logged == Array(0..<200), "seed \(seed): \(logged.count) handled, first out of place: \(misplaced)")
        }
    }

    @Test func aCallAnsweredLaterDoesNotHoldTheCallsAfterIt() async throws {
        try await withBus { bus, server in
            let (object, _) = Self.recorder(seed: 1)
            try await server.export(object, at: Self.path)
            #expect(try await server.requestName(Self.service) == .primaryOwner)
            let client = try await DBusConnection(address: bus.address)
            defer { client.close() }
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    _ = try? await client.call(destination: Self.service, path: Self.path, interface: Self.interface,
                                               member: "Slow", timeout: .seconds(120))
                }
                try await Task.sleep(for: .milliseconds(100))
                try client.send(Self.record(7))
                // Answered while Slow is still waiting for its answer.
                #expect(try await Self.loggedValues(client) == [7])
                group.cancelAll()
            }
        }
    }

    @Test func callsWaitForTheHandlerLoopUpToTheBoundThenAreRefusedAtOnce() async throws {
        try await withBus { bus, client in
            let server = try await DBusConnection(address: bus.address)
            defer { server.close() }
            let (object, log) = Self.recorder(seed: 2)
            try await server.export(object, at: Self.path)
            #expect(try await server.requestName(Self.service) == .primaryOwner)
            let waiting = IncomingCalls.limit
            for value in 0..<waiting { try client.send(Self.record(UInt32(value))) }
            // Nobody serves the server's calls yet: the buffer is full, so this one is refused.
            do {
                _ = try await client.call(Self.record(UInt32(waiting)), timeout: .seconds(30))
                Issue.record("a call past the bound was answered")
            } catch let error as DBusError {
                #expect(error.name == DBusError.Name.limitsExceeded, "\(error)")
            }
            #expect(log.values.withLock { $0.isEmpty })
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await server.serveCalls() }
                // Asked once the buffer has room again (until then a call would be refused too).
                let deadline = ContinuousClock.now + .seconds(30)
                while log.values.withLock({ $0.count }) < waiting, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let logged = try await Self.loggedValues(client)
                let misplaced = zip(logged, 0...).first { $0 != $1 }.map { "\($0)" } ?? "none"
                #expect(logged == Array(0..<UInt32(waiting)), "\(logged.count) handled, first out of place: \(misplaced)")
                let second = try await Self.refusal(of: { try await server.serveCalls() })
                #expect(second?.name == DBusError.Name.failed)
                group.cancelAll()
            }
            // The loop has ended: a new call is refused at once, not left to time out.
            #expect(try await Self.refusal(of: { _ = try await client.call(Self.record(0), timeout: .seconds(30)) })?.name
                == DBusError.Name.failed)
        }
    }
}

private final class RecordedValues: Sendable {
    let values = Mutex<[UInt32]>([])
}
