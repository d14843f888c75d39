import Gateway
import Logging
import ServiceLifecycle
import Testing

/// The gateway's services begin stopping at one moment (issue 18: SIGTERM within 2 s; the
/// real-BlueZ VM saw a `ServiceGroup` stop the control API in 0.63 s, then sync in 1.0 s, then
/// the rest, one after another). Shown by order of events, not by time: two services that
/// each finish stopping only once the other has been asked to stop never end when stopped
/// one after another.
@Suite struct ServicesStoppingTogetherTests {
    /// Asked to stop, waits until its partner was asked too, then ends.
    struct WaitsForPartner: Service, CustomStringConvertible {
        let name: String
        let partner: String
        let seen: Seen
        var description: String { name }

        func run() async throws {
            try? await gracefulShutdown()
            await seen.add(name)
            await seen.wait(for: partner)
        }
    }

    /// Fails without ``ServicesStoppingTogether`` (checked: the two in a plain `ServiceGroup`
    /// never end, the test's time limit ends it).
    @Test(.timeLimit(.minutes(1)))
    func servicesThatWaitForEachOthersStopAllStop() async throws {
        let logger = Logger(label: "test")
        let seen = Seen()
        let services = [WaitsForPartner(name: "upload", partner: "control API", seen: seen),
                        WaitsForPartner(name: "control API", partner: "upload", seen: seen)]
        let group = ServiceGroup(services: [ServicesStoppingTogether(services, logger: logger)], gracefulShutdownSignals: [], logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
        #expect(Set(await seen.names) == ["upload", "control API"])
    }

    /// As in a `ServiceGroup`, a service that ends before the shutdown ends the others and the
    /// group with an error naming it.
    @Test(.timeLimit(.minutes(1)))
    func aServiceEndingEarlyEndsTheOthersWithAnError() async throws {
        let logger = Logger(label: "test")
        let quitter = ServiceNamed("quitter") {}
        let runner = ServiceNamed("runner") { try await Task.sleep(for: .seconds(600)) }
        let group = ServiceGroup(services: [ServicesStoppingTogether([runner, quitter], logger: logger)],
                                 gracefulShutdownSignals: [], logger: logger)
        await #expect {
            try await group.run()
        } throws: { error in
            "\(error)".contains("quitter")
        }
    }
}

/// A service from a closure, with a name for the log and errors.
private struct ServiceNamed: Service, CustomStringConvertible {
    let description: String
    let body: @Sendable () async throws -> Void
    init(_ name: String, _ body: @escaping @Sendable () async throws -> Void) {
        description = name
        self.body = body
    }
    func run() async throws { try await body() }
}

/// The names of the services asked to stop so far, and a wait for one.
actor Seen {
    private(set) var names: [String] = []
    private var waiters: [(String, CheckedContinuation<Void, Never>)] = []

    func add(_ name: String) {
        names.append(name)
        for waiter in waiters where waiter.0 == name { waiter.1.resume() }
        waiters.removeAll { $0.0 == name }
    }

    func wait(for name: String) async {
        if names.contains(name) { return }
        await withCheckedContinuation { waiters.append((name, $0)) }
    }
}
