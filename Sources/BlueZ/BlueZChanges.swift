import Basics

/// One subscriber's changes from ``BlueZClient/changes(for:backlogLimit:)``, in order, with at
/// most `backlogLimit` of them waiting unread.
///
/// A reader that falls further behind does not make the client hold more: the change that
/// would exceed the limit is replaced by one ``BlueZChange/missedChanges`` after the waiting
/// ones, and every later change is left out until the reader takes that mark. Nothing a board
/// depends on is lost that way, because each change only announces what the client's mirror
/// already holds: at the mark the reader re-reads what it follows (``BlueZClient/facts(for:preferredAdapter:)``,
/// ``BlueZClient/devices()``) and so sees the result of every change left out. Only the
/// intermediate steps are gone (a link that dropped and came back meanwhile reads as up), and
/// the client says so on ``BlueZClient/lapses`` when the reader falls behind and again when it
/// has caught up, with how many changes were left out.
public typealias BlueZChanges = CoalescedChanges<BlueZChange>

/// A reader of ``BlueZClient/changes(for:backlogLimit:)`` fell behind, or caught up after it had.
public struct BlueZChangesLapse: Sendable, Hashable, CustomStringConvertible {
    /// Who reads the changes (as the reader named itself, e.g. "board D1:5E:AA:01:02:03").
    public let subscriber: String
    /// How many changes may wait unread.
    public let limit: Int
    /// Nil when the reader has just fallen behind; when it has caught up, how many changes
    /// were left out meanwhile.
    public let leftOut: Int?

    public init(subscriber: String, limit: Int, leftOut: Int?) {
        self.subscriber = subscriber
        self.limit = limit
        self.leftOut = leftOut
    }

    public var description: String {
        if let leftOut {
            return "\(subscriber) caught up with BlueZ: \(leftOut) change(s) were left out while it was behind; it re-read BlueZ's state, which holds their result"
        }
        return "\(subscriber) fell behind BlueZ's changes: \(limit) waited unread; the later ones are left out until it re-reads BlueZ's state (its result is kept, intermediate steps are not)"
    }
}
