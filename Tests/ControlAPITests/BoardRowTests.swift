import ControlAPI
import StatusModel
import Testing
@testable import mwctl

/// `mwctl status`'s board lines: one a board, the model once, columns aligned.
struct BoardRowTests {
    static let description = "MetaMotion S (BMI270), firmware 1.7.3, gyro rev 0, accelerometer rev 1"

    static func board(_ address: String, state: String, model: String?, battery: Int?, lastSampleAt: Double?) -> BoardStatus {
        BoardStatus(address: address, state: state, isStreaming: state.hasPrefix("streaming"), model: model, batteryPercent: battery,
                     batteryMillivolts: nil, gyroRateHz: 100, accelerometerRateHz: 50, gyroSamplesReceived: 12_345,
                     gyroSamplesInSession: 0, lastSampleAt: lastSampleAt)
    }

    @Test func aStreamingBoardNamesItsModelOnceWithRatesBatterySamplesAndAge() {
        let rows = BoardRow.table([Self.board("C4:BE:84:00:00:01", state: "streaming (\(Self.description))", model: Self.description,
                                              battery: 87, lastSampleAt: 999.7)], at: 1000)
        #expect(rows == ["C4:BE:84:00:00:01  MetaMotion S (BMI270), firmware 1.7.3  streaming  gyro 100 Hz, accel 50 Hz  battery 87%  12345 samples  last sample 0.3 s ago"])
        #expect(rows[0].components(separatedBy: "MetaMotion S").count == 2, "model named once: \(rows[0])")
    }

    @Test func boardsLineUpInColumnsAndUnknownsSaySo() {
        let rows = BoardRow.table([
            Self.board("C4:BE:84:00:00:01", state: "streaming (\(Self.description))", model: Self.description, battery: 87, lastSampleAt: 940),
            Self.board("C4:BE:84:00:00:02", state: "reconnecting (attempt 2, last failure: timeout)", model: nil, battery: nil, lastSampleAt: nil),
        ], at: 1000)
        #expect(rows.count == 2)
        #expect(rows[1].contains("  -  ") && rows[1].contains("reconnecting (attempt 2, last failure: timeout)"))
        #expect(rows[1].contains("battery ?") && rows[1].hasSuffix("no sample yet"))
        #expect(rows[0].hasSuffix("last sample 1 min ago"))
        // Columns start at the same place on both lines.
        #expect(rows[0].range(of: "gyro 100 Hz")?.lowerBound.utf16Offset(in: rows[0]) == rows[1].range(of: "gyro 100 Hz")?.lowerBound.utf16Offset(in: rows[1]))
    }
}
