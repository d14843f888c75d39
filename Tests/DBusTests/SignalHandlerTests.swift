@testable import DBus
import Foundation
import Synchronization
import TestSupport
import Testing

/// Collects what a signal handler saw (it runs on the connection's I/O thread).
private final class HandlerLog: Sendable {
    let values = Mutex<[UInt32]>([])
    let ends = Mutex<[String]>([])
    var count: Int { values.withLock { $0.count } }
}

@Suite(.enabled(if: TestBus.isAvailable)) struct SignalHandlerTests {
    @Test func handlerSeesEveryMatchingSignalInOrderAndStopsWhenCancelled() async throws {
        try await withBus { bus, receiver in
            let sender = try await DBusConnection(address: bus.address)
            defer { sender.close() }
            let log = HandlerLog()
            let rule = DBusMatchRule(sender: sender.uniqueName, interface: "org.mwgate.Test", member: "Tick")
            let handler = try await receiver.addSignalHandler(matchingAny: [rule]) { signal in
                guard case .uint32(let value)? = try? signal.argument(0) else { return }
                log.values.withLock { $0.append(value) }
            }
            for index in 0..<2_000 as Range<UInt32> {
                try sender.emit(path: "/t", interface: "org.mwgate.Test", member: "Tick", arguments: [.uint32(index)])
            }
            // Another member: not for this handler.
            try sender.emit(path: "/t", interface: "org.mwgate.Test", member: "Tock", arguments: [.uint32(99_999)])
            try await waitUntil("2,000 signals in the handler") { log.count >= 2_000 }
            #expect(log.values.withLock { $0 } == Array(0..<2_000))

            handler.cancel()
            // A stream subscription added after the cancellation sees the next signal; by
            // then the handler's removal (queued first on the same thread) has happened.
            let stream = try await receiver.signals(matching: rule)
            try sender.emit(path: "/t", interface: "org.mwgate.Test", member: "Tick", arguments: [.uint32(5_000)])
            _ = try await first(stream)
            #expect(log.count == 2_000)
        }
    }

    @Test func handlerEndsOnceWhenTheConnectionCloses() async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        let receiver = try await DBusConnection(address: bus.address)
        let log = HandlerLog()
        _ = try await receiver.addSignalHandler(
            matchingAny: [DBusMatchRule(interface: "org.mwgate.Test", member: "Tick")],
            onEnd: { error in log.ends.withLock { $0.append(error.map { "\($0)" } ?? "closed") } }) { _ in }
        receiver.close()
        try await waitUntil("the handler's end") { !log.ends.withLock { $0.isEmpty } }
        try await Task.sleep(for: .milliseconds(100))
        #expect(log.ends.withLock { $0 } == ["closed"])
    }

    @Test func scheduledJobsRunAfterTheirDelayOnTheIOThreadAndNotAfterClose() async throws {
        try await withBus { _, connection in
            let ran = Mutex<[String]>([])
            let started = ContinuousClock.now
            let elapsed = Mutex<Duration?>(nil)
            #expect(connection.schedule(after: .milliseconds(150)) {
                elapsed.withLock { $0 = ContinuousClock.now - started }
                ran.withLock { $0.append("late") }
            })
            #expect(connection.schedule(after: .milliseconds(10)) { ran.withLock { $0.append("early") } })
            try await waitUntil("both jobs") { ran.withLock { $0.count } == 2 }
            #expect(ran.withLock { $0 } == ["early", "late"])
            #expect(try #require(elapsed.withLock { $0 }) >= .milliseconds(150))

            connection.close()
            try await waitUntil("the connection to close") { !connection.isConnected }
            try await Task.sleep(for: .milliseconds(50))
            #expect(!connection.schedule(after: .zero) { ran.withLock { $0.append("after close") } })
        }
    }
}
