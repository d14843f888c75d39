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
