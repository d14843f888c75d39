import Basics
import Synchronization
import Testing

/// The bound of a mirror's change streams (the BlueZ client's readers, the D-Bus mirror's
/// events): the oldest changes, then one mark for the rest, and the lapse said twice.
struct CoalescingBacklogTests {
    @Test func aReaderThatFallsBehindGetsTheOldestChangesThenTheMarkAndHearsHowManyWereLeftOut() async {
        let lapses = Mutex<[Int?]>([])
        let backlog = CoalescingBacklog<Int>(limit: 3, mark: -1) { leftOut in lapses.withLock { $0.append(leftOut) } }
        let outcomes = (1...7).map { backlog.offer($0) }
        #expect(outcomes == [.delivered, .delivered, .delivered, .fellBehind, .leftOut, .leftOut, .leftOut])
        #expect(lapses.withLock { $0 } == [nil])

        var reader = backlog.changes.makeAsyncIterator()
        var taken: [Int] = []
        for _ in 0..<4 { if let change = await reader.next() { taken.append(change) } }
        #expect(taken == [1, 2, 3, -1])
        #expect(lapses.withLock { $0 } == [nil, 4])

        // Caught up, every change is delivered again; a reader that keeps up never falls behind.
        for change in 8...20 {
            #expect(backlog.offer(change) == .delivered)
            #expect(await reader.next() == change)
        }
        backlog.finish()
        #expect(await reader.next() == nil)
        #expect(lapses.withLock { $0 } == [nil, 4])
    }

    @Test func changesOfferedWhileTheReaderWorksThroughItsBacklogAreCoveredByTheMark() async {
        let lapses = Mutex<[Int?]>([])
        let backlog = CoalescingBacklog<Int>(limit: 2, mark: 0) { leftOut in lapses.withLock { $0.append(leftOut) } }
        for change in 1...5 { backlog.offer(change) }
        var reader = backlog.changes.makeAsyncIterator()
        #expect(await reader.next() == 1)
        // Room again, but the mark still waits: what comes now is after it, so left out too.
        #expect(backlog.offer(6) == .leftOut)
        #expect(await reader.next() == 2)
        #expect(await reader.next() == 0)
        #expect(lapses.withLock { $0 } == [nil, 4])
        #expect(backlog.offer(7) == .delivered)
        #expect(await reader.next() == 7)
    }
}
