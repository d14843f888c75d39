import Testing
@testable import ServiceSupport

@Suite struct NotifierTests {
    @Test(arguments: [false, true])
    func sendsExactMessages(abstract: Bool) throws {
        let receiver = try DatagramReceiver(abstract: abstract)
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.name])
        #expect(notifier.isEnabled)
        notifier.ready(status: "2 boards\nwaiting for fix")
        notifier.watchdog()
        notifier.status("syncing")
        notifier.stopping()
        let expected = ["READY=1\nSTATUS=2 boards waiting for fix", "WATCHDOG=1", "STATUS=syncing", "STOPPING=1"]
        for message in expected {
            let datagram = try #require(receiver.receive())
            #expect(String(decoding: datagram.bytes, as: UTF8.self) == message)
        }
        #expect(!receiver.hasPending())
    }

    @Test func reloadingCarriesMonotonicTime() throws {
        let receiver = try DatagramReceiver()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.name])
        notifier.reloading()
        let text = String(decoding: try #require(receiver.receive()).bytes, as: UTF8.self)
        let lines = text.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first == "RELOADING=1")
        let usec = try #require(lines.last.flatMap { $0.hasPrefix("MONOTONIC_USEC=") ? UInt64($0.dropFirst(15)) : nil })
        #expect(usec > 0)
        notifier.extendTimeout(by: .seconds(20))
        #expect(String(decoding: try #require(receiver.receive()).bytes, as: UTF8.self) == "EXTEND_TIMEOUT_USEC=20000000")
    }

    @Test func unsetSocketIsANoOp() {
        let notifier = SystemdNotifier(environment: [:])
        #expect(!notifier.isEnabled)
        #expect(notifier.send(["READY=1"]) == false)
        notifier.ready()
        #expect(notifier.watchdogInterval == nil)
    }

    @Test func watchdogInterval() {
        #expect(SystemdNotifier.watchdog(environment: ["WATCHDOG_USEC": "30000000"], pid: 42) == .seconds(30))
        #expect(SystemdNotifier.watchdog(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "42"], pid: 42) == .seconds(30))
        #expect(SystemdNotifier.watchdog(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"], pid: 42) == nil)
        #expect(SystemdNotifier.watchdog(environment: ["WATCHDOG_USEC": "0"], pid: 42) == nil)
        #expect(SystemdNotifier.watchdog(environment: ["WATCHDOG_USEC": "soon"], pid: 42) == nil)
    }

    /// A receiver that stops reading (a busy PID 1; the bench harness, which read only up to
    /// READY=1) fills its queue after a few datagrams: a send then fails at once instead of
    /// blocking the calling thread, which left the daemon's cooperative pool stuck in sendto
    /// (issue 21). What was queued before still arrives.
    @Test func aReceiverThatDoesNotReadNeverBlocksASend() throws {
        let receiver = try DatagramReceiver()
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": receiver.name])
        let results = (0..<200).map { _ in notifier.send(["WATCHDOG=1"]) }
        #expect(results.first == true)
        #expect(results.contains(false), "the receiver's queue holds far fewer than 200 datagrams")
        let datagram = try #require(receiver.receive())
        #expect(String(decoding: datagram.bytes, as: UTF8.self) == "WATCHDOG=1")
    }

    @Test func unreachableSocketReportsFailure() {
        let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/nonexistent/notify"])
        #expect(notifier.isEnabled)
        #expect(notifier.send(["READY=1"]) == false)
    }
}
