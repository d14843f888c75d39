import Synchronization

/// The method calls of one connection that await their replies, by serial, with the time
/// each gives up.
///
/// We match replies to calls ourselves instead of through libdbus's `DBusPendingCall`:
/// that allocates a pending call and a libdbus timeout for every call, keeps them in hash
/// tables and calls the loop's timeout functions as the timeout comes and goes. Without it
/// a call costs 10 to 35 % less CPU in `mwbench dbus` (sequential, and pipelined on the
/// connection's executor). Here a call is one table entry and one heap entry.
///
/// Serials: libdbus numbers the messages it sends for us (signals, replies, no-reply bus
/// calls) from 1 upward; calls take theirs from the upper half of the range, so a reply is
/// never matched to the wrong call (the halves would meet after 2^31 messages, and only
/// calls ever get replies).
///
/// The loop wakes for the earliest deadline. A finished call's deadline lingers as a
/// wake-up time once, so a sequence of calls (each deadline a little later than the last)
/// never has to wake the sleeping loop to shorten its sleep.
final class PendingCalls: Sendable {
    private struct Entry {
        let waiter: ReplyWaiter
        let deadline: UInt64
    }

    private struct State {
        var bySerial: [UInt32: Entry] = [:]
        /// Min-heap of (deadline, serial); entries of finished calls are dropped lazily.
        var deadlines: [(deadline: UInt64, serial: UInt32)] = []
        var lingering: UInt64 = 0
        /// While the loop sleeps: the time it wakes by itself; nil while it runs.
        var loopSleepsUntil: UInt64?
        var closed = false
    }

    private let state = Mutex(State())
    private let counter = Atomic<UInt32>(0)

    /// A serial for a new call, never 0 and never in libdbus's lower half.
    func nextSerial() -> UInt32 {
        0x8000_0000 | (counter.wrappingAdd(1, ordering: .relaxed).newValue & 0x7FFF_FFFF)
    }

    enum Registration {
        case registered(wakeLoop: Bool)
        case closed
    }

    /// Adds a call (any thread). `wakeLoop`: the loop sleeps past `deadline` and must be
    /// woken to shorten its sleep.
    func register(_ waiter: ReplyWaiter, deadline: UInt64) -> Registration {
        state.withLock { state in
            guard !state.closed else { return .closed }
            state.bySerial[waiter.serial] = Entry(waiter: waiter, deadline: deadline)
            Self.push(&state.deadlines, (deadline, waiter.serial))
            // Finished calls' heap entries wait for their deadline or for this compaction.
            if state.deadlines.count > 2 * state.bySerial.count + 64 {
                state.deadlines = state.bySerial.map { ($0.value.deadline, $0.key) }
                Self.heapify(&state.deadlines)
            }
            return .registered(wakeLoop: state.loopSleepsUntil.map { deadline < $0 } ?? false)
        }
    }

    /// Removes and returns the call a reply answers (any thread).
    func take(_ serial: UInt32) -> ReplyWaiter? {
        state.withLock { state in
            guard let entry = state.bySerial.removeValue(forKey: serial) else { return nil }
            state.lingering = max(state.lingering, entry.deadline)
            return entry.waiter
        }
    }

    /// I/O thread, before it sleeps: the earliest deadline to wake for; from now until
    /// ``loopAwoke(now:)`` registrations compare their deadline with it.
    func loopWillSleep(now: UInt64) -> UInt64? {
        state.withLock { state in
            while let top = state.deadlines.first, state.bySerial[top.serial]?.deadline != top.deadline {
                Self.popMin(&state.deadlines)
            }
            var earliest = state.deadlines.first?.deadline
            if state.lingering > now {
                earliest = min(earliest ?? .max, state.lingering)
            } else {
                state.lingering = 0
            }
            state.loopSleepsUntil = earliest ?? .max
            return earliest
        }
    }

    /// I/O thread, after it woke: removes and returns the calls whose deadline has passed.
    func loopAwoke(now: UInt64) -> [ReplyWaiter] {
        state.withLock { state in
            state.loopSleepsUntil = nil
            var expired: [ReplyWaiter] = []
            while let top = state.deadlines.first, top.deadline <= now {
                Self.popMin(&state.deadlines)
                guard let entry = state.bySerial[top.serial], entry.deadline == top.deadline else { continue }
                state.bySerial[top.serial] = nil
                expired.append(entry.waiter)
            }
            return expired
        }
    }

    /// Refuses new calls and returns the outstanding ones (the connection is going).
    func close() -> [ReplyWaiter] {
        state.withLock { state in
            state.closed = true
            defer { state.bySerial.removeAll(); state.deadlines.removeAll() }
            return state.bySerial.values.map(\.waiter)
        }
    }

    /// Calls awaiting a reply.
    var count: Int { state.withLock { $0.bySerial.count } }
    /// Heap entries, finished calls' included until dropped (for tests of the compaction).
    var heapCount: Int { state.withLock { $0.deadlines.count } }

    // MARK: Heap

    private static func push(_ heap: inout [(deadline: UInt64, serial: UInt32)], _ element: (UInt64, UInt32)) {
        heap.append(element)
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].deadline < heap[parent].deadline else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    private static func popMin(_ heap: inout [(deadline: UInt64, serial: UInt32)]) {
        let last = heap.removeLast()
        guard !heap.isEmpty else { return }
        heap[0] = last
        siftDown(&heap, from: 0)
    }

    private static func heapify(_ heap: inout [(deadline: UInt64, serial: UInt32)]) {
        for index in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(&heap, from: index) }
    }

    private static func siftDown(_ heap: inout [(deadline: UInt64, serial: UInt32)], from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < heap.count else { return }
            let right = left + 1
            let smaller = right < heap.count && heap[right].deadline < heap[left].deadline ? right : left
            guard heap[smaller].deadline < heap[parent].deadline else { return }
            heap.swapAt(parent, smaller)
            parent = smaller
        }
    }
}
