import BlueZ
import Synchronization

/// Counts the boards whose stop has asked for its link's end and calls `then` once, when the
/// last of them has (at once for none): the moment a shutdown lets the gateway's other
/// services begin stopping (issue 18 §2.7). Any thread.
final class LinksEnding: Sendable {
    private let waiting: Mutex<Set<BluetoothAddress>?>
    private let then: @Sendable () -> Void

    init(boards: Set<BluetoothAddress>, then: @escaping @Sendable () -> Void) {
        waiting = Mutex(boards.isEmpty ? nil : boards)
        self.then = then
        if boards.isEmpty { then() }
    }

    /// `board`'s stop has asked for its link's end (again: nothing).
    func asked(_ board: BluetoothAddress) {
        let last: Bool = waiting.withLock { waiting in
            guard waiting?.remove(board) != nil, waiting?.isEmpty == true else { return false }
            waiting = nil
            return true
        }
        if last { then() }
    }
}
