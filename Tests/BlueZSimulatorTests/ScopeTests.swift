@testable import BlueZSimulator
import DBus
import TestSupport
import Testing

/// The simulator's lifetime as a caller and the bus see it: names owned while its scope
/// runs, given up when it ends, a clear error when it cannot start.
@Suite(.serialized, .enabled(if: TestBus.isAvailable))
struct ScopeTests {
    @Test func theScopeOwnsTheNamesWhileItRunsAndGivesThemUpWhenItEnds() async throws {
        try await Self.onPrivateBus { observer, configuration in
            for round in 1...2 {
                try await BlueZSimulator.withRunning(configuration) { simulator async throws in
                    let bluez = await simulator.bluezUniqueName
                    #expect(try await observer.nameOwner("org.bluez") == bluez, "round \(round)")
                    #expect(try await observer.nameOwner(configuration.controlBusName) != nil, "round \(round)")
                }
                // The next simulator on this bus (round 2) finds the names free.
                try await waitUntil("org.bluez given up (round \(round))") { try await observer.nameOwner("org.bluez") == nil }
                try await waitUntil("the control name given up (round \(round))") {
                    try await observer.nameOwner(configuration.controlBusName) == nil
                }
            }
        }
    }

    @Test func aSimulatorThatCannotTakeItsControlNameSaysSoAndDoesNotRun() async throws {
        try await Self.onPrivateBus { squatter, configuration in
            #expect(try await squatter.requestName(configuration.controlBusName) == .primaryOwner)
            var ran = false
            do {
                try await BlueZSimulator.withRunning(configuration) { _ in ran = true }
                Issue.record("the simulator ran without its control name")
            } catch let error as DBusError {
                #expect(error.message.contains("\(configuration.controlBusName) is already owned"), "\(error)")
            }
            #expect(!ran)
            #expect(try await squatter.nameOwner("org.bluez") == nil, "org.bluez was taken by a simulator that did not start")
        }
    }

    @Test func runServesUntilCancelledAndASimulatorRunsOnce() async throws {
        try await Self.onPrivateBus { observer, configuration in
            let simulator = BlueZSimulator(configuration: configuration)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { try await simulator.run() }
                try await waitUntil("org.bluez owned") { try await observer.nameOwner("org.bluez") != nil }
                group.cancelAll()
                try await group.waitForAll()
            }
            try await waitUntil("org.bluez given up") { try await observer.nameOwner("org.bluez") == nil }
            await #expect(throws: DBusError.self) { try await simulator.run() }
        }
    }

    /// Runs `body` with a private bus, a connection to it and a one-board configuration for it.
    static func onPrivateBus(_ body: (DBusConnection, SimulatorConfiguration) async throws -> Void) async throws {
        let bus = try TestBus()
        defer { bus.stop() }
        let connection = try await DBusConnection(address: bus.address)
        defer { connection.close() }
        var configuration = SimulatorConfiguration(busAddress: bus.address, boards: 1)
        configuration.log = { _ in }
        try await body(connection, configuration)
    }
}
