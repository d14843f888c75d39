import Basics

/// A live mirror of a remote ObjectManager (e.g. BlueZ's on `/`): objects, their
/// interfaces and property values, kept current by InterfacesAdded/Removed and
/// PropertiesChanged.
///
/// ``start()`` subscribes first and only then takes the GetManagedObjects snapshot, so no
/// change is lost; signals that the service sent before its snapshot reply (lower serial)
/// are already in the snapshot and skipped. When the service leaves the bus every object is
/// reported removed; when it comes back a fresh snapshot is taken. Changes are followed while
/// ``run()`` runs, as child tasks of it, until ``stop()`` or cancellation.
public actor DBusObjectManagerClient {
    /// Interface name → property name → value.
    public typealias Interfaces = [String: [String: DBusValue]]

    /// A change to the mirror, in the order the service sent it.
    public enum Event: Sendable, Hashable {
        case interfacesAdded(DBusObjectPath, Interfaces)
        case interfacesRemoved(DBusObjectPath, [String])
        case propertiesChanged(DBusObjectPath, interface: String, changed: [String: DBusValue], invalidated: [String])
        /// The reader fell behind: events after this one, until it took it, were left out
        /// (``events``). ``objects`` holds their result: re-read what you follow.
        case missedEvents
    }

    /// How many events may wait unread in ``events``: its reader (the BlueZ client) hands each
    /// on at once, and each is small.
    public static let eventBacklogLimit = 1024

    public let service: String
    public let managerPath: DBusObjectPath
    private let connection: DBusConnection
    private let timeout: Duration
    /// Interfaces whose property changes are followed (nil: all).
    public let followedInterfaces: [String]?
    /// The current objects.
    public private(set) var objects: [DBusObjectPath: Interfaces] = [:]
    private var owner: String?
    /// The subscriptions ``start()`` made, followed by ``run()``.
    private var rules: [DBusMatchRule] = []
    private var signals: AsyncThrowingStream<DBusSignal, any Error>?
    /// How many signals may wait for ``run()`` before the subscription is taken again.
    private let signalBacklogLimit: Int
    private var owners: AsyncThrowingStream<DBusNameOwnerChanged, any Error>?
    private var started = false
    private let work = ChildTaskQueue(limit: 2)
    private let eventBacklog: CoalescingBacklog<Event>
    /// Every change, starting with `interfacesAdded` for each object of the first snapshot.
    /// At most ``eventBacklogLimit`` wait unread; a reader that falls further behind gets one
    /// ``Event/missedEvents`` instead of the rest (``CoalescingBacklog``), and `onLapse` (of
    /// the initializer) hears of it.
    public nonisolated let events: CoalescedChanges<Event>

    /// A mirror of `service`'s ObjectManager at `managerPath`.
    ///
    /// `followedInterfaces` limits which interfaces' PropertiesChanged are followed: the bus
    /// then routes only those to this connection (`arg0` match rules), so a property that
    /// changes hundreds of times a second but is not state (a GATT characteristic's `Value`)
    /// costs nothing here. Properties of other interfaces keep their snapshot values. nil
    /// follows every interface.
    ///
    /// `onLapse` hears when the reader of ``events`` falls behind (nil) and, once caught up,
    /// how many events were left out.
    public init(connection: DBusConnection, service: String, managerPath: DBusObjectPath = .root,
                timeout: Duration = .seconds(25), followedInterfaces: [String]? = nil,
                onLapse: @escaping @Sendable (_ leftOut: Int?) -> Void = { _ in }) {
        self.init(connection: connection, service: service, managerPath: managerPath, timeout: timeout,
                  followedInterfaces: followedInterfaces, signalBacklogLimit: DBusConnection.signalBacklogLimit,
                  eventBacklogLimit: Self.eventBacklogLimit, onLapse: onLapse)
    }

    init(connection: DBusConnection, service: String, managerPath: DBusObjectPath, timeout: Duration,
         followedInterfaces: [String]?, signalBacklogLimit: Int, eventBacklogLimit: Int = eventBacklogLimit,
         onLapse: @escaping @Sendable (_ leftOut: Int?) -> Void = { _ in }) {
        self.signalBacklogLimit = signalBacklogLimit
        self.connection = connection
        self.service = service
        self.managerPath = managerPath
        self.timeout = timeout
        self.followedInterfaces = followedInterfaces
        eventBacklog = CoalescingBacklog(limit: eventBacklogLimit, mark: .missedEvents, onLapse: onLapse)
        events = eventBacklog.changes
    }

    /// Subscribes and takes the snapshot; ``run()`` follows changes from then on (what the
    /// service sends meanwhile waits for it, in order). Throws if the service cannot be reached
    /// (the subscriptions stay, so a later start of the service is seen once ``run()`` runs).
    public func start() async throws {
        guard !started else { return }
        started = true
        if let followedInterfaces {
            // Object lifecycle from the manager, property changes only for followed interfaces.
            rules = [DBusMatchRule(sender: service, interface: DBusStandardInterface.objectManager, path: managerPath)]
            rules += followedInterfaces.map {
                DBusMatchRule(sender: service, interface: DBusStandardInterface.properties, member: "PropertiesChanged",
                              pathNamespace: managerPath, arguments: [0: $0])
            }
        } else {
            rules = [DBusMatchRule(sender: service, pathNamespace: managerPath)]
        }
        // One subscription stream per rule would reorder signals across rules; merge them in
        // arrival order on one stream instead.
        signals = try await connection.signals(matchingAny: rules, backlogLimit: signalBacklogLimit)
        owners = try await connection.nameOwnerChanged(name: service)
        try await refresh()
    }

    /// Follows the service's changes and its owner until ``stop()``, cancellation or the
    /// connection's end. Call once, after ``start()``.
    public func run() async {
        if let signals {
            self.signals = nil
            work.spawn { [weak self] in await self?.follow(signals) }
        }
        if let owners {
            self.owners = nil
            work.spawn { [weak self] in
                do {
                    for try await change in owners { await self?.ownerChanged(change.newOwner) }
                } catch {}
            }
        }
        await work.run()
    }

    /// Applies `signals` until they end. When the reader fell behind (the subscription ended
    /// with ``DBusSignalBacklogFull``), it subscribes again and takes a fresh snapshot, whose
    /// differences are reported as events: what the lost signals changed is not lost.
    private func follow(_ first: AsyncThrowingStream<DBusSignal, any Error>) async {
        var signals = first
        while !Task.isCancelled {
            do {
                for try await signal in signals { apply(signal) }
                return
            } catch is DBusSignalBacklogFull {
                do {
                    signals = try await connection.signals(matchingAny: rules, backlogLimit: signalBacklogLimit)
                } catch {
                    return
                }
                // A service that is not on the bus now is snapshotted when it comes (owner change).
                try? await refresh()
            } catch {
                return
            }
        }
    }

    /// Stops following changes (ending ``run()``, which drops the subscriptions) and ends
    /// ``events``.
    public func stop() {
        work.finish()
        signals = nil
        owners = nil
        eventBacklog.finish()
    }

    /// Interfaces of one object, or nil.
    public func object(at path: DBusObjectPath) -> Interfaces? { objects[path] }

    /// Paths of the objects implementing `interface`.
    public func paths(implementing interface: String) -> [DBusObjectPath] {
        objects.filter { $0.value[interface] != nil }.keys.sorted()
    }

    private var snapshotSerial: UInt32 = 0
    /// Snapshots in flight. Signals that arrive meanwhile are held back: applied before the
    /// snapshot lands, a change sent after it would be undone by the snapshot's diff.
    private var snapshotsInFlight = 0
    private var heldBack: [DBusSignal] = []

    /// Takes a new GetManagedObjects snapshot and reports differences as events.
    public func refresh() async throws {
        snapshotsInFlight += 1
        defer {
            snapshotsInFlight -= 1
            if snapshotsInFlight == 0 {
                let held = heldBack
                heldBack.removeAll()
                for signal in held { apply(signal) }
            }
        }
        let reply = try await connection.call(destination: service, path: managerPath,
                                              interface: DBusStandardInterface.objectManager,
                                              member: "GetManagedObjects", timeout: timeout)
        let snapshot = try reply.decode([DBusObjectPath: Interfaces].self)
        owner = reply.sender
        snapshotSerial = reply.serial
        for (path, interfaces) in objects where snapshot[path] == nil {
            objects[path] = nil
            eventBacklog.offer(.interfacesRemoved(path, interfaces.keys.sorted()))
        }
        for (path, interfaces) in snapshot.sorted(by: { $0.key < $1.key }) where objects[path] != interfaces {
            objects[path] = interfaces
            eventBacklog.offer(.interfacesAdded(path, interfaces))
        }
    }

    private func ownerChanged(_ newOwner: String) async {
        owner = newOwner.isEmpty ? nil : newOwner
        snapshotSerial = 0
        if newOwner.isEmpty {
            for (path, interfaces) in objects.sorted(by: { $0.key < $1.key }) {
                eventBacklog.offer(.interfacesRemoved(path, interfaces.keys.sorted()))
            }
            objects.removeAll()
        } else {
            try? await refresh()
        }
    }

    private func apply(_ signal: DBusSignal) {
        guard snapshotsInFlight == 0 else {
            heldBack.append(signal)
            return
        }
        // Already contained in the snapshot when sent before its reply.
        if signal.sender == owner, signal.message.serial < snapshotSerial { return }
        switch (signal.interface, signal.member) {
        case (DBusStandardInterface.objectManager, "InterfacesAdded") where signal.path == managerPath:
            guard let added = try? DBusInterfacesAdded(signal) else { return }
            objects[added.path, default: [:]].merge(added.interfaces) { _, new in new }
            eventBacklog.offer(.interfacesAdded(added.path, added.interfaces))
        case (DBusStandardInterface.objectManager, "InterfacesRemoved") where signal.path == managerPath:
            guard let removed = try? DBusInterfacesRemoved(signal) else { return }
            guard var interfaces = objects[removed.path] else { return }
            for name in removed.interfaces { interfaces[name] = nil }
            objects[removed.path] = interfaces.isEmpty ? nil : interfaces
            eventBacklog.offer(.interfacesRemoved(removed.path, removed.interfaces))
        case (DBusStandardInterface.properties, "PropertiesChanged"):
            guard let change = try? DBusPropertiesChanged(signal),
                  var properties = objects[change.path]?[change.interface] else { return }
            properties.merge(change.changed) { _, new in new }
            for name in change.invalidated { properties[name] = nil }
            objects[change.path]?[change.interface] = properties
            eventBacklog.offer(.propertiesChanged(change.path, interface: change.interface,
                                                       changed: change.changed, invalidated: change.invalidated))
        default:
            break
        }
    }
}
