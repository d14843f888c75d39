/// Documents waiting for upload, and the disk they use.
public struct BacklogStatus: Codable, Sendable, Equatable {
    /// Documents pending or in flight.
    public var documents: Int
    /// Their payload bytes.
    public var bytes: Int64
    /// Seconds since the oldest of them was queued, nil when none.
    public var oldestUnsentAgeSeconds: Double?
    /// Documents dead-lettered.
    public var dead: Int
    /// Documents in flight.
    public var inFlight: Int

    /// The backlog part of a snapshot.
    public init(documents: Int, bytes: Int64, oldestUnsentAgeSeconds: Double?, dead: Int, inFlight: Int) {
        self.documents = documents
        self.bytes = bytes
        self.oldestUnsentAgeSeconds = oldestUnsentAgeSeconds
        self.dead = dead
        self.inFlight = inFlight
    }
}

/// The buffer's disk: where it lives, what it uses and what it may use.
public struct StorageStatus: Codable, Sendable, Equatable {
    public var stateDirectory: String
    /// Free bytes on the state directory's file system (nil when it cannot be read).
    public var freeBytes: Int64?
    /// The buffer database's size on disk, with its WAL.
    public var bufferBytes: Int64?
    /// The configured budget: the most the buffer may use, and the free space it must leave.
    public var budgetMaxBytes: Int64
    public var budgetMinFreeBytes: Int64

    /// The storage part of a snapshot.
    public init(stateDirectory: String, freeBytes: Int64?, bufferBytes: Int64?, budgetMaxBytes: Int64, budgetMinFreeBytes: Int64) {
        self.stateDirectory = stateDirectory
        self.freeBytes = freeBytes
        self.bufferBytes = bufferBytes
        self.budgetMaxBytes = budgetMaxBytes
        self.budgetMinFreeBytes = budgetMinFreeBytes
    }
}
