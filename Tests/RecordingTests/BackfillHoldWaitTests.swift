@testable import Recording
import Testing

/// How long a held gap waits for its log (issue 21): the wait restarts with each page the
/// store takes (a gap after a long healthy stretch is read with all of it), within a bound.
@Suite("A held gap's wait for its log")
struct BackfillHoldWaitTests {
    static let wait = BackfillHold.defaultWait

    /// A hold whose first point is at 0 ms, the store's last page taken at `lastPageAt`.
    static func hold(lastPageAt: Double?) -> BackfillHold {
        var hold = BackfillHold(after: -10, startIndex: 0)
        hold.points = [(RecordedPoint(gyroscope: GyroReading(x: 1, y: 2, z: 3, timestamp: 0), location: nil), .systemClockSynchronised)]
        hold.lastPageAt = lastPageAt
        return hold
    }

    @Test func aReadoutWhosePagesComeIsWaitedFor() {
        #expect(Self.hold(lastPageAt: 10 * Self.wait - 1000).isBeingRead(now: 10 * Self.wait, wait: Self.wait))
        #expect(!Self.hold(lastPageAt: 10 * Self.wait - 1000).isBeingRead(now: 11.5 * Self.wait, wait: Self.wait),
                "no page for more than a wait")
        #expect(!Self.hold(lastPageAt: nil).isBeingRead(now: 10, wait: Self.wait), "no page yet")
    }

    /// Past 30 waits from the first held point (30 min at the default wait) pages no longer
    /// keep it: the points held in memory are bounded for a log read slower than it fills.
    @Test func notPastThirtyWaits() {
        let now = (BackfillHold.longestReadInWaits + 0.5) * Self.wait
        #expect(!Self.hold(lastPageAt: now - 1000).isBeingRead(now: now, wait: Self.wait))
    }
}
