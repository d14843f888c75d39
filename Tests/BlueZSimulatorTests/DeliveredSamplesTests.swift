@testable import BlueZSimulator
import MetaWearBoardModel
import Testing

/// mwsim's record of what reached a subscriber, which the soak interpolates within each run.
struct DeliveredSamplesTests {
    /// One gyro notification of `count` samples starting at 16-bit index `first`.
    private func gyro(_ first: UInt64, count: Int = 1) -> [UInt8] {
        var bytes: [UInt8] = [0x13, 0x05]
        for k in 0..<count {
            let index = first + UInt64(k)
            bytes += [UInt8(index & 0xFF), UInt8((index >> 8) & 0xFF), 0, 0, 0, 0]
        }
        return bytes
    }

    @Test func consecutiveSamplesDeliveredSteadilyFormOneRun() {
        var log = DeliveredSampleLog()
        for i in UInt64(100)..<UInt64(200) {
            log.record(gyro(i), at: 1_000_000 + (i - 100) * 10_000) { _ in i }
        }
        #expect(log.runs[.gyro] == [DeliveredRun(first: 100, last: 199, firstMicroseconds: 1_000_000, lastMicroseconds: 1_990_000)])
    }

    /// A board whose sensors a handshake stopped and started again continues its counter
    /// without a gap; the pause must still split the run, or interpolating over it puts the
    /// later samples seconds too early (the soak's "unexplained" loss at a session's end).
    @Test func aPauseInDeliveryStartsANewRunEvenWithoutAnIndexGap() {
        var log = DeliveredSampleLog()
        log.record(gyro(10, count: 2), at: 5_000_000) { _ in 11 }
        log.record(gyro(12), at: 5_010_000) { _ in 12 }
        log.record(gyro(13), at: 9_000_000) { _ in 13 }  // 4 s later, next index
        log.record(gyro(14), at: 9_010_000) { _ in 14 }
        #expect(log.runs[.gyro] == [
            DeliveredRun(first: 10, last: 12, firstMicroseconds: 5_000_000, lastMicroseconds: 5_010_000),
            DeliveredRun(first: 13, last: 14, firstMicroseconds: 9_000_000, lastMicroseconds: 9_010_000),
        ])
    }
}

/// The board model's record of every sample it took, streamed or not: what the soak with
/// backfill requires upstream (the delivered runs miss what a stall or a link drop withheld).
struct MeasuredSamplesTests {
    private func gyroOn(_ board: inout SimulatedBoard) {
        for bytes: [UInt8] in [[0x13, 0x03, 0x28, 0x00], [0x13, 0x05, 0x01], [0x13, 0x02, 0x01, 0x00], [0x13, 0x01, 0x01]] {
            _ = board.write(bytes)
        }
    }

    @Test func samplesWithheldByAStallAreMeasuredInOneRun() {
        var board = SimulatedBoard(profile: .metaMotionR, seed: 2)
        gyroOn(&board)
        let start = board.nanoseconds
        var streamed = board.advance(to: start + 500_000_000).count
        board.faults.streamStalled = true
        streamed += board.advance(to: start + 1_500_000_000).count
        board.faults.streamStalled = false
        streamed += board.advance(to: start + 2_000_000_000).count
        #expect(streamed == 100, "the stall withheld a second of notifications")
        let runs = board.measured.runs[.gyro] ?? []
        #expect(runs.map { [$0.first, $0.last, $0.firstNanoseconds, $0.lastNanoseconds] }
            == [[0, 199, start + 10_000_000, start + 2_000_000_000]])
    }

    /// Sensors stopped and started again continue the counter; the pause splits the run so
    /// that times interpolated within a run stay true.
    @Test func sensorsStoppedAndStartedAgainStartANewRun() {
        var board = SimulatedBoard(profile: .metaMotionS, seed: 2)
        gyroOn(&board)
        _ = board.advance(to: 1_000_000_000)
        _ = board.write([0x13, 0x01, 0x00])
        _ = board.advance(to: 3_000_000_000)
        gyroOn(&board)
        _ = board.advance(to: 3_500_000_000)
        let runs = board.measured.runs[.gyro] ?? []
        #expect(runs.map { [$0.first, $0.last] } == [[0, 99], [100, 149]])
        #expect(runs.last?.firstNanoseconds == 3_010_000_000)
    }
}
