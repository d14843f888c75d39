@testable import DBus
import Foundation
import TestSupport
import Testing

@Suite(.enabled(if: TestBus.isAvailable)) struct SignalTests {
    @Test func tenThousandSignalsArriveInOrder() async throws {
        try await withBus { bus, receiver in
            let sender = try await DBusConnection(address: bus.address)
            defer { sender.close() }
            let stream = try await receiver.signals(matching: DBusMatchRule(
                sender: sender.uniqueName, interface: "org.mwgate.Test", member: "Tick"))
            let total: UInt32 = 10_000
            let emitter = Task {
                for index in 0..<total {
                    try sender.emit(path: "/org/mwgate/test", interface: "org.mwgate.Test", member: "Tick",
                                    arguments: [.uint32(index)])
                }
            }
            var expected: UInt32 = 0
            var outOfOrder = 0
            let deadline = Task {
                try await Task.sleep(for: .seconds(120))
                receiver.close()
            }
            defer { deadline.cancel() }
            for try await signal in stream {
                let value = try signal.message.decode(UInt32.self)
                if value != expected { outOfOrder += 1 }
                expected = value + 1
                if value == total - 1 { break }
            }
            try await emitter.value
            #expect(outOfOrder == 0)
            #expect(expected == total)
        }
    }

    @Test func matchRulesFilterLocallyPerSubscription() async throws {
        try await withBus { bus, receiver in
            let sender = try await DBusConnection(address: bus.address)
            defer { sender.close() }
            #expect(try await sender.requestName("org.mwgate.Sender") == .primaryOwner)
            let onlyA = try await receiver.signals(matching: DBusMatchRule(
                sender: "org.mwgate.Sender", interface: "org.mwgate.Test", member: "Named", arguments: [0: "a"]))
            let subtree = try await receiver.signals(matching: DBusMatchRule(
                interface: "org.mwgate.Test", member: "Named", pathNamespace: "/x/y"))
            let impostor = try await DBusConnection(address: bus.address)
            defer { impostor.close() }
            // Same interface/member/arg from a different sender: not for onlyA.
            try impostor.emit(path: "/x/y", interface: "org.mwgate.Test", member: "Named", arguments: [.string("a"), .int32(0)])
            try sender.emit(path: "/other", interface: "org.mwgate.Test", member: "Named", arguments: [.string("b"), .int32(1)])
            try sender.emit(path: "/x/y/z", interface: "org.mwgate.Test", member: "Named", arguments: [.string("a"), .int32(2)])
            let a = try await first(onlyA)
            #expect(a.body == [.string("a"), .int32(2)])
            #expect(a.sender == sender.uniqueName)
            // Two senders race each other, so compare the subtree's two signals as a set.
            let inTree = try await first(subtree)
            let next = try await first(subtree)
            #expect(Set([inTree.path, next.path]) == ["/x/y", "/x/y/z"])
            #expect(Set([inTree.body, next.body]) == [[.string("a"), .int32(0)], [.string("a"), .int32(2)]])
        }
    }

    @Test func severalRulesOnOneStreamDeliverEachSignalOnceInOrder() async throws {
        try await withBus { bus, receiver in
            let sender = try await DBusConnection(address: bus.address)
            defer { sender.close() }
            let stream = try await receiver.signals(matchingAny: [
                DBusMatchRule(sender: sender.uniqueName, member: "Named", arguments: [0: "a"]),
                DBusMatchRule(sender: sender.uniqueName, member: "Named", arguments: [0: "b"]),
                DBusMatchRule(sender: sender.uniqueName, member: "Named", path: "/both"),
            ])
            try sender.emit(path: "/p", interface: "org.mwgate.Test", member: "Named", arguments: [.string("c"), .int32(0)])
            try sender.emit(path: "/p", interface: "org.mwgate.Test", member: "Named", arguments: [.string("b"), .int32(1)])
            try sender.emit(path: "/both", interface: "org.mwgate.Test", member: "Named", arguments: [.string("a"), .int32(2)])
            try sender.emit(path: "/p", interface: "org.mwgate.Test", member: "Named", arguments: [.string("a"), .int32(3)])
            var received: [[DBusValue]] = []
            for try await signal in stream {
                received.append(signal.body)
                if received.count == 3 { break }
            }
            // "c" matches no rule; the signal on /both matches two rules but arrives once.
            #expect(received == [[.string("b"), .int32(1)], [.string("a"), .int32(2)], [.string("a"), .int32(3)]])
        }
    }

    /// Read coalescing groups reads but loses, reorders or withholds nothing: every signal of
    /// a burst arrives in order, and calls on the same connection still get their replies.
    @Test func readCoalescingDeliversEverySignalInOrderAndCallsStillComplete() async throws {
        try await withBus { bus, receiver in
            let sender = try await DBusConnection(address: bus.address)
            defer { sender.close() }
            receiver.setReadCoalescing(.milliseconds(100))
            let stream = try await receiver.signals(matching: DBusMatchRule(
                sender: sender.uniqueName, interface: "org.mwgate.Test", member: "Tick"))
            let total: UInt32 = 2_000
            for index in 0..<total {
                try sender.emit(path: "/org/mwgate/test", interface: "org.mwgate.Test", member: "Tick",
                                arguments: [.uint32(index), .array(element: .byte, Array(repeating: .byte(7), count: 20))])
                if index % 200 == 0 { try await Task.sleep(for: .milliseconds(20)) }
            }
            let deadline = Task {
                try await Task.sleep(for: .seconds(60))
                receiver.close()
            }
            defer { deadline.cancel() }
            var expected: UInt32 = 0
            for try await signal in stream {
                let (value, _) = try signal.message.decode(UInt32.self, [UInt8].self)
                #expect(value == expected)
                expected = value + 1
                if value == total - 1 { break }
            }
            #expect(expected == total)
            #expect(try await receiver.nameOwner(sender.uniqueName) == sender.uniqueName)
            receiver.setReadCoalescing(.zero)
            #expect(try await receiver.nameOwner(sender.uniqueName) == sender.uniqueName)
        }
    }

    @Test func nameOwnerChangedIsReported() async throws {
        try await withBus { bus, watcher in
            let changes = try await watcher.nameOwnerChanged(name: "org.mwgate.Coming")
            let other = try await DBusConnection(address: bus.address)
            try await other.requestName("org.mwgate.Coming")
            let gained = try await first(changes)
            #expect(gained.newOwner == other.uniqueName && gained.oldOwner.isEmpty)
            other.close()
            let lost = try await first(changes)
            #expect(lost.newOwner.isEmpty && lost.oldOwner == other.uniqueName)
        }
    }
}
