import MetaWear
import MetaWearBoardModel
import Testing

/// Logger setup against the board model, and the flash budget.
@Suite struct LoggerSetupTests {
    /// Runs a setup against a board, answering every write with the board's replies.
    private func runSetup(_ setup: inout LoggerSetup, on board: inout SimulatedBoard) -> LoggerSetup.Outcome? {
        var (writes, outcome) = setup.start()
        while outcome == nil, !writes.isEmpty {
            let replies = writes.flatMap { board.write($0.bytes).notifications }
            writes = []
            for reply in replies {
                let step = setup.receive(reply)
                writes += step.writes
                if let done = step.outcome { outcome = done }
            }
            if replies.isEmpty, outcome == nil { return nil }  // the caller's timeout
        }
        return outcome
    }

    @Test func allocatesOneTriggerAtATimeAndReusesExistingLoggers() {
        var board = SimulatedBoard(profile: .metaMotionS)
        var setup = LoggerSetup(sensors: [.gyro, .accelerometer], chip: .bmi270)
        let outcome = runSetup(&setup, on: &board)
        #expect(outcome == .ready([.gyro: LoggerIDs(xy: 0, z: 1), .accelerometer: LoggerIDs(xy: 2, z: 3)])
                || outcome == .ready([.accelerometer: LoggerIDs(xy: 0, z: 1), .gyro: LoggerIDs(xy: 2, z: 3)]))
        #expect(board.commandLog.count == 4 && board.commandLog.allSatisfy { $0[0...1] == [0x0B, 0x02] })
        #expect(board.commandLog.contains(hex("0B 02 13 04 FF 60")) && board.commandLog.contains(hex("0B 02 03 04 FF 24")))
        // Existing loggers (found by LoggerDiscovery) are not allocated again.
        var again = LoggerSetup(sensors: [.gyro], chip: .bmi270, existing: [.gyro: LoggerIDs(xy: 5, z: 6)])
        #expect(again.start().outcome == .ready([.gyro: LoggerIDs(xy: 5, z: 6)]))
    }

    /// P3: the second reply is lost; the setup removes the id it did get instead of leaking it.
    @Test func aLostReplyUndoesTheHalfAllocation() {
        var board = SimulatedBoard(profile: .metaMotionR)
        var setup = LoggerSetup(sensors: [.gyro], chip: .bmi160)
        let first = setup.start()
        #expect(setup.receive(board.write(first.writes[0].bytes).notifications[0]).writes.map(\.bytes) == [hex("0B 02 13 05 FF 24")])
        board.faults.unansweredTriggers = 1
        #expect(board.write(hex("0B 02 13 05 FF 24")).notifications.isEmpty)
        guard case .failed(let reason, let cleanup) = setup.timedOut() else { Issue.record("no failure"); return }
        #expect(reason == "the board did not answer the gyro logger trigger (0B 02): its trigger slots may be full")
        #expect(cleanup.map(\.bytes) == [hex("0B 03 00")])
    }

    @Test func budgetRefusesWhatTheFlashCannotHold() {
        let rl = LogBudget(capacityEntries: 1_048_576, rates: [.gyro: 800])
        #expect(rl.entriesPerSecond == 1600)
        #expect(rl.refusal(sessionSeconds: 600) == nil)
        #expect(rl.refusal(sessionSeconds: 1800, model: "MetaMotion RL")
                == "gyro 800 Hz writes 1600 log entries/s; a MetaMotion RL's flash holds 1048576 entries, full after 10 min 55 s, "
                + "shorter than the 30 min 0 s session asked for; shorten the session to 10 min 55 s or less, or lower gyro_rate to 200 Hz")
        #expect(rl.refusal(sessionSeconds: 1e7)?.hasSuffix("or lower the rates") == true, "no gyro rate fits 115 days")
        let mms = LogBudget(capacityEntries: 66_781_184, rates: [.gyro: 100, .accelerometer: 100])
        #expect(mms.refusal(sessionSeconds: 8 * 3600) == nil)
        #expect(mms.secondsToFull.map { Int($0) } == 166_952, "46 h at 400 entries/s")
        #expect(LogBudget(capacityEntries: nil, rates: [.gyro: 3200]).refusal(sessionSeconds: 1e9) == nil, "unknown capacity: not refused")
    }
}
