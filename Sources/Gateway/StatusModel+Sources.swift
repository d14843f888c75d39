import Buffer
import GNSS
import MetaWear
import StatusModel

// Where the gateway's data enters the status model: the buffer's and the receiver's own
// types in the model's words, in one place.

extension BacklogStatus {
    /// The buffer's upload backlog.
    public init(_ stats: BacklogStats) {
        self.init(documents: stats.count, bytes: stats.bytes, oldestUnsentAgeSeconds: stats.oldestUnsentAge,
                  dead: stats.dead, inFlight: stats.inFlight)
    }
}

extension GNSSFix.Mode {
    /// The status model's word for the mode (`no_fix`, `2d`, `3d`).
    var statusName: String {
        switch self {
        case .noFix: GNSSStatus.Mode.noFix
        case .twoD: GNSSStatus.Mode.twoD
        case .threeD: GNSSStatus.Mode.threeD
        }
    }
}

extension BoardStatus {
    /// Takes a battery reading.
    mutating func setBattery(_ battery: BatteryState) {
        batteryPercent = Int(battery.percent)
        batteryMillivolts = Int(battery.millivolts)
    }
}
