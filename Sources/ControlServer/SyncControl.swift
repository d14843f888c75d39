import ControlAPI
import StatusModel

/// What the control API needs from the upstream sync service. Uplink's `SyncService`
/// conforms through a small adapter in the daemon, so this module does not depend on Uplink.
public protocol SyncControl: Sendable {
    /// The sync's current state.
    func syncStatus() async -> UpstreamSyncStatus
    /// Runs one upload pass now (waiting for it) and reports what it did. Throws with a
    /// message naming the problem when the pass cannot run.
    func syncNow() async throws -> SyncRunPayload
    /// Puts dead documents (of `sessionID`, or all when nil) back in the queue; returns how many.
    func requeueDead(sessionID: String?) async throws -> Int
}
