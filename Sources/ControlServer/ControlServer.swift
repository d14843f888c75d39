import ControlAPI
import DBus
import Foundation
import Gateway
import Logging
import ServiceLifecycle
import StatusModel

/// The gateway's control API on the system bus: owns `io.mwgate.Gateway1`, exports the
/// object at `/io/mwgate/Gateway1`, and turns the pipeline's status updates into
/// PropertiesChanged. Run it in the gateway's service group (`Gateway.serviceGroup(adding:)`).
public struct ControlServer: Service, CustomStringConvertible {
    private let gateway: Gateway
    private let sync: (any SyncControl)?
    private let busAddress: String?
    private let busName: String
    private let logger: Logger
    private let onReady: (@Sendable (DBusConnection) async -> Void)?

    /// A server for `gateway` on the bus at `busAddress` (nil: the system bus, honouring
    /// `DBUS_SYSTEM_BUS_ADDRESS`). `sync` is nil when no upstream is configured. `onReady`
    /// runs once the name is owned and the object answers.
    public init(gateway: Gateway, sync: (any SyncControl)?, busAddress: String? = nil,
                busName: String = GatewayControl.busName, logger: Logger,
                onReady: (@Sendable (DBusConnection) async -> Void)? = nil) {
        self.gateway = gateway
        self.sync = sync
        self.busAddress = busAddress
        self.busName = busName
        self.logger = logger
        self.onReady = onReady
    }

    public var description: String { "ControlServer" }

    /// Why the server could not start.
    public struct StartError: Error, CustomStringConvertible {
        public let description: String
    }

    public func run() async throws {
        let connection: DBusConnection
        do {
            if let busAddress {
                connection = try await DBusConnection(address: busAddress)
            } else {
                connection = try await DBusConnection.system()
            }
        } catch {
            throw StartError(description: "control API: cannot connect to \(busAddress ?? "the system bus"): \(error)")
        }
        defer { connection.close() }
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { try await connection.serveCalls() }
            try await serve(on: connection)
            group.cancelAll()
        }
    }

    private func serve(on connection: DBusConnection) async throws {
        let handlers = ControlHandlers(gateway: gateway, sync: sync)
        let live = LiveProperties(initial: StatusMapping.properties(await gateway.pipeline.status))
        try await connection.export(ControlInterface.object(handlers: handlers, live: live), at: GatewayControl.objectPath)
        let reply: DBusRequestNameReply
        do { reply = try await connection.requestName(busName, flags: [.doNotQueue]) } catch {
            throw StartError(description: "control API: cannot own \(busName): \(error) (is the D-Bus policy io.mwgate.Gateway1.conf installed, and does the daemon run as the mwgate user?)")
        }
        guard reply == .primaryOwner || reply == .alreadyOwner else {
            throw StartError(description: "control API: \(busName) is already owned by another process (is another mwgated running?)")
        }
        logger.info("control API on \(busName) at \(GatewayControl.objectPath)")
        await onReady?(connection)

        let updates = await gateway.pipeline.statusUpdates()
        // Stop at graceful shutdown (this service stops before the pipeline, whose updates
        // would otherwise keep the loop alive).
        for await update in updates.cancelOnGracefulShutdown() {
            var status = update
            status.boards = await handlers.runningBoards(status.boards)
            let changed = await live.update(StatusMapping.properties(status))
            guard !changed.isEmpty else { continue }
            do {
                try connection.emitPropertiesChanged(path: GatewayControl.objectPath, interface: GatewayControl.interface,
                                                     changed: changed)
            } catch {
                logger.warning("control API: cannot emit PropertiesChanged: \(error)")
            }
        }
        // The updates also end when the pipeline has shut down, which at a SIGTERM happens
        // before this service's turn (the seal starts at the signal; with no session it is done
        // at once): the API keeps answering until its turn, since a service that returns before
        // it is asked to ends the group with an error (mwgated exited 1 after an idle SIGTERM).
        try? await gracefulShutdown()
        _ = try? await connection.releaseName(busName)
    }
}

/// The property values last announced, so only real changes are signalled.
actor LiveProperties {
    private var values: [String: DBusValue]

    init(initial: [String: DBusValue]) { values = initial }

    func value(_ name: String) -> DBusValue? { values[name] }

    /// Stores `new` and returns the entries that differ from before.
    func update(_ new: [String: DBusValue]) -> [String: DBusValue] {
        var changed: [String: DBusValue] = [:]
        for (name, value) in new where values[name].map({ !StatusMapping.same($0, value) }) ?? true {
            changed[name] = value
        }
        values.merge(new) { _, b in b }
        return changed
    }
}
