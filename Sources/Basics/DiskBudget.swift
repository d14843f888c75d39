/// How much disk the buffer may use: a cap on stored chunk bytes and a floor of free space
/// on the file system (statvfs), so SQLite never hits SQLITE_FULL mid-write.
public struct DiskBudget: Sendable, Hashable {
    /// Cap on stored point bytes (sealed and open chunks).
    public var maxBytes: Int64
    /// Free bytes the file system must keep.
    public var minFreeBytes: Int64

    /// A budget; defaults 1 GiB and 256 MiB.
    public init(maxBytes: Int64 = 1 << 30, minFreeBytes: Int64 = 256 << 20) {
        self.maxBytes = maxBytes
        self.minFreeBytes = minFreeBytes
    }
}
