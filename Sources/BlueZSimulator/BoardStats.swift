import DBus
import MetaWearBoardModel

/// What one simulated board sent and what happened to it on the link, for comparing
/// emitted against received in end-to-end tests.
public struct BoardStats: Sendable, Hashable {
    /// Samples that left the board over the air, per sensor (a packed notification is 3).
    public var samplesEmitted: [SimulatedSensorKind: Int] = [:]
    /// Index of the last sample emitted, per sensor.
    public var lastSampleIndex: [SimulatedSensorKind: UInt64] = [:]
    /// Notifications the board produced while connected (stream and replies).
    public var notificationsEmitted = 0
    /// Notifications handed to at least one subscriber (StartNotify or AcquireNotify).
    public var notificationsDelivered = 0
    /// Dropped by the rate cap's full link queue.
    public var droppedByRateCap = 0
    /// Dropped by DropNotifications / drop-notifications.
    public var droppedByFault = 0
    /// Produced while no subscriber was armed (CCCD off).
    public var undeliveredNoSubscriber = 0
    /// Stream notifications the board withheld during a stall.
    public var withheldByStall = 0
    /// Completed connections.
    public var connections = 0
    /// Link losses of any cause.
    public var disconnections = 0
    /// Connection interval in use (ms), 0 when not connected.
    public var connectionIntervalMilliseconds = 0.0
    /// Entries in the board's flash log now.
    public var flashEntriesStored = 0
    /// Entries the full flash refused (no overwrite).
    public var flashEntriesRefused = 0
    /// Entries the full flash overwrote (overwrite mode).
    public var flashEntriesOverwritten = 0
    /// The board's reset UID (moves on at every reset).
    public var resetUID = 0

    /// The stats as `a{sv}` for the control interface.
    var dbusValue: DBusValue {
        var entries: [String: DBusValue] = [
            "NotificationsEmitted": .uint64(UInt64(notificationsEmitted)),
            "NotificationsDelivered": .uint64(UInt64(notificationsDelivered)),
            "DroppedByRateCap": .uint64(UInt64(droppedByRateCap)),
            "DroppedByFault": .uint64(UInt64(droppedByFault)),
            "UndeliveredNoSubscriber": .uint64(UInt64(undeliveredNoSubscriber)),
            "WithheldByStall": .uint64(UInt64(withheldByStall)),
            "Connections": .uint64(UInt64(connections)),
            "Disconnections": .uint64(UInt64(disconnections)),
            "ConnectionIntervalMs": .double(connectionIntervalMilliseconds),
            "FlashEntriesStored": .uint64(UInt64(flashEntriesStored)),
            "FlashEntriesRefused": .uint64(UInt64(flashEntriesRefused)),
            "FlashEntriesOverwritten": .uint64(UInt64(flashEntriesOverwritten)),
            "ResetUID": .uint64(UInt64(resetUID)),
        ]
        for sensor in SimulatedSensorKind.allCases {
            let name = sensor == .gyro ? "Gyro" : "Accelerometer"
            entries["\(name)SamplesEmitted"] = .uint64(UInt64(samplesEmitted[sensor] ?? 0))
            // -1 when nothing was emitted yet.
            entries["\(name)LastIndex"] = .int64(lastSampleIndex[sensor].map { Int64(truncatingIfNeeded: $0) } ?? -1)
        }
        return .dictionary(key: .string, value: .variant,
                           entries.sorted { $0.key < $1.key }.map { DBusDictionaryEntry(key: .string($0.key), value: .variant($0.value)) })
    }
}

/// One connection event that released notifications (for batching checks).
public struct LinkRelease: Sendable, Hashable {
    /// Nanoseconds since the connection came up.
    public var nanoseconds: UInt64
    /// Notifications released in this event.
    public var count: Int
    /// The connection interval scheduled after this event, in milliseconds (what the link
    /// intends; the wall-clock gap also carries the host's scheduling delay).
    public var plannedIntervalMilliseconds: Double = 0
}
