import MetaWear
import MetaWearBoardModel
import Testing

/// Starting a board's flash log when replies come late: a slow host is waited for, a silent
/// board is given up on, and a late reply is never taken for the next slot's.
@Suite struct FlashLogStartTests {
    /// The start's first trigger slot read, its reply held back by the caller, then two reply
    /// timeouts before the reply arrives: the start goes on with the reply it was waiting for.
    @Test func aReplyLaterThanOneTimeoutIsStillTaken() {
        var board = SimulatedBoard(profile: .metaMotionR)
        var start = FlashLogStart(sensors: [.gyro], chip: .bmi160, triggerSlots: 8)
        var (writes, outcome) = start.start()
        #expect(writes.map(\.bytes) == [hex("0B 82 00")])
        let late = writes.flatMap { board.write($0.bytes).notifications }
        for _ in 1..<FlashLogStart.timeoutsPerRequest {
            #expect(start.timedOut() == nil, "waits once more")
            #expect(start.isAwaitingReply)
        }
        (writes, outcome) = start.receive(late[0])
        #expect(outcome == nil && writes.map(\.bytes) == [hex("0B 82 01")], "the reply was slot 0's; slot 1 is read next")
        // The rest answers at once; the start ends logging with loggers of its own.
        while outcome == nil, !writes.isEmpty {
            let replies = writes.flatMap { board.write($0.bytes).notifications }
            writes = []
            for reply in replies {
                let step = start.receive(reply)
                writes += step.writes
                outcome = outcome ?? step.outcome
            }
        }
        for write in writes { _ = board.write(write.bytes) }  // the start command that came with the outcome
        guard case .logging(let loggers)? = outcome else { Issue.record("not logging: \(String(describing: outcome))"); return }
        #expect(loggers[.gyro] != nil)
        #expect(board.flashLog.isLogging)
    }

    /// A board that never answers: the start gives up after the allowed timeouts and names the read.
    @Test func aBoardThatNeverAnswersIsGivenUpOnNamingTheRead() {
        var start = FlashLogStart(sensors: [.gyro], chip: .bmi160, triggerSlots: 8)
        _ = start.start()
        var outcomes: [FlashLogStart.Outcome?] = []
        for _ in 0..<FlashLogStart.timeoutsPerRequest { outcomes.append(start.timedOut()) }
        #expect(outcomes.dropLast().allSatisfy { $0 == nil })
        #expect(outcomes.last == .failed(reason: "the board did not answer the trigger slot read 0B 82 0 in 3 reply timeouts", cleanup: []))
        #expect(!start.isAwaitingReply)
    }

    /// The allowance is per request: a slow reply to one read does not use up the next one's.
    @Test func eachRequestHasItsOwnAllowance() {
        var board = SimulatedBoard(profile: .metaMotionR)
        var start = FlashLogStart(sensors: [.gyro], chip: .bmi160, triggerSlots: 8)
        var writes = start.start().writes
        for _ in 0..<3 {
            let replies = writes.flatMap { board.write($0.bytes).notifications }
            for _ in 1..<FlashLogStart.timeoutsPerRequest { #expect(start.timedOut() == nil) }
            writes = start.receive(replies[0]).writes
        }
        #expect(writes.map(\.bytes) == [hex("0B 82 03")])
        #expect(start.timedOut() == nil, "slot 3's read has its own allowance")
    }
}
