import Basics
import DBus

/// The simulator's lifetime as one scope: taking the names, a task group whose children are
/// everything it does over time, and letting go of the bus when the scope ends.
extension BlueZSimulator {
    /// Runs a simulator for `configuration` while `body` runs, and stops it when `body` returns
    /// or throws: `org.bluez` and the control name are owned when `body` starts, and released,
    /// with every link dropped and both connections closed, before this returns.
    ///
    /// Throws what `body` throws, else what stopped the simulator while `body` ran (its
    /// control connection lost, say), else what kept it from starting.
    public static func withRunning<Value>(
        _ configuration: SimulatorConfiguration, isolation: isolated (any Actor)? = #isolation,
        _ body: (BlueZSimulator) async throws -> Value
    ) async throws -> Value {
        let simulator = BlueZSimulator(configuration: configuration)
        let clientsLeaving = try await simulator.open()
        return try await withThrowingTaskGroup(of: Void.self, returning: Value.self, isolation: isolation) { group in
            group.addTask { try await simulator.serve(clientsLeaving: clientsLeaving) }
            let value: Value
            do {
                value = try await body(simulator)
            } catch {
                group.cancelAll()
                try? await group.waitForAll()
                await simulator.close()
                throw error
            }
            group.cancelAll()
            do { try await group.waitForAll() } catch {
                await simulator.close()
                throw error
            }
            await simulator.close()
            return value
        }
    }

    /// Takes the names and serves until the calling task is cancelled, then releases them,
    /// drops every link and closes both connections. Throws if the simulator cannot start or
    /// its control connection is lost. A simulator runs once.
    public func run() async throws {
        let clientsLeaving = try await open()
        do {
            try await serve(clientsLeaving: clientsLeaving)
        } catch {
            close()
            throw error
        }
        close()
    }

    /// Connects to the bus, takes the control name and `org.bluez` and exports the adapter;
    /// returns the bus's NameOwnerChanged signals (subscribed before any client can call us).
    /// On failure, what was opened is closed again.
    func open() async throws -> AsyncThrowingStream<DBusNameOwnerChanged, any Error> {
        guard !started else {
            throw DBusError(name: DBusError.Name.failed, message: "this simulator has already run; make a new one")
        }
        started = true
        do {
            let control = try await DBusConnection(address: configuration.busAddress)
            self.control = control
            try await SimulatorControlInterface.export(on: control, simulator: self)
            let owners = try await control.nameOwnerChanged()
            guard try await control.requestName(configuration.controlBusName) == .primaryOwner else {
                throw DBusError(name: DBusError.Name.failed, message: "\(configuration.controlBusName) is already owned on this bus")
            }
            try await startDaemon()
            log("mwsim: org.bluez on \(configuration.busAddress) with \(devices.count) board(s): "
                + devices.map { "\($0.index)=\($0.address) \($0.model.profile.name)" }.joined(separator: ", "))
            return owners
        } catch {
            close()
            throw error
        }
    }

    /// The running scope: handles the control interface's calls, watches clients leave the
    /// bus, does the housekeeping, applies the configured faults on time and runs spawned work
    /// (among it the handling of bluetoothd's calls), each a child task, until cancelled.
    func serve(clientsLeaving: AsyncThrowingStream<DBusNameOwnerChanged, any Error>) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            if let control {
                group.addTask { try await control.serveCalls() }
            }
            group.addTask {
                for try await change in clientsLeaving where change.newOwner.isEmpty && change.name.hasPrefix(":") {
                    await self.clientLeft(change.name)
                }
            }
            group.addTask { await self.housekeeping() }
            group.addTask { await self.work.run() }
            for step in configuration.faults.steps {
                group.addTask { [epoch] in
                    try? await Task.sleep(until: epoch + .milliseconds(Int64(step.at * 1000)), clock: .continuous)
                    guard !Task.isCancelled else { return }
                    await self.apply(step)
                }
            }
            // The first failure ends the scope (leaving the closure cancels the other children).
            while try await group.next() != nil {}
        }
    }

    /// Runs `body` as a child of the running scope: it ends with the scope at the latest.
    /// Returns false (and logs why) if the scope has ended or has too much work not yet started.
    @discardableResult
    func spawn(_ what: @autoclosure () -> String, _ body: @escaping @Sendable () async -> Void) -> Bool {
        guard !stopped, work.spawn(body) else {
            log("mwsim: \(what()) not started: the simulator is stopping or its work queue is full")
            return false
        }
        return true
    }

    /// Drops every link and closes both connections (their names go with them).
    func close() {
        guard !stopped else { return }
        stopped = true
        for device in devices { tearDownLink(device, announce: false) }
        work.finish()
        bluez?.close()
        control?.close()
        bluez = nil
        control = nil
    }
}
