/// One bounded stream of the data path (for streams each board has, every board's together):
/// how full it has been since the gateway started. A `highWater` near `capacity` means its
/// consumer fell behind; `dropped` counts what a full stream refused (data lost there).
public struct StreamStatus: Codable, Sendable, Equatable {
    /// `link_notifications`, `board_session_events`, `board_events`, `gnss_fixes`.
    public var name: String
    /// The most elements (batches of notifications or events, fixes) it may hold.
    public var capacity: Int
    /// The most it held.
    public var highWater: Int
    /// Elements refused because it was full.
    public var dropped: Int

    /// A stream's fill.
    public init(name: String, capacity: Int, highWater: Int, dropped: Int) {
        self.name = name
        self.capacity = capacity
        self.highWater = highWater
        self.dropped = dropped
    }
}
