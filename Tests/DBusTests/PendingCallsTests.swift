@testable import DBus
import Testing

/// The call table on its own: which deadline the loop sleeps until, which calls time out,
/// when a registering caller must wake the loop, and that finished calls do not pile up.
@Suite struct PendingCallsTests {
    private func waiter(_ calls: PendingCalls) -> ReplyWaiter { ReplyWaiter(serial: calls.nextSerial()) }

    @Test func serialsStayInTheUpperHalfAndNeverRepeatSoon() {
        let calls = PendingCalls()
        var seen = Set<UInt32>()
        for _ in 0..<10_000 {
            let serial = calls.nextSerial()
            #expect(serial >= 0x8000_0000)
            seen.insert(serial)
        }
        #expect(seen.count == 10_000)
    }

    @Test func loopWakesForTheEarliestDeadlineAndExpiresOnlyWhatIsDue() {
        let calls = PendingCalls()
        let late = waiter(calls), early = waiter(calls), middle = waiter(calls)
        _ = calls.register(late, deadline: 3_000)
        _ = calls.register(early, deadline: 1_000)
        _ = calls.register(middle, deadline: 2_000)
        #expect(calls.loopWillSleep(now: 0) == 1_000)
        let expired = calls.loopAwoke(now: 1_500)
        #expect(expired.map(\.serial) == [early.serial])
        #expect(calls.loopWillSleep(now: 1_500) == 2_000)
        #expect(calls.loopAwoke(now: 1_600).isEmpty)
        // Answered before its deadline: never expires.
        #expect(calls.take(middle.serial) === middle)
        #expect(calls.take(middle.serial) == nil)
        #expect(calls.loopAwoke(now: 2_500).isEmpty)
        #expect(calls.count == 1)
    }

    @Test func answeredCallsDeadlineLingersOnceSoTheNextCallNeedNotWakeTheLoop() {
        let calls = PendingCalls()
        let first = waiter(calls)
        // Nothing outstanding: the loop sleeps without a deadline, so a call must wake it.
        #expect(calls.loopWillSleep(now: 0) == nil)
        guard case .registered(wakeLoop: true) = calls.register(first, deadline: 25_000) else {
            Issue.record("a call into a loop sleeping without a deadline must wake it")
            return
        }
        _ = calls.loopAwoke(now: 10)
        _ = calls.take(first.serial)
        // The answered call's deadline is still a wake-up time...
        #expect(calls.loopWillSleep(now: 20) == 25_000)
        // ...so the next call, due a little later, does not wake the loop; a shorter one does.
        guard case .registered(wakeLoop: false) = calls.register(waiter(calls), deadline: 25_020) else {
            Issue.record("a later deadline must not wake the loop")
            return
        }
        guard case .registered(wakeLoop: true) = calls.register(waiter(calls), deadline: 300) else {
            Issue.record("an earlier deadline must wake the loop")
            return
        }
        // While the loop runs, nobody needs to wake it: it looks again before it sleeps.
        _ = calls.loopAwoke(now: 30)
        guard case .registered(wakeLoop: false) = calls.register(waiter(calls), deadline: 1) else {
            Issue.record("a running loop must not be woken")
            return
        }
        // Past its time, the lingering deadline is forgotten.
        _ = calls.loopAwoke(now: 30_000)
        #expect(calls.loopWillSleep(now: 30_000) == nil)
    }

    @Test func finishedCallsDoNotPileUpInTheHeap() {
        let calls = PendingCalls()
        let outstanding = waiter(calls)
        _ = calls.register(outstanding, deadline: 1_000_000)
        for index in 0..<10_000 {
            let call = waiter(calls)
            _ = calls.register(call, deadline: 25_000 + UInt64(index))
            #expect(calls.take(call.serial) === call)
        }
        #expect(calls.count == 1)
        #expect(calls.heapCount <= 2 * calls.count + 65)
        #expect(calls.loopAwoke(now: 999_999).isEmpty)
        #expect(calls.loopAwoke(now: 1_000_000).map(\.serial) == [outstanding.serial])
    }

    @Test func closingHandsBackEveryCallAndRefusesNewOnes() {
        let calls = PendingCalls()
        let a = waiter(calls), b = waiter(calls)
        _ = calls.register(a, deadline: 10)
        _ = calls.register(b, deadline: 20)
        #expect(Set(calls.close().map(\.serial)) == [a.serial, b.serial])
        guard case .closed = calls.register(waiter(calls), deadline: 30) else {
            Issue.record("a closed table must refuse calls")
            return
        }
        #expect(calls.count == 0)
    }
}
