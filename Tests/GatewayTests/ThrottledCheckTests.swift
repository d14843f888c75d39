import Testing
@testable import Gateway

/// The pipeline re-reads the clock's discipline and the upload backlog at most once per
/// interval, however often it ticks or is asked for its status, and at once after a change.
@Suite("Throttled checks")
struct ThrottledCheckTests {
    @Test func dueFirstThenOncePerIntervalThenAtOnceAfterExpiry() {
        var check = ThrottledCheck()
        var answers: [Bool] = []
        for now: Int64 in [5, 5, 104, 105, 150] { answers.append(check.isDue(now: now, interval: 100)) }
        #expect(answers == [true, false, false, true, false])
        check.expire()
        answers = [151, 152].map { check.isDue(now: $0, interval: 100) }
        #expect(answers == [true, false])
        // A longer interval from a reload applies to the next call.
        answers = [300, 1151].map { check.isDue(now: $0, interval: 1000) }
        #expect(answers == [false, true])
    }
}
