import Basics
import ControlAPI
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import StatusModel

/// `mwctl status`'s line for one board: address, model, state, rates, battery, samples and the
/// age of the last sample, in columns aligned across the boards. The model is named once: the
/// daemon's state of a streaming board carries the full board description, shown here in the
/// model column only.
enum BoardRow {
    static func table(_ boards: [BoardStatus], at now: Double) -> [String] {
        let rows = boards.map { columns($0, at: now) }
        let widths = (0..<(rows.first?.count ?? 0)).map { column in rows.map { $0[column].count }.max() ?? 0 }
        return rows.map { row in
            zip(row, widths).enumerated().map { index, cell in
                index == row.count - 1 ? cell.0 : cell.0.padded(cell.1)
            }.joined(separator: "  ").trimmingBlanks
        }
    }

    static func columns(_ b: BoardStatus, at now: Double) -> [String] {
        let accel = b.accelerometerRateHz.map { ", accel " + FixedDecimal.string($0, places: 0) + " Hz" } ?? ""
        let battery = b.batteryPercent.map { "battery \($0)%" } ?? "battery ?"
        let age = b.lastSampleAt.map { "last sample " + sampleAge(max(0, now - $0)) + " ago" } ?? "no sample yet"
        return [b.address, model(b.model), state(b.state), "gyro " + FixedDecimal.string(b.gyroRateHz, places: 0) + " Hz" + accel, battery,
                "\(b.gyroSamplesReceived) samples", age]
    }

    /// Model, chip and firmware (`MetaMotion S (BMI270), firmware 1.7.3`): the sensor
    /// revisions after them stay in `mwctl boards` and `--json`.
    static func model(_ description: String?) -> String {
        guard let description else { return "-" }
        return description.firstRange(of: ", gyro rev").map { String(description[..<$0.lowerBound]) } ?? description
    }

    /// The state without the board description a streaming board's state repeats.
    static func state(_ state: String) -> String {
        state.hasPrefix(BoardStatus.streamingStatePrefix) ? "streaming" : state
    }

    private static func sampleAge(_ seconds: Double) -> String {
        seconds < 10 ? FixedDecimal.string(seconds, places: 1) + " s" : Format.duration(seconds)
    }
}
